"""Hover: from a position in a document to a Chinese card, fast path first, jedi only when needed.

1. The file's own imports and its analysis (:mod:`torchls.core.names`) name most torch symbols with no jedi at
   all; the card's live signature comes from the resolver's cache when warm-up has filled it. In a file just
   opened, whose index is still being built, the import lines alone answer most hovers
   (:mod:`torchls.core.import_lines`).
2. Everything else (return values, chained calls, lines that do not parse) goes to jedi in its process. A hover
   never waits for jedi to parse a file it has not seen: it answers from the file and jedi's answer, computed
   meanwhile, serves the next hover there.
3. A receiver nothing proves may still be named by its member (``lse.permute``: only tensors have ``permute``;
   :mod:`torchls.core.name_guess`); the card then says the type was inferred from the name.
A name that is not torch gets no hover, so torchls coexists with Pylance and other servers.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from torchls.core.calls import call_of_callee
from torchls.core.name_guess import IMPORTED_OTHERS, TENSOR, tensor_member_by_name
from torchls.core.names import ModuleIndex, Target
from torchls.core.text import Position, SourceText, Span
from torchls.core.values import TensorValue
from torchls.docinfo import JediHit, SymbolDoc
from torchls.kb.render import render_card, render_fallback, render_param
from torchls.kb.schema import Entry
from torchls.overload_choice import overloads_for_call
from torchls.session import Session


@dataclass(frozen=True, slots=True)
class HoverResult:
    markdown: str
    span: Span | None


def is_torch_name(name: str | None) -> bool:
    return bool(name) and (name == "torch" or name.startswith("torch."))  # type: ignore[union-attr]


# While jedi is still reading torch (seconds, once per start), a hover waits at most this long for it, so the
# editor is never left hanging; the answer is cached and the next hover gets it.
COLD_WAIT_SECONDS = 0.8
# Once jedi has parsed the document, a hover waits at most this long for its inference (usually tens of
# milliseconds; seconds on some chains); later, its answer is kept for the next hover at the same place.
WARM_WAIT_SECONDS = 1.0
# A file this short (about 500 lines) is indexed whole for its first hover (under 10 ms); a longer one answers from
# a partial index of the block around the cursor until the full one is built in the background (core/first_look.py).
FULL_INDEX_AT_ONCE_CHARS = 20_000
# Before jedi has read the document (the first request parses the whole file: most of a second for a long one),
# a hover does not wait for it: it answers from the file, and jedi's answer, computed meanwhile, serves the next
# hover there.


class JediNotReady(Exception):
    """jedi is still warming up and did not answer within :data:`COLD_WAIT_SECONDS`."""


async def ask_jedi(session: Session, function, *args):
    """Run ``function(*args)`` on the jedi thread; while jedi is cold, wait at most :data:`COLD_WAIT_SECONDS`."""
    future = asyncio.wrap_future(session.resolver.submit(function, *args))
    if session.resolver.warm.is_set():
        return await future
    try:
        return await asyncio.wait_for(asyncio.shield(future), COLD_WAIT_SECONDS)
    except TimeoutError as timeout:
        raise JediNotReady from timeout


async def _live_doc(session: Session, public_name: str, wait: bool) -> SymbolDoc | None:
    """The installed torch's view of ``public_name``: from the cache, or from jedi when ``wait``. jedi may be
    busy (parsing a file just opened takes most of a second): after :data:`WARM_WAIT_SECONDS` the hover stops
    waiting (:class:`JediNotReady`) and the answer, still coming, serves the next one."""
    cached = session.resolver.cached_doc(public_name)
    if cached is not None or not wait:
        if cached is None:  # fill the cache for the next hover without making this one wait
            session.resolver.submit(session.resolver.describe, public_name, background=True)
        return cached
    future = asyncio.wrap_future(session.resolver.submit(session.resolver.describe, public_name))
    limit = WARM_WAIT_SECONDS if session.resolver.warm.is_set() else COLD_WAIT_SECONDS
    try:
        return await asyncio.wait_for(asyncio.shield(future), limit)
    except TimeoutError as timeout:
        raise JediNotReady from timeout


async def hover(
    session: Session,
    uri: str,
    path: str | None,
    text: str,
    version: int | None,
    position: Position,
    card_links: bool = False,
) -> HoverResult | None:
    """The hover card at ``position`` (code points), or None when torchls has nothing to add. ``card_links``: the
    client runs the compact card's link to the full card (see :mod:`torchls.lsp.show_card`)."""
    document = session.indexed(uri, text, version)
    if document is None and len(text) <= FULL_INDEX_AT_ONCE_CHARS:
        document = session.index(uri, text, version)  # a short file: its whole index costs a few ms
    if document is not None:
        index, blanked = document.index, document.blanked_lines
    else:  # a long file just opened: its index is built soon after, meanwhile the block around the cursor answers
        index, blanked = session.partial_index(uri, text, version, position.line, with_init=False)
        target = index.target_at(position)  # enough for what the imports name
        if (target is None or target.qualname is None) and _after_self(document_line(text, position.line), position):
            # ``self.fc``: what __init__ binds decides, else what the whole class binds or inherits
            index, blanked = session.partial_index(uri, text, version, position.line, with_init=True)
            target = index.target_at(position)
            if target is not None and target.qualname is None:
                document = session.index(uri, text, version)  # 20-120 ms, once per version
                index, blanked = document.index, document.blanked_lines
    target = index.target_at(position)
    if target is None and position.line not in blanked:
        return None  # whitespace, a string, a comment, a keyword: nothing to look up
    place = _Place(index, text, path, document.lines if document is not None else None)
    if target is not None and target.kind == "keyword":
        return await _keyword_hover(session, target, text, path)
    if target is not None and target.qualname is not None:
        if not is_torch_name(target.qualname):
            return None
        if target.kind == "instance" and target.qualname == TENSOR:
            return _value_hover(document, position)  # a tensor variable: what the analysis knows, not a class card
        return await _name_hover(session, target.qualname, target.kind == "instance", target.span, card_links, place)
    known = _value_hover(document, position)
    if known is not None:
        return known  # a tensor the analysis follows (a forward's input, a helper's result): no jedi needed
    span = target.span if target is not None else None
    guess = _guessed_member(session, index, position)
    try:
        hit = await _jedi_hit(session, uri, version, text, path, position, span, wait=guess is None)
    except JediNotReady:
        hit = None
    if hit is None:
        return await _guess_hover(session, guess, span, card_links, place) if guess else None
    if hit.is_instance and session.kb.public_name(hit.doc.name) == TENSOR:
        return None
    entry = session.kb.lookup(hit.doc.name)
    public = entry.name if entry else session.kb.public_name(hit.doc.name)
    heading = _instance_heading(public) if hit.is_instance else None
    shown = None
    if not hit.is_instance and span is not None:
        shown = await _signatures_as_called(session, place, span, public, entry, hit.doc)
    if entry is None:
        return HoverResult(render_fallback(public, hit.doc, heading, shown), span)
    return HoverResult(_card(session, entry, hit.doc, heading, card_links, shown), span)


