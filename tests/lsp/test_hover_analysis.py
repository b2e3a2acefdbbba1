"""Hover reads receivers from the checking process's analysis: the real server, its real worker process.

Once a version's diagnostics are published, the table of classes the same interpreter run proved is attached to
that version's index. Where the editor's fast path alone would answer wrongly (it takes a layer rebound inside an
``if`` to be the later one, a Sequential, and would show ``Sequential.append``), hover follows the analysis: the
layer may still be the Linear, so no Sequential card is shown.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest_lsp
from pytest_lsp import LanguageClient

from .helpers import hover, open_document, server_config, utf16_position, vscode_initialize, wait_for

PROGRAM = """\
import torch
from torch import nn


def make_head(deep):
    head = nn.Linear(8, 2)
    if deep:
        head = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    说明 = "分支 🌿"; head.append(nn.ReLU())
    return head
"""


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-cache-"))), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("analysis")
    await lsp_client.initialize_session(vscode_initialize(root))
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


async def test_hover_follows_the_checked_analysis_not_the_fast_path(client: LanguageClient):
    uri = (client.root / "heads.py").as_uri()
    await open_document(client, uri, PROGRAM, version=1)
    await wait_for(lambda: client.diagnostic_versions.get(uri) == 1, timeout=60, message="no diagnostics for v1")
    answer = await hover(client, uri, utf16_position(PROGRAM, "分支", "append"))
    shown = answer.contents.value if answer is not None else ""
    assert "Sequential.append" not in shown, "head may still be the Linear: no Sequential card"
