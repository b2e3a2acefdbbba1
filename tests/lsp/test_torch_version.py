"""Cards warn when the user's torch is older than an API or a parameter the card describes.

The server reads the version from the configured interpreter's ``torch/version.py`` without importing torch. The
test points it at a virtual environment whose torch package says 1.13.1 (only its version file: enough for
torchls, which never imports it), and at the test's own torch 2.13, where no warning may appear.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest_lsp
from pytest_lsp import LanguageClient

from .helpers import hover, open_document, server_config, utf16_position, vscode_initialize, wait_until_warm

SOURCE = """\
import torch.nn as nn
import torch.nn.functional as F
说明 = "注意力 🎯"; out = F.scaled_dot_product_attention(q, k, v)
说明 = "归一化 📏"; norm = nn.LayerNorm(8, bias=False)
说明 = "老朋友 🧱"; layer = nn.Linear(4, 2)
"""


def _venv_with_torch_version(root: Path, version: str) -> Path:
    venv = root / f"venv-torch-{version}"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    relative = Path(sysconfig.get_path("purelib")).relative_to(sysconfig.get_path("data"))
    package = venv / relative / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "version.py").write_text(f"__version__ = '{version}'\ngit_version = 'unknown'\n", encoding="utf-8")
    return venv / "bin" / "python"


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-cache-"))), scope="module")
async def old_torch(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    python = _venv_with_torch_version(root, "1.13.1")
    await lsp_client.initialize_session(vscode_initialize(root, {"interpreter": str(python)}))
    await wait_until_warm(lsp_client)
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


async def test_old_torch_gets_warnings_for_newer_apis_and_parameters(old_torch: LanguageClient):
    client = old_torch
    uri = (client.root / "model.py").as_uri()
    await open_document(client, uri, SOURCE)
    api = await hover(client, uri, utf16_position(SOURCE, "F.scaled_dot_product_attention", "scaled"))
    assert api is not None and "⚠️ 这个 API 需要 torch ≥ 2.0，当前环境为 1.13。" in api.contents.value
    # The compact card names the parameters the installed torch lacks yet: scale came with torch 2.1 (from the
    # version table: the entry does not say), enable_gqa with 2.5 (the entry says so).
    assert "当前环境的 torch 1.13 还没有这些参数：`scale`（≥ 2.1）、`enable_gqa`（≥ 2.5）" in api.contents.value
    keyword = await hover(client, uri, utf16_position(SOURCE, "bias=False", "bias"))
    assert keyword is not None and "⚠️ 此参数需要 torch ≥ 2.1，当前环境为 1.13。" in keyword.contents.value
    linear = await hover(client, uri, utf16_position(SOURCE, "nn.Linear", "Linear"))
    assert linear is not None and "需要 torch ≥" not in linear.contents.value
