"""The server factory: one :class:`TorchLanguageServer`, each feature module registering its handlers."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, LanguageServerProtocol

from torchls import __version__
from torchls.core.text import Encoding, Position, SourceText, Span
from torchls.lsp.guard import Guard
from torchls.lsp.notebook_cells import CellCursor, notebook_of, program_cursor

if TYPE_CHECKING:  # the session and the analysis it holds are imported after `initialize` is answered
    from torchls.session import Session
    from torchls.settings import Settings

F = TypeVar("F", bound=Callable)
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a request points: the open document, its text, and the position in code points."""

    document: Any  # pygls's TextDocument
    source: SourceText
    position: Position

    def to_range(self, span: Span, encoding: str) -> types.Range | None:
        """A span of the document as the client's range."""
        start = self.source.units_from_position(span.start, encoding)  # type: ignore[arg-type]
        end = self.source.units_from_position(span.end, encoding)  # type: ignore[arg-type]
        return types.Range(types.Position(*start), types.Position(*end))


class EncodedResult:
    """A request's result already encoded as JSON text: a long completion list that is sent again, unchanged,
    on many keystrokes (``torch.``'s 1,100 items: 5 ms of conversion and 3 ms of encoding each time, more while
    another thread holds the GIL)."""

    __slots__ = ("json",)

    def __init__(self, json_text: str) -> None:
        self.json = json_text


# What a message that could not be read becomes: a notification for a method nobody handles ("$/" ones are ignored).
_IGNORED = JsonRPCNotification(method="$/torchls/unreadable", jsonrpc="2.0", params=None)


def _first_line(error: BaseException) -> str:
    """cattrs's validation errors carry their causes as sub-exceptions; the innermost says what did not fit."""
    while getattr(error, "exceptions", None):  # an exception group (Python 3.10 has only the backport's)
        error = error.exceptions[0]  # type: ignore[attr-defined]
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


class _Protocol(LanguageServerProtocol):
    """pygls's protocol, sending an :class:`EncodedResult` as it is rather than converting and encoding it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._writes: set[asyncio.Future] = set()  # asynchronous writes under way (TCP), kept until done

    def structure_message(self, data: dict[str, Any]) -> Any:
        """A message whose params do not fit the method's types (a negative position, a missing field): pygls would
        drop a request unanswered and pop up "Error in server" for a notification. A request gets ``-32602`` with
        what did not fit; a notification is logged and ignored; an answer of the client that does not fit fails
        the server's request it answers."""
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if isinstance(data, dict) and "id" in data and "method" not in data:
                # The client's answer to our request does not fit (null for workspace/configuration): fail that
                # request, so whatever awaits it goes on, instead of waiting forever.
                future = self._request_futures.pop(data["id"], None)
                if future is not None and not future.done():
                    future.set_exception(error)
                return _IGNORED
            if not isinstance(data, dict) or not isinstance(data.get("method"), str):
                raise
            cause = error.__cause__ or error
            if "id" in data:
                self._send_response(data["id"], error=JsonRpcInvalidParams.of(_first_line(cause)).to_response_error())
            else:
                log.info("ignoring %s with invalid params: %s", data["method"], _first_line(cause))
            return _IGNORED

    def _send_data(self, data: Any) -> None:
        result = getattr(data, "result", None)
        if not isinstance(result, EncodedResult) or self.writer is None or not self._include_headers:
            super()._send_data(data)
            return
        body = f'{{"id": {json.dumps(data.id)}, "jsonrpc": "2.0", "result": {result.json}}}'.encode()
        header = f"Content-Length: {len(body)}\r\nContent-Type: {self.CONTENT_TYPE}; charset=utf-8\r\n\r\n"
        written = self.writer.write(header.encode("ascii") + body)
        if inspect.isawaitable(written):
            pending = asyncio.ensure_future(written)
            self._writes.add(pending)
            pending.add_done_callback(self._writes.discard)


