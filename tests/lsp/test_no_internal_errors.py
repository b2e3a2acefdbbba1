"""No request answers with a JSON-RPC internal error (-32603): editors show those as "request failed".

Each request of every feature is sent into a state that used to fail inside a handler: a document the client never
opened (pygls read it from disk and raised), completion-item and diagnostic ``data`` of the wrong shape (it comes
back from the client, which may be another server's or an old version's), commands with made-up arguments. The
answer is the one that means "nothing here", and the server goes on answering the next request.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError
from pytest_lsp import LanguageClient

from torchls.lsp.guard import Guard

from .helpers import hover, open_document, server_config, utf16_position, vscode_initialize, wait_until_warm

_WHOLE_LINE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
SOURCE = 'import torch\n说明 = "中文 🔥"; x = torch.randn(2, 3)\n'
NEVER_OPENED = ("file:///nonexistent/never_opened.py", "untitled:Untitled-9", "inmemory://model/1", "")


@pytest_lsp.fixture(config=server_config(Path("/tmp/torchls-test-cache")), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    await lsp_client.initialize_session(vscode_initialize(root))
    lsp_client.uri = (root / "ok.py").as_uri()
    await open_document(lsp_client, lsp_client.uri, SOURCE)
    await wait_until_warm(lsp_client)
    yield
    await lsp_client.shutdown_session()


def _document(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri)


@pytest.mark.parametrize("uri", NEVER_OPENED)
async def test_requests_on_a_document_never_opened_answer_nothing(client: LanguageClient, uri: str):
    here = types.Position(0, 3)
    assert await client.text_document_hover_async(types.HoverParams(_document(uri), here)) is None
    assert await client.text_document_completion_async(types.CompletionParams(_document(uri), here)) is None
    assert await client.text_document_signature_help_async(types.SignatureHelpParams(_document(uri), here)) is None
    diagnostic = types.Diagnostic(
        types.Range(here, here), "x", source="torchls", code="TL301", data={"fix": {"title": "t", "edits": []}}
    )
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(_document(uri), types.Range(here, here), types.CodeActionContext([diagnostic]))
    )
    assert not actions


@pytest.mark.parametrize("data", [{"name": 5}, {"name": ["torch.cat"]}, {"name": None}, [1, 2], "torch.cat", 7])
async def test_resolving_an_item_with_data_of_the_wrong_shape_returns_it_unchanged(client: LanguageClient, data):
    item = types.CompletionItem(label="cat", data=data)
    resolved = await client.completion_item_resolve_async(item)
    assert resolved.label == "cat" and resolved.documentation is None


@pytest.mark.parametrize(
    "fix",
    [
        {"title": 5, "edits": []},
        {
            "edits": [
                {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "newText": "a"}
            ]
        },
        {"title": "修复", "edits": [{"range": "bad", "newText": "a"}]},
        {"title": "修复", "edits": [{"range": {"start": {"line": "x"}}, "newText": 5}]},
        {"title": "修复", "edits": "none"},
    ],
)
async def test_a_diagnostic_whose_fix_has_the_wrong_shape_gets_no_quick_fix(client: LanguageClient, fix):
    here = types.Position(1, 20)
    diagnostic = types.Diagnostic(types.Range(here, here), "x", source="torchls", code="TL301", data={"fix": fix})
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(_document(client.uri), types.Range(here, here), types.CodeActionContext([diagnostic]))
    )
    fixes = [a.title for a in actions or [] if a.kind == types.CodeActionKind.QuickFix]
    assert fixes == ["在本行禁用 TL301"], fixes  # only the noqa action: no fix built from the broken data


@pytest.mark.parametrize(
    "arguments", [[], [5], [{"name": 5}], [{"name": "torch.cat", "index": "x"}], [None, None, None], ["a" * 10000]]
)
async def test_commands_with_made_up_arguments_answer_without_an_internal_error(client: LanguageClient, arguments):
    for command in ("torchls.runExample", "torchls.cancelExample"):
        try:
            await client.workspace_execute_command_async(types.ExecuteCommandParams(command, arguments))
        except JsonRpcInternalError as error:  # pragma: no cover - the failure this test is for
            pytest.fail(f"{command}{arguments!r}: internal error {error}")


async def test_the_server_still_answers_after_all_of_that(client: LanguageClient):
    result = await hover(client, client.uri, utf16_position(SOURCE, "中文", "randn"))
    assert result is not None and "torch.randn" in result.contents.value  # type: ignore[union-attr]


# --------------------------------------------------------------------------------- the guard itself


async def test_a_failing_handler_answers_its_fallback_and_logs_the_traceback_once(caplog):
    guard = Guard()

    async def broken_hover(ls, params):
        raise ValueError("a bug")

    def broken_resolve(ls, item):
        raise KeyError("name")

    hover_handler = guard.wrap(types.TEXT_DOCUMENT_HOVER, broken_hover)
    resolve_handler = guard.wrap(types.COMPLETION_ITEM_RESOLVE, broken_resolve)
    item = types.CompletionItem(label="cat")
    with caplog.at_level(logging.DEBUG, logger="torchls.lsp.guard"):
        for _ in range(3):
            assert await hover_handler(None, object()) is None
            assert resolve_handler(None, item) is item
    tracebacks = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(tracebacks) == 2 and all(r.exc_info for r in tracebacks)  # once per failure, then at debug level
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == 4


async def test_cancellation_is_not_swallowed_by_the_guard():
    import asyncio

    async def cancelled(ls, params):
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await Guard().wrap(types.TEXT_DOCUMENT_HOVER, cancelled)(None, None)