def _value_hover(document, position: Position) -> HoverResult | None:
    """``x: Tensor (64, ?, 10) · float32 · cuda`` from the checker's analysis of this document version."""
    values = document.values_if_ready() if document is not None else None
    if values is None:
        return None  # a long file just opened, or the analysis still being computed: the next hover has it
    found = values.at(position)
    if found is None or not isinstance(found.value, TensorValue):
        return None
    from torchls.core.values_at import describe  # with the checker's modules, loaded by values()

    markdown = describe(found, values.source)
    return HoverResult(markdown, found.span) if markdown else None


def document_line(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line] if 0 <= line < len(lines) else ""


def _after_self(line_text: str, position: Position) -> bool:
    """True when ``self.`` comes before the cursor on its line: the receiver may be an attribute ``__init__``
    binds."""
    return "self." in line_text[: position.column]


async def _jedi_hit(
    session: Session,
    uri: str,
    version: int | None,
    text: str,
    path: str | None,
    position: Position,
    span: Span | None,
    wait: bool,
) -> JediHit | None:
    """jedi's answer at ``position``: asked once per place and document version, kept for the next hover there.

    A hover does not wait when ``wait`` is False (there is an answer from the file already) or while jedi has not
    read the document yet (the first request pays for the whole file); otherwise at most :data:`WARM_WAIT_SECONDS`
    (:data:`COLD_WAIT_SECONDS` while jedi warms up)."""
    resolver = session.resolver
    where = span.start if span is not None else position
    key = (uri, version, where.line, where.column)
    future = session.jedi_hovers.get(key)
    if future is not None and future.cancelled():
        future = None
    parsed = resolver.has_parsed(text, path)
    if future is None:
        future = resolver.submit(resolver.resolve_at, text, path, position.line, position.column)
        session.remember_jedi_hover(key, future)
    if not future.done() and (not wait or not parsed):
        return None
    limit = WARM_WAIT_SECONDS if resolver.warm.is_set() else COLD_WAIT_SECONDS
    try:
        return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), limit)
    except TimeoutError as timeout:
        if not resolver.warm.is_set():
            raise JediNotReady from timeout
        return None
    except asyncio.CancelledError:
        if future.cancelled():  # a hover elsewhere came first (Session.remember_jedi_hover), not this request
            return None
        raise


