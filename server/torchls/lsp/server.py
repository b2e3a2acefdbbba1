"""The server factory: one :class:`TorchLanguageServer`, each feature module registering its handlers."""

from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from torchls import __version__
from torchls.core.text import Encoding
from torchls.session import Session


class TorchLanguageServer(LanguageServer):
    """A pygls server that carries the torchls :class:`Session`."""

    def __init__(self) -> None:
        super().__init__("torchls", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.session: Session | None = None
        self.pending_messages: list[str] = []  # problems found in `initialize`, shown once `initialized`
        self.background_tasks: set[asyncio.Task] = set()  # strong references, so tasks are not collected
        self.diagnostic_tasks: dict[str, asyncio.Task] = {}  # the pending check of each document

    @property
    def encoding(self) -> Encoding:
        """The position encoding negotiated with the client (UTF-16 unless the client offered another)."""
        negotiated = str(self.workspace.position_encoding or "utf-16")
        return negotiated if negotiated in ("utf-8", "utf-16", "utf-32") else "utf-16"  # type: ignore[return-value]

    def show(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """A message in the editor's notification area (and in its log)."""
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))
        self.window_log_message(types.LogMessageParams(type=kind, message=message))


def create_server() -> TorchLanguageServer:
    from torchls.core.parsing import serialize_ast_parsing
    from torchls.lsp import code_actions, documents, hover, lifecycle

    serialize_ast_parsing()  # the event loop and the jedi thread both parse Python

    server = TorchLanguageServer()
    for feature in (lifecycle, documents, hover, code_actions):
        feature.register(server)
    return server
