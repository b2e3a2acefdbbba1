"""Inside a call: which function it calls, keyword arguments with their Chinese explanations, and the allowed
values of a parameter that takes a fixed set (``reduction=`` -> ``'mean'``...), from the knowledge base."""

from __future__ import annotations

import asyncio

from torchls.core.calls import CallContext
from torchls.core.text import Position
from torchls.docinfo import SymbolDoc
from torchls.hover import is_torch_name
from torchls.kb.schema import Entry
from torchls.session import Session

from .items import CompletionResult, Item, first_sentence, fuzzy


async def callee_of(session: Session, index, call: CallContext, text: str, path: str | None) -> str | None:
    """The public name of the function or class a call calls: statically when the file proves it, else jedi."""
    qualname = index.qualify_dotted(call.callee)
    if qualname is not None:
        return qualname if is_torch_name(qualname) else None
    receiver, _, method = call.callee.rpartition(".")
    if receiver:
        value = index.value_at(receiver, call.callee_end)
        if value is not None and value.user_class is None:
            owner = "torch.Tensor" if value.qualname == "torch.nn.Parameter" else value.qualname
            return f"{owner}.{method}"
    value = index.value_at(call.callee, call.callee_end)
    if value is not None and value.user_class is None:
        return f"{value.qualname}.forward"  # calling a layer: its forward's arguments
    resolver = session.resolver
    if not resolver.warm.is_set():
        return None
    end = call.callee_end
    future = resolver.submit(resolver.resolve_at, text, path, end.line, max(end.column - 1, 0))
    hit = await asyncio.wrap_future(future)
    if hit is None:
        return None
    name = session.kb.public_name(hit.doc.name)
    return f"{name}.forward" if hit.is_instance else name


async def live_doc(session: Session, name: str) -> SymbolDoc | None:
    """The installed torch's signature of ``name``: cached, else asked of jedi (not while it is cold)."""
    resolver = session.resolver
    cached = resolver.cached_doc(name)
    if cached is not None or not resolver.warm.is_set():
        if cached is None:
            resolver.submit(resolver.describe, name, background=True)
        return cached
    return await asyncio.wrap_future(resolver.submit(resolver.describe, name))


async def argument_items(
    session: Session, index, call: CallContext, text: str, path: str | None, position: Position
) -> CompletionResult | None:
    callee = await callee_of(session, index, call, text, path)
    if callee is None:
        return None
    entry = session.kb.lookup(callee)
    if call.keyword is not None and call.typing_name is None:
        return _value_items(entry, call) if entry is not None else None
    if call.in_string:
        return None
    live = await live_doc(session, callee)
    names = list(live.param_names) if live is not None else []
    if entry is not None:
        names += [p.name for p in entry.params if p.name not in names]
    items = []
    for name in names:
        if name in call.used_keywords or name in ("self", "cls", "args", "kwargs"):
            continue
        param = entry.param(name) if entry is not None else None
        description = param.desc if param is not None else (live.param_docs.get(name) if live else None)
        summary = first_sentence(param.desc) if param is not None else None
        items.append(
            Item(
                label=f"{name}=",
                kind="argument",
                qualname=None,
                summary=summary,
                insert_text=f"{name}=",
                sort_text=f"0{names.index(name):03d}",
                documentation=description,
            )
        )
    if not items:
        return None
    # The whole list, filtered by the client as the name is typed: nothing to ask again per keystroke.
    return CompletionResult(items)


def _value_items(entry: Entry, call: CallContext) -> CompletionResult | None:
    param = entry.param(call.keyword or "")
    if param is None or not param.choices:
        return None
    items = []
    for index, choice in enumerate(param.choices):
        literal = choice.value
        bare = literal[1:-1] if literal[:1] in "'\"" and literal[-1:] == literal[:1] else literal
        if call.in_string and bare == literal:
            continue  # inside quotes only strings fit
        if call.in_string and not fuzzy(call.string_prefix, bare):
            continue
        items.append(
            Item(
                label=bare if call.in_string else literal,  # what the user sees is what the quotes will hold
                kind="value",
                summary=choice.desc,
                insert_text=bare if call.in_string else literal,
                sort_text=f"0{index:03d}",
                documentation=f"`{call.keyword}={literal}`：{choice.desc}",
            )
        )
    return CompletionResult(items) if items else None
