"""``textDocument/signatureHelp``: the installed torch's signatures, the active parameter in Chinese."""

from __future__ import annotations

from lsprotocol import types

from torchls.core.text import column_to_units
from torchls.lsp.server import TorchLanguageServer


def _markdown(text: str | None) -> types.MarkupContent | None:
    return types.MarkupContent(kind=types.MarkupKind.Markdown, value=text) if text else None


def register(server: TorchLanguageServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_SIGNATURE_HELP,
        types.SignatureHelpOptions(trigger_characters=["(", ","], retrigger_characters=[",", ")", "="]),
    )
    async def on_signature_help(
        ls: TorchLanguageServer, params: types.SignatureHelpParams
    ) -> types.SignatureHelp | None:
        if ls.session is None:
            return None
        from torchls.completion import signature_help

        cursor = ls.cursor(params.text_document, params.position)
        if cursor is None:
            return None  # past the end of a line or of the document: nothing is there
        document, position = cursor.document, cursor.position
        result = await signature_help(
            ls.session, document.uri, document.path, document.source, document.version, position
        )
        if result is None:
            return None
        signatures = []
        for signature in result.signatures:
            # Parameter labels are offsets into the label, in the client's position encoding.
            parameters = [
                types.ParameterInformation(
                    label=(
                        column_to_units(signature.label, p.label[0], ls.encoding),
                        column_to_units(signature.label, p.label[1], ls.encoding),
                    ),
                    documentation=_markdown(p.documentation),
                )
                for p in signature.parameters
            ]
            signatures.append(
                types.SignatureInformation(
                    label=signature.label,
                    documentation=_markdown(signature.documentation),
                    parameters=parameters,
                    active_parameter=signature.active_parameter,
                )
            )
        active = result.signatures[result.active_signature].active_parameter
        return types.SignatureHelp(
            signatures=signatures, active_signature=result.active_signature, active_parameter=active
        )
