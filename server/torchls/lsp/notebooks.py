"""``notebookDocument/*``: a notebook's code cells are checked as one program, and each cell gets its findings.

pygls keeps the notebook and its cells' text in the workspace (its own handlers run before these). On open and save
the notebook is checked at once, on a change after the usual debounce; the check runs in the checking process like
a file's, on the program of :mod:`torchls.lsp.notebook_cells`. Findings are published per cell URI, with related
locations in whichever cell they are and the quick fix when all its edits fall in the finding's cell. Only cells
whose findings or text changed are published again; a cell that had findings and has none now (fixed, or deleted
from the notebook) is cleared.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from lsprotocol import types

from torchls.core.findings import Edit, Fix
from torchls.core.notebook import CODE, CellFinding
from torchls.core.text import SourceText
from torchls.lsp.diagnostics import to_diagnostic, to_range
from torchls.lsp.notebook_cells import NotebookState, notebook_state
from torchls.lsp.server import TorchLanguageServer

log = logging.getLogger(__name__)


def _debounce(ls: TorchLanguageServer) -> float:
    return ls.session.settings.diagnostics.debounce_ms / 1000 if ls.session else 0.0


def schedule(ls: TorchLanguageServer, notebook_uri: str, delay: float) -> None:
    """Check the notebook after ``delay`` seconds, replacing a check of it still waiting or running."""
    key = f"notebook:{notebook_uri}"
    pending = ls.diagnostic_tasks.pop(key, None)
    if pending is not None:
        pending.cancel()
    task = asyncio.get_running_loop().create_task(_check_and_publish(ls, notebook_uri, delay))
    ls.diagnostic_tasks[key] = task
    task.add_done_callback(
        lambda done: ls.diagnostic_tasks.pop(key, None) if ls.diagnostic_tasks.get(key) is done else None
    )


async def _check_and_publish(ls: TorchLanguageServer, notebook_uri: str, delay: float) -> None:
    if delay > 0:
        await asyncio.sleep(delay)
    notebook = ls.workspace.get_notebook_document(notebook_uri=notebook_uri)
    if ls.session is None or notebook is None:
        return  # closed while the check waited
    state = notebook_state(ls.workspace, notebook)
    text = state.program.text
    try:
        result = await asyncio.wrap_future(ls.session.check_in_background(text))
    except Exception:  # a checker bug must never take the server down; the notebook just gets no findings
        log.exception("checking %s failed", notebook_uri)
        return
    current = ls.workspace.get_notebook_document(notebook_uri=notebook_uri)
    if current is None or current.version != state.version:
        return  # an edit arrived meanwhile; its own check will publish
    # Hover and completion read it too, for the same text: a cell with a syntax error makes the typed text differ
    # from this repaired one, and then they fall back to their own reading until it parses again.
    ls.session.use_checked_analysis(state.uri, state.version, text, result.receivers)
    by_cell: dict[str, list[types.Diagnostic]] = {
        uri: [] for index, uri in enumerate(state.cell_uris) if state.program.cells[index].kind == CODE
    }
    sources = [SourceText(cell.source) for cell in state.program.cells]
    for finding in result.findings:
        located = state.program.locate(finding)
        if located is not None:
            by_cell[state.cell_uris[located.where.cell]].append(_cell_diagnostic(ls, state, sources, located))
    _publish(ls, notebook_uri, by_cell)


def _publish(ls: TorchLanguageServer, notebook_uri: str, by_cell: dict[str, list[types.Diagnostic]]) -> None:
    """Publish the cells whose findings or text changed since the last check (a keystroke in one cell of a
    50-cell notebook sends one message, not fifty), with each cell's document version; clear cells that are gone."""
    before = ls.notebook_findings.get(notebook_uri, {})
    now: dict[str, tuple] = {}
    for uri, diagnostics in by_cell.items():
        document = ls.opened(uri)
        version = document.version if document is not None else None
        now[uri] = (version, _fingerprint(diagnostics))
        if before.get(uri) != now[uri] and (diagnostics or uri in before):
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
            )
    for uri in before.keys() - now.keys():
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    ls.notebook_findings[notebook_uri] = now


def _fingerprint(diagnostics: list[types.Diagnostic]) -> tuple:
    return tuple(
        (d.code, d.message, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
        for d in diagnostics
    )


def _cell_diagnostic(
    ls: TorchLanguageServer, state: NotebookState, sources: list[SourceText], located: CellFinding
) -> types.Diagnostic:
    """A finding of the program as a diagnostic of its cell."""
    cell = located.where.cell
    fix = None
    if located.finding.fix is not None and located.edits and all(e.where.cell == cell for e in located.edits):
        fix = Fix(located.finding.fix.title, tuple(Edit(e.where.span, e.new_text) for e in located.edits))
    finding = replace(located.finding, span=located.where.span, fix=fix, related=())
    diagnostic = to_diagnostic(ls, state.cell_uris[cell], sources[cell], finding)
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(
                uri=state.cell_uris[r.where.cell], range=to_range(sources[r.where.cell], r.where.span, ls.encoding)
            ),
            message=r.message,
        )
        for r in located.related
    ]
    diagnostic.related_information = related or None
    return diagnostic


def _clear(ls: TorchLanguageServer, notebook_uri: str, cell_uris: list[str]) -> None:
    pending = ls.diagnostic_tasks.pop(f"notebook:{notebook_uri}", None)
    if pending is not None:
        pending.cancel()
    for uri in {*cell_uris, *ls.notebook_findings.pop(notebook_uri, {})}:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def recheck_all(ls: TorchLanguageServer) -> None:
    """After a settings change: check every open notebook again."""
    for uri in list(ls.workspace.notebook_documents):
        schedule(ls, uri, 0)


def register(server: TorchLanguageServer) -> None:
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchLanguageServer, params: types.DidOpenNotebookDocumentParams) -> None:
        schedule(ls, params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchLanguageServer, params: types.DidChangeNotebookDocumentParams) -> None:
        schedule(ls, params.notebook_document.uri, _debounce(ls))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def did_save(ls: TorchLanguageServer, params: types.DidSaveNotebookDocumentParams) -> None:
        schedule(ls, params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchLanguageServer, params: types.DidCloseNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        if ls.session is not None:
            ls.session.forget(uri)
        _clear(ls, uri, [cell.uri for cell in params.cell_text_documents])
