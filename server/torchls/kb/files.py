"""Finding the entry files of a knowledge folder, and the manifest that tells whether any of them changed.

Kept apart from the YAML loader so that a start-up served from the cache never imports PyYAML.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path


def expected_name(path: Path, root: Path) -> str:
    """The API name a file's place in a knowledge folder implies: ``torch/nn/Linear.yaml`` -> ``torch.nn.Linear``."""
    relative = path.relative_to(root).with_suffix("")
    return ".".join(relative.parts)


def iter_yaml_files(root: Path) -> Iterator[Path]:
    """All ``*.yaml``/``*.yml`` files under ``root``, sorted, skipping hidden folders."""
    for directory, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            if name.endswith((".yaml", ".yml")) and not name.startswith("."):
                yield Path(directory) / name


def file_manifest(root: Path, files: Iterable[Path] | None = None) -> tuple[tuple[str, int, int], ...]:
    """(relative path, mtime_ns, size) of every entry file, sorted: the cache is valid while this is unchanged.

    Without ``files`` the folder is scanned with ``os.scandir`` on plain strings: this runs at every start-up
    and, for team folders, every second, so it avoids ``Path`` objects (several times faster on 800 files).
    """
    if files is not None:
        manifest = []
        for path in files:
            try:
                stat = path.stat()
            except OSError:
                continue
            manifest.append((str(path.relative_to(root)), stat.st_mtime_ns, stat.st_size))
        return tuple(manifest)
    found: list[tuple[str, int, int]] = []
    _scan(str(root), "", found)
    found.sort()
    return tuple(found)


def _scan(folder: str, prefix: str, found: list[tuple[str, int, int]]) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name.startswith("."):
            continue
        try:
            if entry.is_dir():
                _scan(entry.path, f"{prefix}{name}{os.sep}", found)
            elif name.endswith((".yaml", ".yml")):
                stat = entry.stat()
                found.append((prefix + name, stat.st_mtime_ns, stat.st_size))
        except OSError:
            continue
