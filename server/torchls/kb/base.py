"""The knowledge base: entries from the shipped folder and any team folders, looked up by any name jedi gives."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torchls.cache_files import cache_dir
from torchls.kb import archive, canonical
from torchls.kb.cache import LazyEntries, load_folder_cached
from torchls.kb.identity import Identity
from torchls.kb.schema import Entry, KbError


def shipped_folder() -> Path:
    """The knowledge folder that ships with torchls.

    In a source checkout (editable install) it is the repository's top-level ``knowledge/``; in a wheel it is
    packaged as ``torchls/_knowledge``, or zipped as ``torchls/_knowledge.zip`` (:mod:`torchls.kb.archive`).
    ``$TORCHLS_KNOWLEDGE`` overrides them all (for tests and packagers).
    """
    explicit = os.environ.get("TORCHLS_KNOWLEDGE")
    if explicit:
        return Path(explicit)
    packaged = _packaged_folder()
    if packaged.is_dir():
        return packaged
    zipped = packaged.parent / archive.ARCHIVE_NAME  # the VS Code extension's bundle
    if zipped.is_file():
        return archive.unpacked(zipped, cache_dir())
    return packaged.parent.parent.parent / "knowledge"


def _packaged_folder() -> Path:
    return Path(__file__).resolve().parent.parent / "_knowledge"


def writable_shipped_folder() -> Path | None:
    """The shipped folder where new entries may go: a checkout's ``knowledge/`` or ``$TORCHLS_KNOWLEDGE``.

    None in an installed package or the extension's bundle: what is written there is lost on the next upgrade.
    """
    packaged = _packaged_folder()
    installed = packaged.is_dir() or (packaged.parent / archive.ARCHIVE_NAME).is_file()
    if os.environ.get("TORCHLS_KNOWLEDGE") or not installed:
        return shipped_folder()
    return None


@dataclass(slots=True)
class KnowledgeBase:
    """Entries by public name, plus the errors of the files that could not be loaded."""

    entries: LazyEntries = field(default_factory=LazyEntries)
    errors: list[KbError] = field(default_factory=list)
    folders: tuple[Path, ...] = ()
    # The installed torch's names per object (set once built: see torchls.kb.identity); None: climb nowhere.
    identity: Identity | None = None
    _aliases: dict[str, str] = field(default_factory=dict)
    _namespaces: frozenset[str] = frozenset()

    @classmethod
    def load(cls, extra_folders: Sequence[Path] = (), use_cache: bool = True) -> KnowledgeBase:
        """The shipped folder, then each extra folder in order; a later folder's entry overrides an earlier one."""
        folders = (shipped_folder(), *extra_folders)
        return cls.from_folders(folders, use_cache)

    @classmethod
    def from_folders(cls, folders: Iterable[Path], use_cache: bool = True) -> KnowledgeBase:
        base = cls(folders=tuple(folders))
        for folder in base.folders:
            if use_cache:
                entries, errors = load_folder_cached(folder)
            else:
                from torchls.kb.loader import load_folder

                entries, errors = load_folder(folder)
            base.entries.merge(entries)
            base.errors.extend(errors)
        base._index()
        return base

    def _index(self) -> None:
        self._aliases = dict(self.entries.aliases)
        self._namespaces = frozenset(canonical.module_of(name) for name in self.entries)

    @property
    def namespaces(self) -> frozenset[str]:
        """The modules names are climbed to: the public namespaces and those of the entries held."""
        return canonical.PUBLIC_NAMESPACES | self._namespaces

    def read_identity(self, python: str | None = None) -> None:
        """Read (or build: seconds) ``python``'s identity table for this base's namespaces, and climb with it."""
        from torchls.kb import identity

        self.identity = identity.load(python, self.namespaces)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, name: str) -> Entry | None:
        """The entry with exactly this public name or alias."""
        entry = self.entries.get(name)
        if entry is None and name in self._aliases:
            entry = self.entries.get(self._aliases[name])
        return entry

    def lookup(self, name: str) -> Entry | None:
        """The entry for any name of a symbol: public, defined-at (from jedi) or an alias."""
        for candidate in canonical.candidates(name, self._namespaces, self.identity):
            entry = self.get(candidate)
            if entry is not None:
                return entry
        return None

    def public_name(self, name: str) -> str:
        """The best public spelling of ``name``, even when there is no entry for it."""
        entry = self.lookup(name)
        if entry is not None:
            return entry.name
        options = canonical.candidates(name, self._namespaces, self.identity)
        # Without an entry, prefer the nearest public namespace over the defining module.
        return (
            options[1]
            if len(options) > 1
            and canonical.module_of(options[0]) not in (canonical.PUBLIC_NAMESPACES | self._namespaces)
            else options[0]
        )
