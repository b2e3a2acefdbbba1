"""Completion, its lazy documentation, and signature help: the handbook while the user types.

Fastest answers first:

1. ``receiver.`` where the file proves what the receiver is (``torch.``, ``nn.``, ``F.`` through any alias, a
   tensor variable, ``self.fc``, an optimizer, a model class of the file): member names from the resolver's
   member cache (filled by warm-up, kept on disk) or, before that, from the knowledge base. No jedi on the request
   (``members``).
2. Inside a call: keyword arguments with their Chinese explanations and the allowed values of a parameter that
   takes a fixed set (``arguments``); signature help with every overload (``signatures``).
3. Any other receiver: jedi infers what it is (once warm; no request pays its cold cost), and a torch class's
   members come from the cache again; only the rest is listed by jedi itself.

Items carry the Chinese one-line summary; the card itself is filled in by ``completionItem/resolve``.
"""

from __future__ import annotations

from torchls.core.calls import attribute_context, call_context, dotted_partial
from torchls.core.text import Position
from torchls.kb.render import render_card, render_fallback
from torchls.session import Session

from .arguments import argument_items, live_doc
from .items import CompletionResult, Item, narrowed, typed_underscores
from .members import jedi_members, jedi_ready, member_owner, members_list, prefetch_members, user_class_items
from .signatures import SignatureResult, signature_help

__all__ = ["CompletionResult", "Item", "SignatureResult", "complete", "documentation", "signature_help"]


async def complete(
    session: Session, uri: str, path: str | None, text: str, version: int | None, position: Position
) -> CompletionResult | None:
    """Completion at ``position`` (code points); None when torchls has nothing to offer there."""
    document = session.index_for_line(uri, text, version, position.line)
    lines = document.lines
    if position.line >= len(lines):
        return None
    if uri not in session.prefetched and jedi_ready(session.resolver):
        session.prefetched.add(uri)
        # Walking a long file's tree takes a good part of a second: on the jedi thread, after any waiting request.
        session.resolver.submit(prefetch_members, session, document.index, background=True)
    enriched_only = session.settings.completion.mode == "enriched"
    line_prefix = lines[position.line][: position.column]
    attribute = attribute_context(line_prefix)
    after_dot = attribute is not None or dotted_partial(line_prefix) is not None
    # Arguments only where an argument name or value starts, not after a dot (``isinstance(x, nn.|``).
    call = None if after_dot else call_context(lines, position, document.index.statement_line_before(position.line))
    if call is not None:
        arguments = await argument_items(session, document.index, call, text, path, position)
        if arguments is not None:
            return arguments
    if attribute is None:
        partial = dotted_partial(line_prefix)  # ``f(x).``, ``batch[0].``: only jedi can tell
        if partial is None:
            return None
        return await jedi_members(session, text, path, position, partial, enriched_only, lines[position.line])
    receiver, partial = attribute
    underscores = typed_underscores(partial)
    value = document.index.value_at(receiver, position) if document.index.qualify_dotted(receiver) is None else None
    if value is not None and value.user_class is not None:
        found = await user_class_items(session, document.index, value.user_class, enriched_only, underscores)
        if found is not None:
            items, complete_list = found
            return CompletionResult(narrowed(items, partial), is_incomplete=not complete_list or bool(partial))
    owner = member_owner(session, receiver, document.index, position)
    if owner is not None:
        items, complete_list = await members_list(session, owner[0], owner[1], enriched_only, underscores)
        # Unfiltered, the list is the cached one itself: the LSP layer keeps its converted form by identity.
        shown = narrowed(items, partial) if partial else items
        return CompletionResult(shown, is_incomplete=not complete_list or bool(partial))
    if document.index.qualify_dotted(receiver) is not None:
        return None  # a module that is not torch: not ours
    return await jedi_members(session, text, path, position, partial, enriched_only, lines[position.line])


async def documentation(session: Session, qualname: str) -> str | None:
    """The Markdown a completion item shows when selected: the Chinese card, or torch's English docstring."""
    entry = session.kb.lookup(qualname)
    live = await live_doc(session, entry.name if entry is not None else qualname)
    if entry is not None:
        return render_card(entry, live, torch_version=session.resolver.torch_version())
    if live is not None:
        return render_fallback(qualname, live)
    return None
