"""Compiled cache of a knowledge folder, so start-up does not re-parse every YAML file.

The cache of a folder is one pickle in the user's cache directory holding the folder's file manifest (path,
mtime, size of every entry file) and the validated entries and errors. It is used only while the manifest still
matches the folder and the format version still matches this code; otherwise the folder is loaded again and the
cache rewritten. A cache that cannot be read or written is ignored: it only ever costs speed.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path

from torchls import __version__
from torchls.cache_files import cache_dir, write_atomically
from torchls.kb.files import file_manifest
from torchls.kb.schema import Entry, KbError

log = logging.getLogger(__name__)

# Bump when Entry, the validation rules or the payload change, so stale caches are ignored.
CACHE_FORMAT = f"{__version__}-kb3"


class LazyEntries(MutableMapping[str, Entry]):
    """Entries by public name, each unpickled the first time it is read.

    Start-up then reads one pickle of short byte strings (the names, aliases and packed entries) instead of
    rebuilding some 20,000 frozen dataclass objects, most of which a session never shows.
    """

    __slots__ = ("_items", "aliases")

    def __init__(self, packed: dict[str, bytes] | None = None, aliases: dict[str, str] | None = None) -> None:
        self._items: dict[str, bytes | Entry] = dict(packed or {})
        self.aliases: dict[str, str] = dict(aliases or {})  # alias -> public name, for every entry held

    @classmethod
    def of(cls, entries: Mapping[str, Entry]) -> LazyEntries:
        lazy = cls()
        lazy.merge(entries)
        return lazy

    def __getitem__(self, name: str) -> Entry:
        value = self._items[name]
        if isinstance(value, bytes):
            value = pickle.loads(value)
            self._items[name] = value
        return value

    def __setitem__(self, name: str, entry: Entry) -> None:
        self._drop_aliases_of(name)
        self._items[name] = entry
        self.aliases.update(dict.fromkeys(entry.aliases, name))

    def __delitem__(self, name: str) -> None:
        del self._items[name]
        self._drop_aliases_of(name)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def merge(self, other: Mapping[str, Entry]) -> None:
        """Add or override entries from ``other`` (a later folder), without unpickling lazy ones."""
        if not isinstance(other, LazyEntries):
            for name, entry in other.items():
                self[name] = entry
            return
        for name in other._items:
            self._drop_aliases_of(name)
        self._items.update(other._items)
        self.aliases.update(other.aliases)

    def packed(self) -> dict[str, bytes]:
        return {
            name: value if isinstance(value, bytes) else pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            for name, value in self._items.items()
        }

    def _drop_aliases_of(self, name: str) -> None:
        if name in self._items:
            for alias in [a for a, target in self.aliases.items() if target == name]:
                del self.aliases[alias]


def _cache_file(root: Path) -> Path:
    digest = hashlib.sha1(str(root.resolve()).encode("utf-8")).hexdigest()[:16]
    return cache_dir() / f"kb-{digest}.pickle"


def load_folder_cached(root: Path) -> tuple[LazyEntries, list[KbError]]:
    """Entries and errors of ``root``, from the cache when it is still valid."""
    manifest = file_manifest(root) if root.is_dir() else ()
    path = _cache_file(root)
    try:
        with path.open("rb") as stream:
            cached = pickle.load(stream)
        if cached["format"] == CACHE_FORMAT and cached["manifest"] == manifest:
            return LazyEntries(cached["packed"], cached["aliases"]), cached["errors"]
    except FileNotFoundError:
        pass
    except Exception as error:  # a corrupt or foreign cache file must never stop the server
        log.info("ignoring knowledge cache %s: %s", path, error)
    from torchls.kb.loader import load_folder  # PyYAML only when something must be parsed

    loaded, errors = load_folder(root)
    entries = LazyEntries.of(loaded)
    payload = {"format": CACHE_FORMAT, "manifest": manifest, "errors": errors}
    _write(path, {**payload, "packed": entries.packed(), "aliases": entries.aliases})
    return entries, errors


def _write(path: Path, payload: dict) -> None:
    write_atomically(path, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL), "knowledge cache")
