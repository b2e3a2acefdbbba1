"""``textDocument/codeAction``: each torchls diagnostic's quick fix (from its ``data``), a ``# noqa`` action, and
"运行示例" on a torch symbol with knowledge-base examples (:mod:`torchls.lsp.run_example`), and "查看完整卡片" on a
torch symbol with an entry (:mod:`torchls.lsp.show_card`)."""

from __future__ import annotations

from lsprotocol import types

from torchls.core.noqa import noqa_comment
from torchls.core.text import column_to_units
from torchls.lsp.server import TorchLanguageServer


def _range(raw: dict) -> types.Range:
    return types.Range(
        types.Position(raw["start"]["line"], raw["start"]["character"]),
        types.Position(raw["end"]["line"], raw["end"]["character"]),
    )


def quick_fix(uri: str, diagnostic: types.Diagnostic) -> types.CodeAction | None:
    data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
    fix = data.get("fix")
    if not isinstance(fix, dict):
        return None
    title = fix.get("title")
    try:
        edits = [types.TextEdit(range=_range(e["range"]), new_text=e["newText"]) for e in fix["edits"]]
    except (KeyError, TypeError):
        edits = []
    if not isinstance(title, str) or not edits or not all(isinstance(e.new_text, str) for e in edits):
        return None  # data from another server or an older version: no fix rather than a wrong one
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        is_preferred=True,
        edit=types.WorkspaceEdit(changes={uri: edits}),
    )


def suppress(ls: TorchLanguageServer, uri: str, diagnostic: types.Diagnostic) -> types.CodeAction | None:
    code = str(diagnostic.code)
    document = ls.opened(uri)
    if document is None:
        return None
    line_number = diagnostic.range.start.line
    lines = document.lines
    if line_number >= len(lines):
        return None
    line = lines[line_number].rstrip("\r\n")
    edit = noqa_comment(line, code)
    if edit is None:
        return None
    start, end, text = edit
    position = (line_number, column_to_units(line, start, ls.encoding))
    end_position = (line_number, column_to_units(line, end, ls.encoding))
    change = types.TextEdit(range=types.Range(types.Position(*position), types.Position(*end_position)), new_text=text)
    return types.CodeAction(
        title=f"在本行禁用 {code}",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        edit=types.WorkspaceEdit(changes={uri: [change]}),
    )


def register(server: TorchLanguageServer) -> None:
    from torchls.lsp.run_example import RUN_KIND
    from torchls.lsp.run_example import actions as run_example_actions
    from torchls.lsp.show_card import SHOW_CARD_KIND
    from torchls.lsp.show_card import actions as show_card_actions

    kinds = [types.CodeActionKind.QuickFix, RUN_KIND, SHOW_CARD_KIND]

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=kinds, resolve_provider=False)
    )
    async def code_action(ls: TorchLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        actions: list[types.CodeAction] = []
        for diagnostic in params.context.diagnostics:
            if diagnostic.source != "torchls" or diagnostic.code is None:
                continue
            for action in (quick_fix(uri, diagnostic), suppress(ls, uri, diagnostic)):
                if action is not None:
                    actions.append(action)
        actions.extend(await run_example_actions(ls, params))
        actions.extend(await show_card_actions(ls, params))
        return actions or None