def _guessed_member(session: Session, index, position: Position) -> str | None:
    """``permute`` in ``lse.permute`` when nothing proves what ``lse`` is but only a tensor has that member."""
    found = index.unproven_member_at(position)
    if found is None:
        return None
    member, receiver_attribute = found
    imported = index.imported_modules(position)
    resolver = session.resolver

    def members_of(qualname: str):
        listed = resolver.cached_members(qualname, True)
        if listed is None and any(qualname in classes for classes in IMPORTED_OTHERS.values()):
            resolver.submit(resolver.members, qualname, True, background=True)  # known by the next hover
        return listed

    siblings = index.receiver_members(position)
    return member if tensor_member_by_name(member, imported, members_of, receiver_attribute, siblings) else None


async def _guess_hover(
    session: Session, member: str, span: Span | None, card_links: bool, place: _Place
) -> HoverResult | None:
    name = f"{TENSOR}.{member}"
    note = f"*按成员名推断：代码里看不出这个对象的类型，但 `{member}` 是张量的成员，所以这里按 `{name}` 显示。*"
    entry = session.kb.lookup(name)
    public = entry.name if entry is not None else name
    # torch's own text, when jedi has read it already (the guess never waits for jedi)
    live = await _live_doc(session, public, wait=False)
    shown = await _signatures_as_called(session, place, span, public, entry, live) if span is not None else None
    if entry is None:
        return HoverResult(render_fallback(name, live, note, shown), span) if live is not None else None
    return HoverResult(_card(session, entry, live, note, card_links, shown), span)


def _card(
    session: Session,
    entry: Entry,
    live: SymbolDoc | None,
    heading: str | None,
    card_links: bool,
    signatures: list[str] | None = None,
) -> str:
    """The entry's card as the ``hover.card`` setting sizes it; ``signatures``: the overloads as called."""
    compact = session.settings.hover.card == "compact"
    pointer = "link" if card_links else "action"
    return render_card(entry, live, compact, heading, _torch_version(session), pointer, signatures)


@dataclass(frozen=True, slots=True)
class _Place:
    """The document a hover is in, for reading the call around the hovered name."""

    index: ModuleIndex  # possibly partial: the block around the cursor in a long file just opened
    text: str
    path: str | None
    split: list[str] | None  # the text's lines where the document's index has them already

    def lines(self) -> list[str]:
        return self.split if self.split is not None else SourceText(self.text).lines  # as the index counts them


