"""The shipped knowledge base as one zip file (``torchls/_knowledge.zip``), for packages that cannot hold the folder.

A VS Code .vsix refuses two paths that differ only in case, and the knowledge base has such pairs (``torch/tensor``
and ``torch/Tensor``, ``torch/Tensor/t`` and ``torch/Tensor/T``), so the extension's bundle carries the folder
zipped (vscode-client/scripts/bundle_server.py). It is unpacked once into the cache folder, under the archive's
hash: a new archive gets a new folder, and two servers starting at once never see a half-written one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

ARCHIVE_NAME = "_knowledge.zip"


def unpacked(archive: Path, cache: Path) -> Path:
    """The folder holding ``archive``'s files, unpacking it under ``cache`` the first time."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:16]
    folder = cache / f"knowledge-{digest}"
    if folder.is_dir():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".knowledge-", dir=cache))
    try:
        with zipfile.ZipFile(archive) as opened:
            opened.extractall(staging)
        os.replace(staging, folder)  # atomic; fails when another server finished first, which is fine
    except OSError:
        if not folder.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder
