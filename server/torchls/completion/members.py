"""``receiver.`` completion: the members of torch modules and classes, of a file's own models, and what only
jedi can tell, each with the knowledge base's Chinese summary where it has one (an inherited member through the
name its base documents it by: ``Linear.parameters`` is ``Module.parameters``).

A torch class's list is one of two, never a mix that depends on timing:

- *known*: the names the knowledge base documents for the class and for the bases it documents the class's
  members under, while jedi has not listed the class; marked incomplete, so the client asks again;
- *complete*: jedi's listing of the class, with the known names it lacks.

Once jedi has read torch (``Resolver.listed``, seconds after start-up, long before the warm-up ends), a request
for a class jedi has not listed yet waits for that listing (40-90 ms on a warm jedi) rather than answering with the
known names now and a longer list a keystroke later. Before that, no request waits for jedi. Private names come
only once the user types ``_`` (see :func:`~torchls.completion.items.offered`).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import weakref
from concurrent.futures import Future

from torchls.core.text import Position
from torchls.hover import is_torch_name
from torchls.kb import canonical
from torchls.resolve import Resolver
from torchls.session import Session

from .items import CompletionResult, Item, fuzzy, narrowed, offered, typed_underscores

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


_PARAMETER_CLASSES = ("torch.nn.Parameter", "torch.nn.parameter.Parameter")
# A warm jedi lists a class in 40-90 ms; this covers a worker busy with another request, never jedi's cold read.
_LISTING_WAIT_SECONDS = 1.0
# The listing of each class in flight, per resolver: a keystroke while one is queued does not queue another.
_listings: weakref.WeakKeyDictionary[Resolver, dict[tuple[str, bool], Future]] = weakref.WeakKeyDictionary()


def jedi_ready(resolver: Resolver) -> bool:
    """True once jedi has read torch: a request to it costs milliseconds, not the seconds of its cold start."""
    return resolver.listed.is_set() or resolver.warm.is_set()


def _listing(resolver: Resolver, owner: str, instance: bool) -> Future[tuple[str, ...]]:
    """jedi's listing of ``owner``'s members, asked for unless it is queued already (a failed one is asked again)."""
    pending = _listings.setdefault(resolver, {})
    future = pending.get((owner, instance))
    if future is None or future.done():
        future = resolver.submit(resolver.members, owner, instance)
        pending[(owner, instance)] = future
    return future


async def _listed_members(session: Session, owner: str, instance: bool) -> tuple[str, ...] | None:
    """jedi's member names of ``owner``; None while they are still coming."""
    resolver = session.resolver
    names = resolver.cached_members(owner, instance)
    if names is not None:
        return names
    listing = _listing(resolver, owner, instance)
    if jedi_ready(resolver):
        # On timeout it goes on in the background, and this answer tells the client to ask again. (On Python 3.10
        # wait_for raises asyncio's TimeoutError, not the builtin one.)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(listing)), _LISTING_WAIT_SECONDS)
    return resolver.cached_members(owner, instance)  # None where jedi failed: asked again next time


def _documented_owners(owner: str, instance: bool) -> list[str]:
    """``owner`` and, for an instance, the bases the knowledge base documents its members under
    (``torch.nn.Linear``: ``torch.nn.Module`` too), by the rules :meth:`KnowledgeBase.lookup` follows."""
    if not instance:
        return [owner]
    return list(dict.fromkeys(name.rsplit(".", 1)[0] for name in canonical.candidates(f"{owner}.member")))


def _known_members(session: Session, owner: str, instance: bool) -> tuple[str, ...]:
    """The member names the knowledge base documents for ``owner``: what is known without jedi."""
    names: set[str] = set()
    for documented in _documented_owners(owner, instance):
        prefix = documented + "."
        names.update(name[len(prefix) :].split(".", 1)[0] for name in session.kb.entries if name.startswith(prefix))
    return tuple(sorted(names))


