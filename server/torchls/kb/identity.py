"""Which torch names are the same object: the table every climb to a public name is checked against.

jedi and the import table name a symbol where it is defined or re-exported (``torch.nn.modules.linear.Linear``,
``torch.distributed.nn.functional.all_gather``); entries use public names. A climb from one to the other is right
only when both names are bound to the very same object: ``torch.nn.Linear`` is ``torch.nn.modules.linear.Linear``,
but ``torch.distributed.all_gather`` is *not* ``torch.distributed.nn.functional.all_gather`` (another signature,
no gradients). Only the installed torch can tell, so the table is built by the configured interpreter in a short
subprocess (the server never imports torch) and cached per interpreter and torch installation.

The table groups names by object: every callable bound in a loaded ``torch`` module (after importing the public
namespaces), plus the place each object says it is defined (``__module__`` + ``__qualname__``). A name not in it is
unknown, and an unknown name is never climbed from.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from torchls.cache_files import cache_dir, write_atomically

log = logging.getLogger(__name__)

FORMAT = "identity1"  # bump when the script's output changes, so cached tables are built again
_TIMEOUT_SECONDS = 120

# Runs in the target interpreter with ``-I``; argv: the namespaces to import. Prints one JSON object:
# ``{"version": torch.__version__, "groups": [[name, ...], ...], "defined": {name: defined-at name}}``.
_SCRIPT = r"""
import importlib, json, sys, types, warnings
warnings.simplefilter("ignore")
import torch
for namespace in sys.argv[1:]:
    try:
        importlib.import_module(namespace)
    except Exception:
        pass  # an optional dependency missing (tensorboard, onnx): its names stay unknown
ids, objects = {}, {}
def add(name, value):
    ids.setdefault(name, id(value))
    objects.setdefault(id(value), value)
for module_name, module in list(sys.modules.items()):
    if module is None or not (module_name == "torch" or module_name.startswith("torch.")):
        continue
    try:
        members = list(vars(module).items())
    except TypeError:
        continue
    for attribute, value in members:
        try:
            if attribute.startswith("_") or isinstance(value, types.ModuleType) or not callable(value):
                continue
        except Exception:
            continue
        add(module_name + "." + attribute, value)
for key, value in list(objects.items()):
    home, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if isinstance(home, str) and isinstance(qualname, str) and home.startswith("torch") and "<" not in qualname:
        add(home + "." + qualname, value)
groups = {}
for name, key in ids.items():
    groups.setdefault(key, []).append(name)
print(json.dumps({"version": torch.__version__, "groups": sorted(sorted(g) for g in groups.values())}))
"""


@dataclass(slots=True)
class Identity:
    """Names grouped by the object they are bound to in one torch installation."""

    version: str = ""
    groups: list[tuple[str, ...]] = field(default_factory=list)
    _group_of: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, version: str, groups: Iterable[Iterable[str]]) -> Identity:
        table = cls(version, [tuple(group) for group in groups])
        for index, group in enumerate(table.groups):
            for name in group:
                table._group_of[name] = index
        return table

    def knows(self, name: str) -> bool:
        return name in self._group_of

    def same(self, a: str, b: str) -> bool:
        """True when both names are known and bound to the same object."""
        group = self._group_of.get(a)
        return group is not None and group == self._group_of.get(b)

    def same_object(self, a: str, b: str) -> bool:
        """True when ``a`` and ``b`` are the same object, or the same attribute path below one object
        (``torch.nn.modules.module.Module.zero_grad`` and ``torch.nn.Module.zero_grad``)."""
        left, right = a.split("."), b.split(".")
        while left and right:
            if self.same(".".join(left), ".".join(right)):
                return True
            if left.pop() != right.pop():
                return False
        return a == b

    def names_of(self, name: str) -> tuple[str, ...]:
        """Every name of the object ``name`` is bound to (empty when unknown)."""
        group = self._group_of.get(name)
        return self.groups[group] if group is not None else ()


def _torch_stamp(python: str) -> str | None:
    """Where the interpreter's torch is and when it was installed, without importing it (tens of milliseconds)."""
    script = "import importlib.util as u; s = u.find_spec('torch'); print(s.origin if s else '')"
    try:
        done = subprocess.run([python, "-I", "-c", script], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as error:
        log.info("could not find torch in %s: %s", python, error)
        return None
    origin = done.stdout.strip()
    if not origin:
        return None
    version = Path(origin).with_name("version.py")
    try:
        return f"{version}:{version.stat().st_mtime_ns}"
    except OSError:
        return origin


def _cache_file(python: str, stamp: str, namespaces: tuple[str, ...]) -> Path:
    key = "|".join((FORMAT, os.path.realpath(python), stamp, *namespaces))
    return cache_dir() / f"identity-{hashlib.sha1(key.encode('utf-8')).hexdigest()[:16]}.json"


def load(python: str | None = None, namespaces: Iterable[str] | None = None) -> Identity | None:
    """The table of ``python``'s torch (default: this interpreter), from the cache or built now (seconds: it
    imports torch), after importing ``namespaces`` (default: the public ones). None when there is no torch or
    the script fails: callers then climb nowhere."""
    from torchls.kb.canonical import PUBLIC_NAMESPACES

    python = shutil.which(python) or python if python else sys.executable
    spaces = tuple(sorted(set(PUBLIC_NAMESPACES if namespaces is None else namespaces)))
    stamp = _torch_stamp(python)
    if stamp is None:
        return None
    path = _cache_file(python, stamp, spaces)
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        return Identity.of(saved["version"], saved["groups"])
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as error:
        log.info("ignoring identity cache %s: %s", path, error)
    try:
        done = subprocess.run(
            [python, "-I", "-X", "utf8", "-c", _SCRIPT, *spaces],
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=_TIMEOUT_SECONDS,
            check=True,
        )
        data = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as error:
        log.info("could not build the identity table with %s: %s", python, error)
        return None
    write_atomically(path, json.dumps(data).encode("utf-8"), "identity table")
    return Identity.of(data["version"], data["groups"])