async def _signatures_as_called(
    session: Session, place: _Place, span: Span, public: str, entry: Entry | None, live: SymbolDoc | None
) -> list[str] | None:
    """The labels of ``public``'s overloads, the one the call around the hovered name calls first, chosen and
    spelled as signature help does (:mod:`torchls.overload_choice`). None where no signature is known."""
    call = call_of_callee(place.lines(), span.end, place.index.statement_line_before(span.end.line))
    if call is None:
        return None
    index, text, path = place.index, place.text, place.path
    overloads = await overloads_for_call(session, index, call, public, entry, live, text, path, ask_jedi=False)
    return [signature.label for signature in overloads.chosen_first()] if overloads is not None else None


def _torch_version(session: Session) -> str | None:
    """The user's torch version (from the configured interpreter), for the card's version warnings."""
    return session.resolver.torch_version()


def _instance_heading(class_name: str) -> str:
    return f"*这是 `{class_name}` 的实例，以下是该类的说明。*"


async def _name_hover(
    session: Session, name: str, is_instance: bool, span: Span, card_links: bool = False, place: _Place | None = None
) -> HoverResult | None:
    entry = session.kb.lookup(name)
    if entry is not None:
        live = await _live_doc(session, entry.name, wait=False)
        heading = _instance_heading(entry.name) if is_instance else None
        shown = None
        if place is not None and not is_instance:
            shown = await _signatures_as_called(session, place, span, entry.name, entry, live)
        return HoverResult(_card(session, entry, live, heading, card_links, shown), span)
    public = name  # what the file itself calls it: already a name the user can import
    if _not_a_member(session, public):
        return None
    try:
        live = await _live_doc(session, public, wait=True)
    except JediNotReady:
        loading = f"**{public}** — 暂无中文条目；torch 自带的英文文档还在读取（jedi 正忙），请稍后再悬停。"
        return HoverResult(loading, span)
    if live is None:
        return None  # not a symbol the installed torch has
    heading = _instance_heading(public) if is_instance else None
    shown = None
    if place is not None and not is_instance:
        shown = await _signatures_as_called(session, place, span, public, None, live)
    return HoverResult(render_fallback(public, live, heading, shown), span)


def _not_a_member(session: Session, name: str) -> bool:
    """True for ``torch.nn.Module.transformer``: an attribute of some model read through its torch class, which
    that class's listed members (known after the warm-up) do not have; it names no API, and a card for it, even
    one saying that its documentation is still being read, would name one."""
    owner, _, member = name.rpartition(".")
    listed = session.resolver.cached_members(owner, True)
    return listed is not None and not member.startswith("_") and member not in listed


async def _keyword_hover(session: Session, target: Target, text: str, path: str | None) -> HoverResult | None:
    callee = target.qualname
    live: SymbolDoc | None = None
    if callee is None and target.callee_end is not None:  # not resolvable from the file alone: ask jedi
        end = target.callee_end
        try:
            hit = await ask_jedi(session, session.resolver.resolve_at, text, path, end.line, max(end.column - 1, 0))
        except JediNotReady:
            return None
        if hit is None:
            return None
        callee, live = hit.doc.name, hit.doc
    if not is_torch_name(callee):
        return None
    entry = session.kb.lookup(callee)  # type: ignore[arg-type]
    # A name from jedi is where the callee is defined; a name from the file is already what users import.
    owner = entry.name if entry else (session.kb.public_name(callee) if live else callee)  # type: ignore[arg-type]
    has_chinese = entry is not None and entry.param(target.keyword or "") is not None
    if live is None:
        try:
            live = await _live_doc(session, owner, wait=not has_chinese)
        except JediNotReady:
            live = None
    markdown = render_param(entry, owner, target.keyword or "", live, _torch_version(session))
    return HoverResult(markdown, target.span) if markdown else None
