"""Publishing diagnostics: on open and save at once, on change after a short debounce, cleared on close.

The checker runs in its own process (:mod:`torchls.check_worker`) and the document's index is built on a thread
afterwards, so the event loop keeps answering hovers and completions; a newer edit cancels the pending check of the same
document, and a result for an outdated version is dropped instead of published. Each
diagnostic carries its quick fix in ``data`` (already in the client's position encoding), so
``textDocument/codeAction`` never runs the checker again.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

from lsprotocol import types

from torchls import memory
from torchls.cache_files import cache_dir
from torchls.core.findings import Finding
from torchls.core.text import SourceText, Span
from torchls.lsp.notebook_cells import notebook_of
from torchls.lsp.server import TorchLanguageServer

log = logging.getLogger(__name__)

_SEVERITIES = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchls-index")
INDEX_PAUSE_SECONDS = 0.5  # after an edit: how long the user must pause before the new version is indexed
OPEN_INDEX_DELAY_SECONDS = 0.3  # a document just opened is indexed this long after didOpen (see _index_opened)


def to_range(source: SourceText, span: Span, encoding: str) -> types.Range:
    start = source.units_from_position(span.start, encoding)  # type: ignore[arg-type]
    end = source.units_from_position(span.end, encoding)  # type: ignore[arg-type]
    return types.Range(types.Position(*start), types.Position(*end))


def to_diagnostic(ls: TorchLanguageServer, uri: str, source: SourceText, finding: Finding) -> types.Diagnostic:
    assert ls.session is not None
    encoding = ls.encoding
    data = None
    if finding.fix is not None:
        edits = [
            {"range": _json_range(to_range(source, e.span, encoding)), "newText": e.new_text} for e in finding.fix.edits
        ]
        data = {"fix": {"title": finding.fix.title, "edits": edits}}
    from torchls.ruledocs import rule_doc_uri  # loads every rule: not at start-up, but with the first finding

    href = rule_doc_uri(finding.code, cache_dir())
    return types.Diagnostic(
        range=to_range(source, finding.span, encoding),
        message=finding.message,
        severity=_SEVERITIES[ls.session.severity_name(finding.code, finding.severity)],
        code=finding.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source="torchls",
        related_information=[
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=to_range(source, related.span, encoding)),
                message=related.message,
            )
            for related in finding.related
        ]
        or None,
        data=data,
    )


def _json_range(value: types.Range) -> dict:
    return {
        "start": {"line": value.start.line, "character": value.start.character},
        "end": {"line": value.end.line, "character": value.end.character},
    }


def schedule(ls: TorchLanguageServer, uri: str, delay: float, edited: bool = False) -> None:
    """Check ``uri`` after ``delay`` seconds, replacing any check of it still waiting or running. ``edited``: the
    user is typing, so the version is indexed only once they pause (see _check_and_publish)."""
    pending = ls.diagnostic_tasks.pop(uri, None)
    if pending is not None:
        pending.cancel()
    task = asyncio.get_running_loop().create_task(_check_and_publish(ls, uri, delay, edited))
    ls.diagnostic_tasks[uri] = task
    task.add_done_callback(
        lambda done: ls.diagnostic_tasks.pop(uri, None) if ls.diagnostic_tasks.get(uri) is done else None
    )


async def _check_and_publish(ls: TorchLanguageServer, uri: str, delay: float, edited: bool = False) -> None:
    if delay > 0:
        await asyncio.sleep(delay)
    if ls.session is None:
        return
    document = ls.opened(uri)
    if document is None:
        return  # closed while the check waited
    version, text = document.version, document.source
    indexed = None
    if not edited:  # just opened (or saved): index soon, beside the check in its process, for later requests
        indexed = asyncio.ensure_future(_index_opened(ls, uri, text, version, document.path or ""))
    try:
        result = await asyncio.wrap_future(ls.session.check_in_background(text))
    except Exception:  # a checker bug must never take the server down; the document just gets no findings
        log.exception("checking %s failed", uri)
        return
    current = ls.opened(uri)
    if current is None or current.version != version or current.source != text:
        return  # an edit arrived meanwhile; its own check will publish
    ls.session.use_checked_analysis(uri, version, text, result.receivers)  # hover and completion read it too
    source = SourceText(text)
    diagnostics = [to_diagnostic(ls, uri, source, finding) for finding in result.findings]
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
    )
    # After an edit, index this version for hover and completion once the user pauses: not alongside the check
    # (a thread indexing then holds the GIL just when the findings arrive, +30 ms), and not while the user types:
    # ``ast.parse`` holds the GIL for its whole run (100 ms on a 2,000-line file), and a keystroke's completion
    # would wait for it; completion on the line being typed reuses the last index (Session.index_for_line). The
    # next edit cancels this task, pause included; nor once the user works in another document, whose requests
    # it would stall. A document just opened was indexed beside its check.
    if indexed is not None:
        await indexed
        return
    await asyncio.sleep(INDEX_PAUSE_SECONDS)
    if ls.active_uri == uri:  # the user moved on to another document: index this one when it is asked about
        await asyncio.get_running_loop().run_in_executor(_executor, _index, ls, uri, text, version)


async def _index_opened(ls: TorchLanguageServer, uri: str, text: str, version: int | None, path: str) -> None:
    """Index a document just opened after :data:`OPEN_INDEX_DELAY_SECONDS`: ``ast.parse`` of a long file holds the
    GIL for tens of milliseconds, and the first hovers, which often come at once, are answered meanwhile from a
    partial index of the lines around them (core/first_look.py) in a few milliseconds."""
    await asyncio.sleep(OPEN_INDEX_DELAY_SECONDS)
    current = ls.opened(uri)
    if current is not None and current.version == version:
        await asyncio.get_running_loop().run_in_executor(_executor, _index, ls, uri, text, version, path)


def _index(ls: TorchLanguageServer, uri: str, text: str, version: int | None, opened: str | None = None) -> None:
    """While the user reads or pauses: the version's index, and the torch names completion will prefetch. For a
    document just opened (``opened``: its path, or "" when it has none), jedi then reads what it will need."""
    if ls.session is None:
        return
    try:
        document = ls.session.index(uri, text, version)
        document.index.torch_uses()
        if opened is not None:
            ls.session.prepare_jedi(document, text, opened or None)
    except Exception:  # an indexing bug costs the fast path for this version, never the server
        log.exception("indexing %s failed", uri)
    memory.settle()  # the index lives until the next version: keep it out of collections that stall requests


def clear(ls: TorchLanguageServer, uri: str) -> None:
    pending = ls.diagnostic_tasks.pop(uri, None)
    if pending is not None:
        pending.cancel()
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def recheck_all(ls: TorchLanguageServer) -> None:
    """After a settings change: check every open document again (a notebook's cells as their notebook)."""
    from torchls.lsp import notebooks  # it builds on this module

    for uri in list(ls.workspace.text_documents):
        if notebook_of(ls.workspace, uri) is None:
            schedule(ls, uri, 0)
    notebooks.recheck_all(ls)
