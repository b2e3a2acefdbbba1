"""Compiled cache of a knowledge folder, so start-up does not re-parse every YAML file.

The cache of a folder is one pickle in the user's cache directory holding the folder's file manifest (path,
mtime, size of every entry file) and the validated entries and errors. It is used only while the manifest still
matches the folder and the format version still matches this code; otherwise the folder is loaded again and the
cache rewritten. A cache that cannot be read or written is ignored: it only ever costs speed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
from pathlib import Path

from torchls import __version__
from torchls.kb.files import file_manifest, iter_yaml_files
from torchls.kb.schema import Entry, KbError

log = logging.getLogger(__name__)

# Bump when Entry or the validation rules change, so stale caches are ignored.
CACHE_FORMAT = f"{__version__}-kb2"


def cache_dir() -> Path:
    """``$TORCHLS_CACHE_DIR``, else ``$XDG_CACHE_HOME/torchls``, else ``~/.cache/torchls``."""
    explicit = os.environ.get("TORCHLS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "torchls"


def _cache_file(root: Path) -> Path:
    digest = hashlib.sha1(str(root.resolve()).encode("utf-8")).hexdigest()[:16]
    return cache_dir() / f"kb-{digest}.pickle"


def load_folder_cached(root: Path) -> tuple[dict[str, Entry], list[KbError]]:
    """Entries and errors of ``root``, from the cache when it is still valid."""
    files = list(iter_yaml_files(root)) if root.is_dir() else []
    manifest = file_manifest(root, files)
    path = _cache_file(root)
    try:
        with path.open("rb") as stream:
            cached = pickle.load(stream)
        if cached["format"] == CACHE_FORMAT and cached["manifest"] == manifest:
            return cached["entries"], cached["errors"]
    except FileNotFoundError:
        pass
    except Exception as error:  # a corrupt or foreign cache file must never stop the server
        log.info("ignoring knowledge cache %s: %s", path, error)
    from torchls.kb.loader import load_folder  # PyYAML only when something must be parsed

    entries, errors = load_folder(root)
    _write(path, {"format": CACHE_FORMAT, "manifest": manifest, "entries": entries, "errors": errors})
    return entries, errors


def _write(path: Path, payload: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename, so a concurrent reader never sees half a file.
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False, suffix=".tmp") as stream:
            pickle.dump(payload, stream, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(stream.name, path)
    except OSError as error:
        log.info("could not write knowledge cache %s: %s", path, error)
