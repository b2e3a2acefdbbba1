"""``receiver.`` completion: the members of torch modules and classes, of a file's own models, and what only
jedi can tell, each with the knowledge base's Chinese summary where it has one."""

from __future__ import annotations

import asyncio
import contextlib
import re

from torchls.core.text import Position
from torchls.hover import is_torch_name
from torchls.session import Session

from .items import CompletionResult, Item, fuzzy

# Member kinds when jedi has not said yet: capitalised names are classes; these are modules.
_SUBMODULES = frozenset(
    "nn functional optim lr_scheduler utils data cuda amp autograd linalg fft special distributed backends jit onnx "
    "init distributions testing hub random export compiler mps sparse func profiler quantization ao".split()
)
_CONSTANTS = re.compile(r"^(float|int|uint|bfloat|complex|bool|long|half|double|short|cfloat|cdouble)\d*$|^[A-Z_0-9]+$")


def _kind_of(name: str, jedi_kind: str | None, instance: bool) -> str:
    if jedi_kind:
        return {
            "function": "method" if instance else "function",
            "statement": "variable",
            "instance": "variable",
            "param": "variable",
            "keyword": "variable",
        }.get(jedi_kind, jedi_kind)
    if name in _SUBMODULES:
        return "module"
    if _CONSTANTS.match(name):
        return "constant"
    if name[:1].isupper():
        return "class"
    return "method" if instance else "function"


def _item(session: Session, owner: str, name: str, jedi_kind: str | None, instance: bool) -> Item:
    qualname = f"{owner}.{name}"
    entry = session.kb.lookup(qualname)
    kind = _kind_of(name, jedi_kind, instance)
    if entry is not None and not jedi_kind:
        kind = {
            "function": "function",
            "class": "class",
            "method": "method",
            "property": "property",
            "attribute": "constant",
            "module": "module",
        }.get(entry.kind, kind)
    # Items torchls explains sort first; private names last.
    rank = "0" if entry is not None else ("2" if name.startswith("_") else "1")
    return Item(
        label=name,
        kind=kind,
        qualname=entry.name if entry is not None else qualname,
        summary=entry.summary if entry is not None else None,
        sort_text=f"{rank}{name.lower()}",
    )


# Where an instance's members come from before jedi has listed that class: its torch base class.
_BASES = (
    ("torch.optim.lr_scheduler.", "torch.optim.lr_scheduler.LRScheduler"),
    ("torch.optim.", "torch.optim.Optimizer"),
    ("torch.nn.", "torch.nn.Module"),
)
_MEMBERS_WAIT_SECONDS = 0.25  # a warm jedi lists most classes in well under this; longer ones answer next keystroke


def _base_of(owner: str) -> str | None:
    for prefix, base in _BASES:
        if owner.startswith(prefix) and owner != base:
            return base
    return None


def _provisional_members(session: Session, owner: str, instance: bool) -> tuple[str, ...]:
    """Member names known without jedi: the knowledge base's for the owner, and for an instance its base's."""
    owners = [owner]
    base = _base_of(owner) if instance else None
    names: set[str] = set()
    if base is not None:
        owners.append(base)
        names.update(session.resolver.cached_members(base, True) or ())
    for name in owners:
        prefix = name + "."
        names.update(n[len(prefix) :].split(".", 1)[0] for n in session.kb.entries if n.startswith(prefix))
    return tuple(sorted(names))


async def members_list(session: Session, owner: str, instance: bool, enriched_only: bool) -> tuple[list[Item], bool]:
    """Items for the members of a torch module or class; ``(items, complete)``."""
    if instance and owner in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        owner = "torch.Tensor"  # a parameter is a tensor for everything the user calls on it
    resolver = session.resolver
    names = resolver.cached_members(owner, instance)
    if names is None:
        future = asyncio.wrap_future(resolver.submit(resolver.members, owner, instance))
        if resolver.warm.is_set():
            # On timeout it goes on in the background and is cached for the next keystroke.
            with contextlib.suppress(TimeoutError):
                names = await asyncio.wait_for(asyncio.shield(future), _MEMBERS_WAIT_SECONDS)
    complete = names is not None
    if names is None:
        # Before warm-up: what is known without jedi, so the first `torch.` is never empty.
        names = _provisional_members(session, owner, instance)
    # Built lists do not change between keystrokes: keep them until the knowledge base reloads.
    key = (owner, instance, names, enriched_only)
    items = session.completion_lists.get(key)
    if items is None:
        items = []
        for name in names:
            kind = resolver.member_kind(owner, instance, name)
            item = _item(session, owner, name, kind, instance)
            if enriched_only and item.summary is None:
                continue
            items.append(item)
        if complete:
            session.completion_lists[key] = items
    return items, complete


def prefetch_members(session: Session, index) -> None:
    """Ask jedi, in the background, about the torch names a document uses: the members of each class it
    instantiates and each module it reaches into, and the signature of each callable it calls, so that
    ``optimizer.``, ``torch.jit.`` and the signature help of ``torch.linspace(`` answer from the cache."""
    resolver = session.resolver
    calls, classes, modules = index.torch_uses()  # usually computed already, on the indexing thread
    called = {session.kb.public_name(qualname) for qualname in calls}
    wanted = {(qualname, True) for qualname in classes} | {(qualname, False) for qualname in modules}
    for qualname, instance in sorted(wanted):
        if resolver.cached_members(qualname, instance) is None:
            resolver.submit(resolver.members, qualname, instance, background=True)
    for name in sorted(called):
        if resolver.cached_doc(name) is None:
            resolver.submit(resolver.describe, name, background=True)


