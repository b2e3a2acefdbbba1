"""Document lifecycle: check on open, change (debounced) and save; on close drop the parsed index and clear."""

from __future__ import annotations

from lsprotocol import types

from torchls.lsp import diagnostics
from torchls.lsp.server import TorchLanguageServer


def _debounce(ls: TorchLanguageServer) -> float:
    return ls.session.settings.diagnostics.debounce_ms / 1000 if ls.session else 0.0


def register(server: TorchLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.active_uri = params.text_document.uri
        diagnostics.schedule(ls, params.text_document.uri, 0)
        if ls.session is not None and "torch" in params.text_document.text:
            # jedi parses it in the background now: its first answer in this file comes sooner (a hover does not
            # wait for this parse; see hover._jedi_hit). Once indexed, the docs it will need follow.
            document = ls.opened(params.text_document.uri)
            if document is not None:
                ls.session.resolver.submit(
                    ls.session.resolver.preparse, document.source, document.path, background=True
                )

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.active_uri = params.text_document.uri
        diagnostics.schedule(ls, params.text_document.uri, _debounce(ls), edited=True)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TorchLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        diagnostics.schedule(ls, params.text_document.uri, 0)
        if ls.session is not None:
            # Other files may import the saved one: jedi must read it again.
            ls.session.resolver.submit(ls.session.resolver.forget_inference)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        if ls.session is not None:
            ls.session.forget(params.text_document.uri)
        diagnostics.clear(ls, params.text_document.uri)
