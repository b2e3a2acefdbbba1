"""The knowledge-base card at a place in a document, and the full card written out as a Markdown document: the
engine behind the ``torchls.showCard`` command and the "查看完整卡片" code action (no LSP types here; the
rendering is :mod:`torchls.kb.render`).

The document is a file under the cache folder (``<cache>/cards/<name>.md``), so that any editor can open it
with ``window/showDocument`` and keep it open like any other file; it is written again on each request, with the
installed torch's signature of the moment.
"""

from __future__ import annotations

import logging
from pathlib import Path

from torchls.cache_files import cache_dir, write_atomically
from torchls.core.text import Position
from torchls.docinfo import SymbolDoc
from torchls.hover import JediNotReady, ask_jedi, is_torch_name
from torchls.kb.render import card_document
from torchls.kb.schema import Entry
from torchls.session import Session

log = logging.getLogger(__name__)


async def entry_at(
    session: Session, uri: str, path: str | None, text: str, version: int | None, position: Position
) -> Entry | None:
    """The knowledge-base entry of the torch symbol at ``position``: the file's own names first, jedi only where
    the file cannot tell (and not at all while jedi is still cold)."""
    document = session.index(uri, text, version)
    target = document.index.target_at(position)
    name = target.qualname if target is not None else None
    if name is None and (target is not None or position.line in document.blanked_lines):
        try:
            hit = await ask_jedi(session, session.resolver.resolve_at, text, path, position.line, position.column)
        except JediNotReady:
            return None
        name = hit.doc.name if hit is not None else None
    if not is_torch_name(name):
        return None
    return session.kb.lookup(name)  # type: ignore[arg-type]


def find_entry(session: Session, name: str) -> Entry | None:
    """The entry a command names: its public name, an alias, or a name jedi reports."""
    return session.kb.get(name) or session.kb.lookup(name)


async def _live_doc(session: Session, name: str) -> SymbolDoc | None:
    """The installed torch's signature for the card: from the cache, else from jedi (not while it is cold)."""
    cached = session.resolver.cached_doc(name)
    if cached is not None:
        return cached
    try:
        return await ask_jedi(session, session.resolver.describe, name)
    except JediNotReady:
        return None


def card_path(name: str) -> Path:
    """Where the full card of entry ``name`` is written (entry names are dotted identifiers: safe file names)."""
    return cache_dir() / "cards" / f"{name}.md"


async def full_card(session: Session, entry: Entry) -> tuple[str, Path | None]:
    """The full card of ``entry`` as Markdown, and the file it was written to (None when it could not be)."""
    live = await _live_doc(session, entry.name)
    markdown = card_document(entry, live, session.resolver.torch_version())
    path = card_path(entry.name)
    written = write_atomically(path, markdown.encode("utf-8"), "full card")
    return markdown, path if written else None
