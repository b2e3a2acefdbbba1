"""Bad input gets a clear answer and loses nothing: broken team knowledge, bad settings, a missing interpreter,
syntax errors, odd positions. The server keeps answering throughout (and never writes to stdout: pytest-lsp
would fail on a non-JSON-RPC byte)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import hover, open_document, server_config, utf16_position, vscode_initialize

TEAM_ENTRY = """\
name: torch.nn.CrossEntropyLoss
kind: class
summary: 团队版：我们的分类任务统一用这个损失，记得传 logits。
signature: "torch.nn.CrossEntropyLoss(weight=None, reduction='mean')"
examples:
  - title: 团队示例
    code: |
      print("team")
pitfalls:
  - 团队踩过的坑：标签里有 -1 时要设置 ignore_index。
see_also: [torch.nn.NLLLoss]
"""

BROKEN_ENTRY = "name: torch.nn.MSELoss\nkind: class\nsummary: [没有闭合的列表\nexamples: []\n"

SOURCE = """\
import torch
import torch.nn as nn
说明 = "损失 🎯"; criterion = nn.CrossEntropyLoss()
说明 = "张量 🎲"; x = torch.randn(3)
def broken(:
    说明 = "还在 ✅"; y = torch.zeros(2)
z = torch.ones(
"""


async def _wait_for(condition, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("timed out waiting for the server")
        await asyncio.sleep(0.05)


def _messages(client: LanguageClient) -> str:
    return "\n".join(m.message for m in client.messages)


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-cache-"))), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    team = root / "team-knowledge"
    (team / "torch" / "nn").mkdir(parents=True)
    (team / "torch" / "nn" / "CrossEntropyLoss.yaml").write_text(TEAM_ENTRY, encoding="utf-8")
    (team / "torch" / "nn" / "MSELoss.yaml").write_text(BROKEN_ENTRY, encoding="utf-8")
    options = {"knowledgePaths": ["team-knowledge"], "interpreter": "/no/such/python", "colour": "blue"}
    await lsp_client.initialize_session(vscode_initialize(root, options))
    lsp_client.root = root
    await _wait_for(lambda: len(lsp_client.messages) >= 3)
    yield
    await lsp_client.shutdown_session()


async def test_problems_are_reported_in_chinese(client: LanguageClient):
    messages = _messages(client)
    broken = client.root / "team-knowledge" / "torch" / "nn" / "MSELoss.yaml"
    assert f"{broken}:3: YAML 语法错误" in messages
    assert "未知的 torchls 设置项 `colour`" in messages
    assert "找不到可执行的 Python 解释器：/no/such/python" in messages


async def test_team_entry_overrides_and_shipped_entries_survive(client: LanguageClient, tmp_path):
    uri = (client.root / "team.py").as_uri()
    await open_document(client, uri, SOURCE)
    team = await hover(client, uri, utf16_position(SOURCE, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss"))
    assert "团队版" in team.contents.value and "团队踩过的坑" in team.contents.value
    shipped = await hover(client, uri, utf16_position(SOURCE, "x = torch.randn", "randn"))
    assert shipped is not None and "torch.randn" in shipped.contents.value


async def test_syntax_errors_do_not_cost_the_lines_that_parse(client: LanguageClient):
    uri = (client.root / "broken.py").as_uri()
    await open_document(client, uri, SOURCE)
    inside = await hover(client, uri, utf16_position(SOURCE, "y = torch.zeros", "zeros"))
    assert inside is not None and "torch.zeros" in inside.contents.value
    # The broken lines themselves go to jedi, which copes with broken code; whatever it says, no error.
    await hover(client, uri, utf16_position(SOURCE, "z = torch.ones(", "ones"))
    await hover(client, uri, utf16_position(SOURCE, "def broken(:", "broken"))


async def test_odd_positions_give_no_hover_and_no_error(client: LanguageClient):
    uri = (client.root / "odd.py").as_uri()
    await open_document(client, uri, SOURCE)
    assert await hover(client, uri, types.Position(0, 500)) is None
    assert await hover(client, uri, types.Position(500, 0)) is None
    empty = (client.root / "empty.py").as_uri()
    await open_document(client, empty, "")
    assert await hover(client, empty, types.Position(0, 0)) is None
    assert await hover(client, empty, types.Position(3, 7)) is None


async def test_bad_configuration_change_is_reported_and_defaults_apply(client: LanguageClient):
    before = len(client.messages)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"torchls": {"knowledgePaths": "not-a-list"}})
    )
    await _wait_for(lambda: len(client.messages) > before)
    assert "`knowledgePaths` 的值无效" in client.messages[-1].message
    # The default (no team folder) now applies: the shipped card is back.
    uri = (client.root / "after.py").as_uri()
    await open_document(client, uri, SOURCE)
    result = await hover(client, uri, utf16_position(SOURCE, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss"))
    assert "团队版" not in result.contents.value
    assert "torch.nn.CrossEntropyLoss" in result.contents.value


DEEP_SOURCE = (
    "import torch\n"
    '说明 = "很长的一句 🧮"; a = torch.randn(2)\n'
    f"x = {' + '.join(['a'] * 600)}\n"
    "z = torch.randn(3)\n"
    '说明 = "还在分析 ✅"; w = z.view(4)\n'
)


async def test_a_statement_nested_hundreds_deep_costs_only_itself(client: LanguageClient):
    """A 600-term sum parses, but walking it recursively exhausts Python's stack: it is set aside like a broken
    line, and the rest of the document is analysed, hovered and fixed as usual."""
    uri = (client.root / "deep.py").as_uri()
    await open_document(client, uri, DEEP_SOURCE)
    await _wait_for(lambda: any(d.code == "TL103" for d in client.diagnostics.get(uri, [])))
    (finding,) = [d for d in client.diagnostics[uri] if d.code == "TL103"]
    assert finding.range.start.line == 4
    card = await hover(client, uri, utf16_position(DEEP_SOURCE, "w = z.view", "view"))
    assert card is not None and "Tensor.view" in card.contents.value
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(types.TextDocumentIdentifier(uri), finding.range, types.CodeActionContext([finding]))
    )
    titles = [action.title for action in actions or []]
    assert "在本行禁用 TL103" in titles and "查看完整卡片：torch.Tensor.view" in titles
