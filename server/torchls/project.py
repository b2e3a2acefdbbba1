"""The user's project on disk, for the fast path: which module a document is, and what the project's other
modules export (see :mod:`torchls.core.exports`). Only files under the folder that holds the document's top
package are read; installed libraries are jedi's business."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from torchls.core.exports import ModuleExports, module_exports

log = logging.getLogger(__name__)
_LARGEST_MODULE_BYTES = 2_000_000  # generated code, not worth parsing on a keystroke
_REEXPORT_DEPTH = 3  # ``timm.layers`` -> ``timm.layers.weight_init``: a package's ``__init__`` forwarding names


@dataclass(frozen=True, slots=True)
class Location:
    """A document's place in its project: its dotted module name and the folder its top package is in."""

    module: str
    is_package: bool  # an ``__init__.py``: its relative imports start from itself
    root: Path


class ProjectModules:
    """What other modules of the project export, read from disk on demand and kept until the file changes.
    Called from the event loop and the indexing thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read: dict[Path, tuple[tuple[int, int], ModuleExports]] = {}

    @staticmethod
    def locate(path: str | None) -> Location | None:
        """Where a file is in its project (a script outside any package is a top-level module of its folder); None
        for a file that is not a ``.py`` file."""
        if not path:
            return None
        file = Path(path)
        if file.suffix != ".py":
            return None
        is_package = file.stem == "__init__"
        parts = [] if is_package else [file.stem]
        folder = file.parent
        try:
            while (folder / "__init__.py").is_file() and folder.parent != folder:
                parts.insert(0, folder.name)
                folder = folder.parent
        except OSError:
            return None
        if not parts or not all(part.isidentifier() for part in parts):
            return None
        return Location(".".join(parts), is_package, folder)

    def returns(self, root: Path, qualname: str, depth: int = 0) -> str | None:
        """The torch class the project's function ``qualname`` is annotated to return, following re-exports."""
        module, _, name = qualname.rpartition(".")
        if not module or depth > _REEXPORT_DEPTH or module.split(".", 1)[0] == "torch":
            return None
        found = self._module_file(root, module)
        if found is None:
            return None
        exports = self._exports(found, module)
        if name in exports.returns:
            return exports.returns[name]
        forwarded = exports.reexports.get(name)
        return self.returns(root, forwarded, depth + 1) if forwarded else None

    @staticmethod
    def _module_file(root: Path, module: str) -> Path | None:
        base = root.joinpath(*module.split("."))
        for candidate in (base.parent / f"{base.name}.py", base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def _exports(self, file: Path, module: str) -> ModuleExports:
        try:
            status = file.stat()
            key = (status.st_mtime_ns, status.st_size)
            with self._lock:
                cached = self._read.get(file)
            if cached is not None and cached[0] == key:
                return cached[1]
            if status.st_size > _LARGEST_MODULE_BYTES:
                exports = ModuleExports()
            else:
                text = file.read_text(encoding="utf-8", errors="replace")
                exports = module_exports(text, module, file.name == "__init__.py")
        except OSError as error:
            log.info("could not read %s: %s", file, error)
            return ModuleExports()
        with self._lock:
            self._read[file] = (key, exports)
        return exports
