"""``textDocument/hover``: convert the position, ask :mod:`torchls.hover`, convert the range back."""

from __future__ import annotations

from lsprotocol import types

from torchls.lsp.server import TorchLanguageServer
from torchls.lsp.show_card import client_runs_card_links


def register(server: TorchLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: TorchLanguageServer, params: types.HoverParams) -> types.Hover | None:
        if ls.session is None:
            return None
        from torchls.hover import hover as hover_at  # with the first hover, not at start-up

        cursor = ls.cursor(params.text_document, params.position)
        if cursor is None:
            return None  # past the end of a line or of the document: nothing is there
        document, position = cursor.document, cursor.position
        result = await hover_at(
            ls.session,
            document.uri,
            document.path,
            document.source,
            document.version,
            position,
            card_links=client_runs_card_links(ls),
        )
        if result is None:
            return None
        hover_range = cursor.to_range(result.span, ls.encoding) if result.span is not None else None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=result.markdown),
            range=hover_range,
        )
