"""Diagnostics end to end: published with the document version, moved by edits above them (with Chinese text and
an emoji before the finding), quick fixes and the noqa action applied as an editor applies them, cleared on
close, and switched by settings."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import apply_text_edits, open_document, server_config, utf16_position, vscode_initialize, wait_for

SOURCE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

criterion = nn.CrossEntropyLoss()
logits = torch.randn(8, 5, requires_grad=True)
labels = torch.randint(0, 5, (8,))
说明 = "先 softmax 再交叉熵 😵"; loss = criterion(F.softmax(logits, dim=1), labels)
"""


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-cache-"))), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    await lsp_client.initialize_session(vscode_initialize(root))
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


def _change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def _diagnostics_for(client: LanguageClient, uri: str, version: int) -> list[types.Diagnostic]:
    await wait_for(lambda: client.diagnostic_versions.get(uri) == version, message=f"no diagnostics for v{version}")
    return list(client.diagnostics[uri])


async def test_diagnostic_has_code_range_link_related_and_version(client: LanguageClient):
    uri = (client.root / "train.py").as_uri()
    await open_document(client, uri, SOURCE, version=1)
    [diagnostic] = await _diagnostics_for(client, uri, 1)
    assert diagnostic.code == "TL301" and diagnostic.source == "torchls"
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert "softmax" in diagnostic.message and "logits" in diagnostic.message
    start = utf16_position(SOURCE, "loss = criterion(", "criterion", offset=0)
    assert diagnostic.range.start == start
    assert diagnostic.range.end.character == start.character + len("criterion")
    page = Path(diagnostic.code_description.href.removeprefix("file://"))
    assert page.read_text(encoding="utf-8").startswith("# TL301 softmax-before-cross-entropy")
    [related] = diagnostic.related_information
    assert related.location.range.start == utf16_position(SOURCE, "criterion(F.softmax", "F.softmax", offset=0)
    assert "softmax" in related.message


async def test_edits_above_move_the_diagnostic(client: LanguageClient):
    uri = (client.root / "moving.py").as_uri()
    await open_document(client, uri, SOURCE, version=1)
    await _diagnostics_for(client, uri, 1)
    edited = "# 数据准备 🧪：先加两行注释\n# 第二行 🎉\n" + SOURCE.replace('说明 = "', '说明 = "插入更多中文 🐍 ')
    _change(client, uri, 2, edited)
    [diagnostic] = await _diagnostics_for(client, uri, 2)
    assert diagnostic.range.start == utf16_position(edited, "loss = criterion(", "criterion", offset=0)
    assert diagnostic.range.start.line == 9


async def test_quick_fix_applies_and_the_result_is_clean(client: LanguageClient):
    uri = (client.root / "fixing.py").as_uri()
    await open_document(client, uri, SOURCE, version=1)
    [diagnostic] = await _diagnostics_for(client, uri, 1)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    fix = next(a for a in actions if a.is_preferred)
    assert fix.kind == types.CodeActionKind.QuickFix and "softmax" in fix.title
    fixed = apply_text_edits(SOURCE, fix.edit.changes[uri])
    assert "loss = criterion(logits, labels)" in fixed and '说明 = "先 softmax 再交叉熵 😵"; ' in fixed
    _change(client, uri, 2, fixed)
    assert await _diagnostics_for(client, uri, 2) == []


async def test_noqa_action_silences_the_line(client: LanguageClient):
    uri = (client.root / "silencing.py").as_uri()
    await open_document(client, uri, SOURCE, version=1)
    [diagnostic] = await _diagnostics_for(client, uri, 1)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    noqa = next(a for a in actions if a.title == "在本行禁用 TL301")
    silenced = apply_text_edits(SOURCE, noqa.edit.changes[uri])
    assert "labels)  # noqa: TL301\n" in silenced
    _change(client, uri, 2, silenced)
    assert await _diagnostics_for(client, uri, 2) == []


async def test_close_clears_and_settings_switch_rules(client: LanguageClient):
    uri = (client.root / "closing.py").as_uri()
    await open_document(client, uri, SOURCE, version=1)
    assert await _diagnostics_for(client, uri, 1)
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    await wait_for(lambda: client.diagnostic_versions.get(uri, 1) is None, message="diagnostics not cleared on close")
    assert not client.diagnostics[uri]

    uri = (client.root / "configured.py").as_uri()
    await open_document(client, uri, SOURCE, version=1)
    assert await _diagnostics_for(client, uri, 1)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"torchls": {"diagnostics": {"ignore": ["TL3"]}}})
    )
    await wait_for(lambda: not client.diagnostics.get(uri), message="ignoring TL3 did not clear the finding")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"torchls": {"diagnostics": {"ignore": [], "severity": {"TL301": "hint"}}}}
        )
    )
    await wait_for(lambda: bool(client.diagnostics.get(uri)), message="findings did not come back")
    assert client.diagnostics[uri][0].severity == types.DiagnosticSeverity.Hint


async def test_broken_code_does_not_break_diagnostics(client: LanguageClient):
    uri = (client.root / "broken.py").as_uri()
    broken = SOURCE + "def half_typed(:\n    x = torch.randn(3\n"
    await open_document(client, uri, broken, version=1)
    diagnostics = await _diagnostics_for(client, uri, 1)
    assert [d.code for d in diagnostics] == ["TL301"]