class TorchLanguageServer(LanguageServer):
    """A pygls server that carries the torchls :class:`Session`."""

    def __init__(self) -> None:
        super().__init__(
            "torchls",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[
                    types.NotebookDocumentFilterWithCells(
                        cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook"
                    )
                ],
                save=True,
            ),
            protocol_cls=_Protocol,
        )
        self._session: Session | None = None
        # What `initialize` said the session is to be made of: settings and workspace root. The session (and the
        # analysis it imports, most of a second of start-up) is made after `initialize` is answered.
        self.planned_session: tuple[Settings, str | None] | None = None
        self.pending_messages: list[str] = []  # problems found in `initialize`, shown once `initialized`
        self.background_tasks: set[asyncio.Task] = set()  # strong references, so tasks are not collected
        self.diagnostic_tasks: dict[str, asyncio.Task] = {}  # the pending check of each document
        # notebook URI -> cell URI -> (version, findings) last published for it (see lsp/notebooks.py)
        self.notebook_findings: dict[str, dict[str, tuple]] = {}
        self.converted_lists: dict[int, tuple[list, str]] = {}  # long completion lists, encoded as JSON
        self.active_uri: str | None = None  # the document the latest edit or request was about
        self.example_task: asyncio.Task | None = None  # the knowledge-base example running now, if any
        self.example_stop: asyncio.Event | None = None  # set to stop it
        self.probe_task: asyncio.Task | None = None  # finding out which devices the example interpreter has
        self.guard = Guard()

    @property
    def session(self) -> Session | None:
        """The torchls session; made on first use after `initialize` (normally by `initialized`)."""
        if self._session is None and self.planned_session is not None:
            from torchls.session import Session

            settings, root = self.planned_session
            self.planned_session = None
            self._session = Session(settings, workspace_root=root)
            self.pending_messages.extend(self._session.startup_messages)
        return self._session

    @session.setter
    def session(self, session: Session | None) -> None:
        self._session = session
        self.planned_session = None

    def client_experimental(self, key: str) -> object:
        """What the client declared under ``capabilities.experimental[key]`` in `initialize`; None if nothing.
        torchls's own clients declare there what they do themselves (show example output, warn about torch, run
        card links), so the server does not do it twice."""
        experimental = self.client_capabilities.experimental
        return experimental.get(key) if isinstance(experimental, dict) else None

    def feature(self, feature_name: str, options: Any | None = None) -> Callable[[F], F]:
        """pygls's decorator, with the handler wrapped so that a failure answers "nothing" (see :mod:`.guard`)."""
        register = super().feature(feature_name, options)
        return lambda handler: register(self.guard.wrap(feature_name, handler))

    def command(self, command_name: str) -> Callable[[F], F]:
        register = super().command(command_name)
        return lambda handler: register(self.guard.wrap(types.WORKSPACE_EXECUTE_COMMAND, handler))

    @property
    def encoding(self) -> Encoding:
        """The position encoding negotiated with the client (UTF-16 unless the client offered another)."""
        negotiated = str(self.workspace.position_encoding or "utf-16")
        return negotiated if negotiated in ("utf-8", "utf-16", "utf-32") else "utf-16"  # type: ignore[return-value]

    def opened(self, uri: str) -> Any | None:
        """The document the client opened at ``uri``, or None. (pygls's ``get_text_document`` reads a document it
        was never sent from disk: it fails for ``untitled:`` and deleted files, and reads stale text for others.)
        pygls keys its documents by the unquoted URI: ``%E8%AE%AD%E7%BB%83.py`` is stored as ``训练.py``."""
        return self.workspace.text_documents.get(urllib.parse.unquote(uri))

    def cursor(
        self, text_document: types.TextDocumentIdentifier, position: types.Position
    ) -> Cursor | CellCursor | None:
        """The document and code-point position of a request; None for a document the client has not opened, and
        past the end of a line or of the document (nothing is there). In a notebook's cell, the notebook's program
        and the position in it (:mod:`torchls.lsp.notebook_cells`)."""
        self.active_uri = text_document.uri
        document = self.opened(text_document.uri)
        if document is None:
            return None
        notebook = notebook_of(self.workspace, text_document.uri)
        if notebook is not None:
            return program_cursor(self.workspace, notebook, document, position, self.encoding)
        source = SourceText(document.source)
        if not source.has_position(position.line, position.character, self.encoding):
            return None
        return Cursor(document, source, source.position_from_units(position.line, position.character, self.encoding))

    async def entry_for_action(self, params: types.CodeActionParams, kind: str) -> Any | None:
        """The knowledge-base entry of the torch symbol a code action of ``kind`` is asked for (at the start of
        the range), or None: no session yet, the client asked for other kinds only, no entry there."""
        session = self.session
        if session is None or (params.context.only and not any(kind.startswith(k) for k in params.context.only)):
            return None
        cursor = self.cursor(params.text_document, params.range.start)
        if cursor is None:
            return None
        from torchls.cards import entry_at

        document = cursor.document
        return await entry_at(session, document.uri, document.path, document.source, document.version, cursor.position)

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """A message in the editor's notification area (and in its log)."""
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))
        self.window_log_message(types.LogMessageParams(type=kind, message=message))


def create_server() -> TorchLanguageServer:
    from torchls.core.parsing import serialize_ast_parsing
    from torchls.lsp import (
        code_actions,
        completion,
        documents,
        hover,
        lifecycle,
        notebooks,
        run_example,
        show_card,
        signature_help,
    )

    serialize_ast_parsing()  # the event loop and the jedi thread both parse Python

    server = TorchLanguageServer()
    features = (
        lifecycle,
        documents,
        notebooks,
        hover,
        code_actions,
        completion,
        signature_help,
        run_example,
        show_card,
    )
    for feature in features:
        feature.register(server)
    return server
