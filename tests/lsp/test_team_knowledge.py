"""Team knowledge folders are reloaded when their files change, without a restart; a broken file there is
reported with its path and line, and every other entry keeps working."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest_lsp
from pytest_lsp import LanguageClient

from .helpers import hover, open_document, server_config, utf16_position, vscode_initialize

ENTRY = """\
name: torch.nn.CrossEntropyLoss
kind: class
summary: {summary}
examples:
  - title: 团队示例
    code: |
      print("team")
pitfalls:
  - 团队踩过的坑：标签里有 -1 时要设置 ignore_index。
see_also: [torch.nn.NLLLoss]
"""

NEW_ENTRY = """\
name: torch.nn.PixelUnshuffle
kind: class
summary: 团队补充：把空间维度折进通道维，我们的超分模型用它下采样。
examples:
  - title: 团队示例
    code: |
      print("unshuffle")
pitfalls:
  - 输入的高和宽必须能被 `downscale_factor` 整除。
see_also: [torch.nn.PixelShuffle]
"""

SOURCE = """\
import torch
import torch.nn as nn
说明 = "损失 🎯"; criterion = nn.CrossEntropyLoss()
说明 = "张量 🎲"; x = torch.randn(3)
说明 = "重排 🧩"; down = nn.PixelUnshuffle(2)
"""


async def _eventually(check, timeout: float = 20.0):
    """Poll ``check`` (an async function returning a truthy value when done) until it succeeds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the server did not pick up the change in time")
        await asyncio.sleep(0.2)


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-cache-"))))
async def client(lsp_client: LanguageClient, tmp_path):
    team = tmp_path / "team-knowledge" / "torch" / "nn"
    team.mkdir(parents=True)
    (team / "CrossEntropyLoss.yaml").write_text(ENTRY.format(summary="团队版：第一稿。"), encoding="utf-8")
    await lsp_client.initialize_session(vscode_initialize(tmp_path, {"knowledgePaths": ["team-knowledge"]}))
    lsp_client.root = tmp_path
    lsp_client.team = team
    yield
    await lsp_client.shutdown_session()


async def _card(client: LanguageClient, uri: str, line: str, symbol: str) -> str:
    result = await hover(client, uri, utf16_position(SOURCE, line, symbol))
    return result.contents.value if result is not None else ""


async def test_edits_to_team_knowledge_apply_without_restart(client: LanguageClient):
    uri = (client.root / "train.py").as_uri()
    await open_document(client, uri, SOURCE)
    loss = "criterion = nn.CrossEntropyLoss"
    assert "团队版：第一稿。" in await _card(client, uri, loss, "CrossEntropyLoss")

    entry = client.team / "CrossEntropyLoss.yaml"
    entry.write_text(ENTRY.format(summary="团队版：第二稿，改过了。"), encoding="utf-8")
    await _eventually(lambda: _has(client, uri, loss, "CrossEntropyLoss", "第二稿"))

    # A broken file: reported with its path and line; the other team entry and the shipped ones keep working.
    broken = client.team / "MSELoss.yaml"
    broken.write_text("name: torch.nn.MSELoss\nkind: class\nsummary: [没有闭合\n", encoding="utf-8")
    await _eventually(lambda: _message_contains(client, f"{broken}:3: YAML 语法错误"))
    assert "第二稿" in await _card(client, uri, loss, "CrossEntropyLoss")
    assert "torch.randn" in await _card(client, uri, "x = torch.randn", "randn")

    # A new file adds an entry; removing the team's override brings the shipped card back.
    (client.team / "PixelUnshuffle.yaml").write_text(NEW_ENTRY, encoding="utf-8")
    await _eventually(lambda: _has(client, uri, "nn.PixelUnshuffle", "PixelUnshuffle", "团队补充"))
    entry.unlink()
    await _eventually(lambda: _has(client, uri, loss, "CrossEntropyLoss", "交叉熵"))
    assert "团队版" not in await _card(client, uri, loss, "CrossEntropyLoss")


async def _has(client: LanguageClient, uri: str, line: str, symbol: str, text: str) -> bool:
    return text in await _card(client, uri, line, symbol)


async def _message_contains(client: LanguageClient, text: str) -> bool:
    return any(text in m.message for m in client.messages)
