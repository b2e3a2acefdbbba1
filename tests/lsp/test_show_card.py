"""Cards sized for a hover, end to end: the real server over stdio, real jedi, the installed torch, the shipped
knowledge base.

- The hover shows the compact card by default (at most 20 lines, every pitfall), the full card with
  ``hover.card: "full"``.
- Its last line is a ``command:torchls.showCard`` link for a client that says it runs it from Markdown (the torchls
  VS Code extension), and names the code action for any other client.
- The code action "查看完整卡片" and the ``torchls.showCard`` command: the full card comes back as Markdown, is
  written to a file under the cache folder, and the client is asked to open that file (``window/showDocument``).

Every symbol sits after Chinese text and an emoji on its line, so positions are converted in both directions.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from torchls.kb.base import KnowledgeBase
from torchls.kb.render import MAX_HOVER_LINES, short_pitfall

from .helpers import (
    hover,
    open_document,
    server_config,
    utf16_position,
    vscode_capabilities,
    vscode_initialize,
    wait_until_warm,
)

CACHE = Path("/tmp/torchls-test-cache")
SOURCE = """\
import torch
import torch.nn as nn

说明 = "损失函数 🎯"; criterion = nn.CrossEntropyLoss(reduction="mean")
说明 = "保存 💾"; torch.save({}, "checkpoint.pt")
说明 = "没有条目 🕳️"; shuffle = nn.ChannelShuffle(2)
说明 = "不是 torch 🐍"; total = sum([1, 2])
"""
CARD_LINKS = {"commandLinks": ["torchls.showCard"]}  # what the torchls VS Code extension announces


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase.load(use_cache=False)


@pytest_lsp.fixture(config=server_config(CACHE), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    """Like VS Code with the torchls extension: it runs ``torchls.showCard`` links and opens shown documents."""
    root = tmp_path_factory.mktemp("workspace")
    params = vscode_initialize(root)
    params.capabilities.experimental = CARD_LINKS
    await lsp_client.initialize_session(params)
    # A Chinese file name, percent-encoded in the URI as VS Code sends it.
    lsp_client.uri = (root / "卡片.py").as_uri()
    assert "%E5%8D%A1" in lsp_client.uri
    await open_document(lsp_client, lsp_client.uri, SOURCE)
    await wait_until_warm(lsp_client)  # the card's signature is the installed torch's, read by jedi
    yield
    await lsp_client.shutdown_session()


async def _hover(client: LanguageClient, line_contains: str, symbol: str) -> str:
    result = await hover(client, client.uri, utf16_position(SOURCE, line_contains, symbol))
    assert result is not None, f"no hover for {symbol}"
    return result.contents.value


async def _card_actions(client: LanguageClient, line_contains: str, symbol: str, only=None) -> list:
    position = utf16_position(SOURCE, line_contains, symbol)
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(client.uri),
            range=types.Range(position, position),
            context=types.CodeActionContext(diagnostics=[], only=only),
        )
    )
    return [action for action in result or [] if action.kind == "torchls.showCard"]


async def _show_card(client: LanguageClient, arguments: list) -> dict:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchls.showCard", arguments=arguments)
    )


async def test_hover_shows_the_compact_card_by_default(client: LanguageClient, kb):
    card = await _hover(client, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss")
    entry = kb.get("torch.nn.CrossEntropyLoss")
    lines = card.splitlines()
    assert len(lines) <= MAX_HOVER_LINES, card
    assert lines[1].startswith("torch.nn.CrossEntropyLoss(weight: Tensor")  # the installed torch's signature
    assert entry.summary in card
    for pitfall in entry.pitfalls:
        assert short_pitfall(pitfall.text) in card
    assert "**示例：" in card
    assert "**参数**" not in card and "**形状**" not in card  # left to the full card


async def test_the_compact_card_links_to_the_full_card_for_a_client_that_runs_the_link(client: LanguageClient, kb):
    card = await _hover(client, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss")
    link = card.splitlines()[-1].split("[完整卡片](", 1)[1].split(")", 1)[0]
    command, query = link.split("?", 1)
    assert command == "command:torchls.showCard"
    # What VS Code does with the link: run the command with the JSON arguments of its query.
    result = await _show_card(client, json.loads(urllib.parse.unquote(query)))
    assert result["name"] == "torch.nn.CrossEntropyLoss"
    assert "label_smoothing" in result["markdown"]


async def test_hover_shows_the_full_card_with_the_setting(client: LanguageClient, kb):
    entry = kb.get("torch.nn.CrossEntropyLoss")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"torchls": {"hover": {"card": "full"}}})
    )
    try:
        card = await _hover(client, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss")
        assert len(card.splitlines()) > 2 * MAX_HOVER_LINES
        for pitfall in entry.pitfalls:
            assert pitfall.text in card
        for example in entry.examples:
            assert example.code.rstrip() in card
        assert "**参数**" in card and "**形状**" in card
        assert "[完整卡片]" not in card  # it is the full card
    finally:
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"torchls": {"hover": {"card": "compact"}}})
        )
    card = await _hover(client, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss")
    assert len(card.splitlines()) <= MAX_HOVER_LINES


async def test_the_action_opens_the_full_card_as_a_markdown_document(client: LanguageClient, kb):
    [action] = await _card_actions(client, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss")
    assert action.title == "查看完整卡片：torch.nn.CrossEntropyLoss"
    assert action.command.command == "torchls.showCard"
    written = CACHE / "cards" / "torch.nn.CrossEntropyLoss.md"
    written.unlink(missing_ok=True)
    shown_before = len(client.shown_documents)

    result = await _show_card(client, action.command.arguments)

    entry = kb.get("torch.nn.CrossEntropyLoss")
    markdown = result["markdown"]
    assert markdown.startswith("# torch.nn.CrossEntropyLoss\n")
    for pitfall in entry.pitfalls:
        assert pitfall.text in markdown
    for example in entry.examples:
        assert example.code.rstrip() in markdown
    assert "torch.nn.CrossEntropyLoss(weight: Tensor" in markdown  # the installed torch's signature
    # The client was asked to open the file, which holds the same Markdown.
    assert result["shown"] is True
    [shown] = client.shown_documents[shown_before:]
    assert shown.uri == result["uri"] and shown.take_focus
    path = Path(urllib.request.url2pathname(urllib.parse.urlparse(shown.uri).path))
    assert path == written and path.suffix == ".md"
    assert path.read_text(encoding="utf-8") == markdown


async def test_the_full_card_hides_private_parameters(client: LanguageClient):
    [action] = await _card_actions(client, 'torch.save({}, "checkpoint.pt")', "save")
    result = await _show_card(client, action.command.arguments)
    assert "torch.save(obj: object, f: FileLike" in result["markdown"]
    assert "_disable_byteorder_record" not in result["markdown"]
    card = await _hover(client, 'torch.save({}, "checkpoint.pt")', "save")
    assert "_disable_byteorder_record" not in card and "_use_new_zipfile_serialization" not in card


async def test_the_action_is_offered_only_on_a_symbol_with_an_entry(client: LanguageClient):
    assert await _card_actions(client, "shuffle = nn.ChannelShuffle(2)", "ChannelShuffle") == []
    assert await _card_actions(client, "total = sum([1, 2])", "sum") == []
    assert await _card_actions(client, "损失函数 🎯", "损失") == []
    # Asked for another kind only (as VS Code's "run example" command does), it is left out.
    only = await _card_actions(client, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss", ["torchls.runExample"])
    assert only == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [([], "需要一个参数"), ([{"name": 5}], "需要一个参数"), (["torch.no_such_api"], "没有 `torch.no_such_api` 的条目")],
)
async def test_the_command_says_what_is_wrong_with_its_argument(client: LanguageClient, arguments, message):
    result = await _show_card(client, arguments)
    assert message in result["error"]


async def test_the_command_takes_a_plain_name_or_an_alias(client: LanguageClient):
    result = await _show_card(client, ["torch.nn.modules.loss.CrossEntropyLoss"])  # the name jedi reports
    assert result["name"] == "torch.nn.CrossEntropyLoss"


# ------------------------------------------------------------------------------ a client without the link


@pytest_lsp.fixture(config=server_config(CACHE), scope="module")
async def plain_client(lsp_client: LanguageClient, tmp_path_factory):
    """A client that announces neither command links nor showDocument (as Neovim 0.7 does)."""
    root = tmp_path_factory.mktemp("plain")
    capabilities = vscode_capabilities()
    capabilities.window.show_document = None  # type: ignore[union-attr]
    await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities, root_uri=root.as_uri()))
    lsp_client.uri = (root / "cards.py").as_uri()
    await open_document(lsp_client, lsp_client.uri, SOURCE)
    yield
    await lsp_client.shutdown_session()


async def test_without_command_links_the_card_names_the_code_action(plain_client: LanguageClient):
    card = await _hover(plain_client, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss")
    assert "command:" not in card
    assert "代码操作“查看完整卡片”" in card.splitlines()[-1]


async def test_without_show_document_the_command_returns_the_card_and_says_where_it_is(plain_client: LanguageClient):
    [action] = await _card_actions(plain_client, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss")
    result = await _show_card(plain_client, action.command.arguments)
    assert result["shown"] is False and not plain_client.shown_documents
    assert result["markdown"].startswith("# torch.nn.CrossEntropyLoss\n")
    path = CACHE / "cards" / "torch.nn.CrossEntropyLoss.md"
    assert any(str(path) in message.message for message in plain_client.messages)
