"""The server factory: one :class:`TorchLanguageServer`, each feature module registering its handlers."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from torchls import __version__
from torchls.core.text import Encoding, Position, SourceText
from torchls.session import Session


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a request points: the open document, its text, and the position in code points."""

    document: Any  # pygls's TextDocument
    source: SourceText
    position: Position


class TorchLanguageServer(LanguageServer):
    """A pygls server that carries the torchls :class:`Session`."""

    def __init__(self) -> None:
        super().__init__("torchls", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.session: Session | None = None
        self.pending_messages: list[str] = []  # problems found in `initialize`, shown once `initialized`
        self.background_tasks: set[asyncio.Task] = set()  # strong references, so tasks are not collected
        self.diagnostic_tasks: dict[str, asyncio.Task] = {}  # the pending check of each document
        self.converted_lists: dict[int, tuple[list, list[dict]]] = {}  # long completion lists, as JSON
        self.example_task: asyncio.Task | None = None  # the knowledge-base example running now, if any
        self.example_stop: asyncio.Event | None = None  # set to stop it
        self.probe_task: asyncio.Task | None = None  # finding out which devices the example interpreter has

    @property
    def encoding(self) -> Encoding:
        """The position encoding negotiated with the client (UTF-16 unless the client offered another)."""
        negotiated = str(self.workspace.position_encoding or "utf-16")
        return negotiated if negotiated in ("utf-8", "utf-16", "utf-32") else "utf-16"  # type: ignore[return-value]

    def cursor(self, text_document: types.TextDocumentIdentifier, position: types.Position) -> Cursor | None:
        """The document and code-point position of a request; None past the end of a line or of the document
        (nothing is there)."""
        document = self.workspace.get_text_document(text_document.uri)
        source = SourceText(document.source)
        if not source.has_position(position.line, position.character, self.encoding):
            return None
        return Cursor(document, source, source.position_from_units(position.line, position.character, self.encoding))

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """A message in the editor's notification area (and in its log)."""
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))
        self.window_log_message(types.LogMessageParams(type=kind, message=message))


def create_server() -> TorchLanguageServer:
    from torchls.core.parsing import serialize_ast_parsing
    from torchls.lsp import code_actions, completion, documents, hover, lifecycle, run_example, signature_help

    serialize_ast_parsing()  # the event loop and the jedi thread both parse Python

    server = TorchLanguageServer()
    for feature in (lifecycle, documents, hover, code_actions, completion, signature_help, run_example):
        feature.register(server)
    return server