async def user_class_items(
    session: Session, index, class_name: str, enriched_only: bool
) -> tuple[list[Item], bool] | None:
    """``self.`` or ``model.`` on a class of this file derived from a torch class: its own attributes and
    methods, then the torch base's members with their summaries. None when only jedi can tell (a foreign base)."""
    found = index.user_class_members(class_name)
    if found is None:
        return None
    own, torch_base = found
    inherited, complete = await members_list(session, session.kb.public_name(torch_base), True, enriched_only)
    items = (
        []
        if enriched_only
        else [
            Item(label=name, kind=kind, sort_text=f"{'2' if name.startswith('_') else '0'}{name.lower()}")
            for name, kind in own.items()
            if not name.startswith("__")
        ]
    )
    return items + [item for item in inherited if item.label not in own], complete


def member_owner(session: Session, receiver: str, index, position: Position) -> tuple[str, bool] | None:
    """The torch module or class (or the builtin container) whose members ``receiver.`` lists, and whether they
    are an instance's."""
    qualname = index.qualify_dotted(receiver)
    if qualname is not None:
        if not is_torch_name(qualname):
            return None
        last = qualname.rsplit(".", 1)[-1]
        if last[:1].isupper():
            return session.kb.public_name(qualname), False  # members of the class itself: torch.Tensor.
        return qualname, False
    value = index.value_at(receiver, position)
    if value is None:
        container = index.container_at(receiver, position)  # ``sizes = {}`` ... ``sizes.``
        return (container, True) if container is not None else None
    if value.user_class is not None:
        return None  # a user model: its own attributes matter, and only jedi knows them
    owner = value.qualname
    if owner == "torch.nn.Parameter":
        owner = "torch.Tensor"
    return owner, True


def _cacheable_owner(session: Session, full_name: str, instance: bool) -> tuple[str, bool] | None:
    """A class or module whose members cannot change while the user types (torch's, the builtins'), by public
    name; None for the user's own code, which only jedi can list as it is now."""
    if is_torch_name(full_name):
        return session.kb.public_name(full_name), instance
    if full_name.startswith("builtins.") and full_name.count(".") == 1:
        return full_name, instance
    return None


async def _union(
    session: Session, owners: list[tuple[str, bool] | None], enriched_only: bool
) -> tuple[list[Item], bool]:
    """The members of each possible type of a receiver, once each (the first type's item wins a name)."""
    merged: dict[str, Item] = {}
    complete = True
    for owner in owners:
        assert owner is not None
        items, done = await members_list(session, owner[0], owner[1], enriched_only)
        complete = complete and done
        for item in items:
            merged.setdefault(item.label, item)
    if len(owners) == 1:
        return items, complete  # the cached list itself: the LSP layer converts it only once
    return list(merged.values()), complete


async def jedi_members(
    session: Session,
    text: str,
    path: str | None,
    position: Position,
    partial: str,
    enriched_only: bool,
    line_text: str,
) -> CompletionResult | None:
    """Members only jedi can list (a user's model, ``f(x).``): torch's among them still get their summaries."""
    resolver = session.resolver
    if not resolver.warm.is_set():
        return CompletionResult([], is_incomplete=True)  # never pay jedi's cold cost on a keystroke
    dot = position.column - len(partial) - 1
    if dot > 0 and (line_text[dot - 1].isalnum() or line_text[dot - 1] == "_"):
        # Ask jedi only what the receiver is; the members of torch's and the builtins' classes are cached.
        types_ = await asyncio.wrap_future(resolver.submit(resolver.receiver_types, text, path, position.line, dot))
        if not types_:
            return None  # jedi cannot tell either
        owners = list(dict.fromkeys(_cacheable_owner(session, name, instance) for name, instance in types_))
        owners.sort(key=lambda owner: owner is None or not is_torch_name(owner[0]))  # torch's summaries win
        if all(owners):
            items, complete_list = await _union(session, owners, enriched_only)  # ``Tensor | dict``: both lists
            shown = [item for item in items if fuzzy(partial, item.label)] if partial else items
            return CompletionResult(shown, is_incomplete=not complete_list or bool(partial))
    future = asyncio.wrap_future(resolver.submit(resolver.complete_at, text, path, position.line, position.column))
    completions = await future
    if not completions:
        return None
    items = []
    for name, kind, full_name in completions:
        if not fuzzy(partial, name):
            continue
        public = session.kb.public_name(full_name) if is_torch_name(full_name) else None
        entry = session.kb.lookup(public) if public else None
        if entry is None and enriched_only:
            continue  # the other server in the editor lists jedi's own items already
        rank = "0" if entry is not None else ("2" if name.startswith("_") else "1")
        items.append(
            Item(
                label=name,
                kind=_kind_of(name, kind, True),
                qualname=entry.name if entry is not None else public,
                summary=entry.summary if entry is not None else None,
                sort_text=f"{rank}{name.lower()}",
            )
        )
    return CompletionResult(items, is_incomplete=bool(partial))
