"""Document lifecycle beyond what pygls keeps: drop a closed document's parsed index."""

from __future__ import annotations

from lsprotocol import types

from torchls.lsp.server import TorchLanguageServer


def register(server: TorchLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        if ls.session is not None:
            ls.session.forget(params.text_document.uri)
