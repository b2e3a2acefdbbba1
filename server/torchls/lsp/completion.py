"""``textDocument/completion`` and ``completionItem/resolve``: convert positions and items, delegate the rest."""

from __future__ import annotations

import asyncio
import json

from lsprotocol import types

from torchls.kb.render import plain_text
from torchls.lsp.server import EncodedResult, TorchLanguageServer

TRIGGER_CHARACTERS = [".", "(", ",", "=", "'", '"']

_KINDS = {
    "function": types.CompletionItemKind.Function,
    "method": types.CompletionItemKind.Method,
    "class": types.CompletionItemKind.Class,
    "module": types.CompletionItemKind.Module,
    "property": types.CompletionItemKind.Property,
    "constant": types.CompletionItemKind.Constant,
    "variable": types.CompletionItemKind.Variable,
    "argument": types.CompletionItemKind.Field,
    "value": types.CompletionItemKind.Value,
}


def _to_lsp(item, lazy_detail: bool) -> types.CompletionItem:
    """``lazy_detail``: the client shows the summary from ``labelDetails`` and can resolve ``detail`` later, so
    the list does not carry it twice (a third of ``torch.``'s 1,100 items in bytes, sent and parsed on each
    keystroke); ``completionItem/resolve`` fills it in."""
    data = {"name": item.qualname} if item.qualname and not item.documentation else None
    summary = plain_text(item.summary) if item.summary else None  # both fields are plain text, not Markdown
    return types.CompletionItem(
        label=item.label,
        kind=_KINDS.get(item.kind, types.CompletionItemKind.Text),
        label_details=types.CompletionItemLabelDetails(description=summary) if summary else None,
        detail=None if lazy_detail and data is not None else summary,
        insert_text=item.insert_text,
        sort_text=item.sort_text,
        documentation=types.MarkupContent(kind=types.MarkupKind.Markdown, value=item.documentation)
        if item.documentation
        else None,
        data=data,
    )


def _client_resolves_detail(ls: TorchLanguageServer) -> bool:
    """True when the client shows ``labelDetails`` and may leave ``detail`` to ``completionItem/resolve``."""
    text_document = ls.client_capabilities.text_document
    completion = text_document.completion if text_document is not None else None
    item = completion.completion_item if completion is not None else None
    if item is None or not item.label_details_support or item.resolve_support is None:
        return False
    return "detail" in item.resolve_support.properties


def _as_json(ls: TorchLanguageServer, items: list) -> str:
    """The items as a JSON array; a cached list (``torch.``'s 1,100 members) is converted and encoded only once."""
    cached = ls.converted_lists.get(id(items))
    if cached is not None and cached[0] is items:
        return cached[1]
    lazy_detail = _client_resolves_detail(ls)
    encoded = json.dumps([ls.protocol._converter.unstructure(_to_lsp(item, lazy_detail)) for item in items])
    if len(items) > 100:
        if len(ls.converted_lists) >= 64:  # lists of a knowledge base reloaded since: let them go
            ls.converted_lists.clear()
        ls.converted_lists[id(items)] = (items, encoded)
    return encoded


# The member lists most keystrokes ask for: built and converted once the warm-up has listed them.
_PREPARED = (("torch", False), ("torch.nn", False), ("torch.nn.functional", False), ("torch.Tensor", True))


async def prepare_lists(ls: TorchLanguageServer) -> None:
    """Build and convert the most used member lists now, in the background, rather than on the first keystroke
    that needs each (15-20 ms for ``torch.``'s 1,100 items)."""
    if ls.session is None:
        return
    from torchls.completion.members import members_list

    enriched_only = ls.session.settings.completion.mode == "enriched"
    for owner, instance in _PREPARED:
        items, complete = await members_list(ls.session, owner, instance, enriched_only)
        if complete:
            _as_json(ls, items)
        await asyncio.sleep(0)  # let a waiting request in between


def register(server: TorchLanguageServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=TRIGGER_CHARACTERS, resolve_provider=True),
    )
    async def on_completion(ls: TorchLanguageServer, params: types.CompletionParams) -> EncodedResult | None:
        if ls.session is None:
            return None
        from torchls.completion import complete  # with the first completion, not at start-up

        cursor = ls.cursor(params.text_document, params.position)
        if cursor is None:
            return None  # past the end of a line or of the document: nothing is there
        document, position = cursor.document, cursor.position
        result = await complete(ls.session, document.uri, document.path, document.source, document.version, position)
        if result is None:
            return None
        # Encoded here: pygls would otherwise convert and encode every item of a long list again on each keystroke.
        incomplete = "true" if result.is_incomplete else "false"
        return EncodedResult(f'{{"isIncomplete": {incomplete}, "items": {_as_json(ls, result.items)}}}')

    @server.feature(types.COMPLETION_ITEM_RESOLVE)
    async def on_resolve(ls: TorchLanguageServer, item: types.CompletionItem) -> types.CompletionItem:
        name = item.data.get("name") if isinstance(item.data, dict) else None
        if ls.session is None or not isinstance(name, str) or not name:  # data comes back from the client
            return item
        if item.detail is None:  # left out of the list for a client that resolves it (see _to_lsp)
            entry = ls.session.kb.lookup(name)
            item.detail = plain_text(entry.summary) if entry is not None else None
        if item.documentation is not None:
            return item
        from torchls.completion import documentation

        markdown = await documentation(ls.session, name)
        if markdown:
            item.documentation = types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown)
        return item
