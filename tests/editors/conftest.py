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

# A notebook: imports, a model, a markdown cell, probabilities made in one cell and fed to CrossEntropyLoss in the
# next (the finding's cause is in the cell before), and a softmax fed to cross_entropy inline (its quick fix edits
# the cell).
NOTEBOOK_CELLS = [
    ("code", "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F"),
    (
        "code",
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.head = nn.Linear(16, 4)\n\n    def forward(self, x):\n        return self.head(x)\n\n\n"
        "model = Net()",
    ),
    ("markdown", "## 训练 🚀"),
    ("code", "x = torch.randn(8, 16)\nprobs = F.softmax(model(x), dim=1)  # 报表要的概率"),
    (
        "code",
        "labels = torch.randint(0, 4, (8,))\n"
        '说明 = "概率 🎲"; loss = nn.CrossEntropyLoss()(probs, labels)\n'
        "aux = F.cross_entropy(F.softmax(model(x), dim=1), labels)\n"
        "model.head.weight",
    ),
]


def notebook_json(cells: list[tuple[str, str]]) -> str:
    """An nbformat 4 notebook of ``cells`` (kind, source), as Jupyter writes it."""
    import json

    return json.dumps(
        {
            "cells": [
                {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
                | ({"execution_count": None, "outputs": []} if kind == "code" else {})
                for kind, source in cells
            ],
            "metadata": {"language_info": {"name": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        ensure_ascii=False,
        indent=1,
    )


@pytest.fixture(scope="session")
def artifacts() -> Path:
    folder = Path(os.environ.get("TORCHLS_TEST_ARTIFACTS", ROOT / "test-output")) / "editors"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A real editor's first run packages the extension and starts a browser: more than the suite's default limit,
    but still bounded, so a stuck editor fails the test instead of stalling CI."""
    for item in items:
        if item.path.parent == Path(__file__).parent and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(900))
