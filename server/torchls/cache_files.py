"""Where torchls keeps its caches, and how a cache file is written. Light on purpose: the start-up path reads it
before pygls is imported."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """``$TORCHLS_CACHE_DIR``, else ``$XDG_CACHE_HOME/torchls``, else ``~/.cache/torchls``."""
    explicit = os.environ.get("TORCHLS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "torchls"


def write_atomically(path: Path, data: bytes, what: str) -> bool:
    """Write a cache file whole or not at all: a concurrent reader never sees half a file, and a full disk
    leaves no partial temporary file behind. A failure is logged, never raised: caches are optional."""
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False, suffix=".tmp") as stream:
            temporary = stream.name
            stream.write(data)
        os.replace(temporary, path)
        return True
    except OSError as error:
        log.info("could not write the %s %s: %s", what, path, error)
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        return False
