"""Real-editor tests: Neovim headless and VS Code (code-server in headless Chromium) driving torchls.

Their outputs (JSON results, logs, screenshots) are kept under ``test-output/editors/`` (or
``$TORCHLS_TEST_ARTIFACTS``) so a failing run can be looked at afterwards.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SAMPLE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

logits = torch.randn(8, 10)
labels = torch.randint(0, 10, (8,))
说明 = "损失函数 🎯"; criterion = nn.CrossEntropyLoss()
说明 = "概率 🎲"; loss = criterion(F.softmax(logits, dim=1), labels)
print(loss.item())
"""


@pytest.fixture(scope="session")
def artifacts() -> Path:
    folder = Path(os.environ.get("TORCHLS_TEST_ARTIFACTS", ROOT / "test-output")) / "editors"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
