"""The `interpreter` setting decides which environment jedi reads: the card's signature is that torch's.

The test points the server at a new virtual environment that has no torch: the Chinese cards still come from
the knowledge base (with its own signature), nothing crashes, and symbols without an entry get no English
docstring, because that environment has no torch to read it from.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import hover, open_document, server_config, utf16_position, vscode_initialize, wait_until_warm

SOURCE = """\
import torch.nn as nn
说明 = "层 🧱"; layer = nn.Linear(4, 2)
说明 = "没有条目 🕳️"; shuffle = nn.ChannelShuffle(2)
"""


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-cache-"))), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    venv = root / "venv-without-torch"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    await lsp_client.initialize_session(vscode_initialize(root, {"interpreter": str(venv / "bin" / "python")}))
    await wait_until_warm(lsp_client)
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


async def test_environment_without_torch_keeps_chinese_cards(client: LanguageClient):
    uri = (client.root / "model.py").as_uri()
    await open_document(client, uri, SOURCE)
    result = await hover(client, uri, utf16_position(SOURCE, "nn.Linear", "Linear"))
    assert result is not None and "全连接层" in result.contents.value
    # The knowledge base's signature, not jedi's annotated one: that environment has no torch.
    assert "torch.nn.Linear(in_features, out_features" in result.contents.value
    assert "in_features: int" not in result.contents.value
    assert await hover(client, uri, utf16_position(SOURCE, "nn.ChannelShuffle", "ChannelShuffle")) is None
    assert not [m for m in client.messages if m.type == types.MessageType.Error]


async def test_the_user_is_told_that_the_environment_has_no_torch(client: LanguageClient):
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    venv_python = str(client.root / "venv-without-torch" / "bin" / "python")
    assert any("找不到 torch" in m and venv_python in m and "torchls.interpreter" in m for m in warnings), warnings