def _build(
    session: Session, owner: str, instance: bool, names: tuple[str, ...], underscores: int, enriched_only: bool
) -> list[Item]:
    items = []
    for name in names:
        if not offered(name, underscores):
            continue
        item = _item(session, owner, name, session.resolver.member_kind(owner, instance, name), instance)
        if enriched_only and item.summary is None:
            continue
        items.append(item)
    return items


async def members_list(
    session: Session, owner: str, instance: bool, enriched_only: bool, underscores: int = 0
) -> tuple[list[Item], bool]:
    """Items for the members of a torch module or class that a name typed with ``underscores`` leading
    underscores may show (see :func:`~torchls.completion.items.offered`); ``(items, complete)``.

    The same question gets the same list object until its answer changes (the LSP layer keeps a long list's
    encoded form by identity): built lists are kept until the knowledge base reloads."""
    if instance and owner in _PARAMETER_CLASSES:
        owner = "torch.Tensor"  # a parameter is a tensor for everything the user calls on it
    listed = await _listed_members(session, owner, instance)
    key = (owner, instance, listed, underscores, enriched_only)
    items = session.completion_lists.get(key)
    if items is None:
        known = _known_members(session, owner, instance)
        names = known if listed is None else listed + tuple(sorted(set(known).difference(listed)))
        items = _build(session, owner, instance, names, underscores, enriched_only)
        session.completion_lists[key] = items
    return items, listed is not None


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
    session: Session, index, class_name: str, enriched_only: bool, underscores: int = 0
) -> tuple[list[Item], bool] | None:
    """``self.`` or ``model.`` on a class of this file derived from a torch class: its own attributes and
    methods, then the torch base's members with their summaries. None when only jedi can tell (a foreign base)."""
    found = index.user_class_members(class_name)
    if found is None:
        return None
    own, torch_base = found
    base = session.kb.public_name(torch_base)
    inherited, complete = await members_list(session, base, True, enriched_only, underscores)
    items = (
        []
        if enriched_only
        else [
            Item(label=name, kind=kind, sort_text=f"{'2' if name.startswith('_') else '0'}{name.lower()}")
            for name, kind in own.items()
            if offered(name, underscores)
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
    session: Session, owners: list[tuple[str, bool] | None], enriched_only: bool, underscores: int
) -> tuple[list[Item], bool]:
    """The members of each possible type of a receiver, once each (the first type's item wins a name)."""
    merged: dict[str, Item] = {}
    complete = True
    for owner in owners:
        assert owner is not None
        items, done = await members_list(session, owner[0], owner[1], enriched_only, underscores)
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
    if not jedi_ready(resolver):
        return CompletionResult([], is_incomplete=True)  # never pay jedi's cold cost on a keystroke
    underscores = typed_underscores(partial)
    dot = position.column - len(partial) - 1
    if dot > 0 and (line_text[dot - 1].isalnum() or line_text[dot - 1] == "_"):
        # Ask jedi only what the receiver is; the members of torch's and the builtins' classes are cached.
        types_ = await asyncio.wrap_future(resolver.submit(resolver.receiver_types, text, path, position.line, dot))
        if not types_:
            return None  # jedi cannot tell either
        owners = list(dict.fromkeys(_cacheable_owner(session, name, instance) for name, instance in types_))
        owners.sort(key=lambda owner: owner is None or not is_torch_name(owner[0]))  # torch's summaries win
        if all(owners):
            items, complete_list = await _union(session, owners, enriched_only, underscores)  # ``Tensor | dict``
            shown = narrowed(items, partial) if partial else items
            return CompletionResult(shown, is_incomplete=not complete_list or bool(partial))
    future = asyncio.wrap_future(resolver.submit(resolver.complete_at, text, path, position.line, position.column))
    completions = await future
    if not completions:
        return None
    items = []
    for name, kind, full_name in completions:
        if not (offered(name, underscores) and fuzzy(partial, name)):
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
