"""What the installed torch says about a public name: the object and its parameter names.

Only the tests import torch; the server reads torch through jedi.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

_DOC_SIGNATURE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\((.*)\)\s*(->.*)?$")
_MISSING = object()


def resolve_object(name: str) -> Any:
    """The object a dotted public name refers to, or raise LookupError."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, _MISSING)
            if obj is _MISSING:
                raise LookupError(f"{name}: torch has no attribute {attr!r}")
        return obj
    raise LookupError(f"{name}: no such module")


def _params_from_text(text: str) -> list[str]:
    names = []
    depth = 0
    current = ""
    for char in text + ",":
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            token = current.strip().lstrip("*").split(":", 1)[0].split("=", 1)[0].strip()
            if token and token not in ("self", "/", ""):
                names.append(token)
            current = ""
        else:
            current += char
    return names


def installed_parameters(name: str) -> set[str] | None:
    """Parameter names of a callable in the installed torch (all overloads together); None if not callable."""
    obj = resolve_object(name)
    if isinstance(obj, property) or not callable(obj):
        return None
    found: set[str] = set()
    try:
        signature = inspect.signature(obj)
        found.update(p for p in signature.parameters if p not in ("self",))
    except (TypeError, ValueError):
        pass
    # Built-ins (torch.randn, Tensor.view) have no inspectable signature; their docstrings start with them.
    doc = inspect.getdoc(obj) or ""
    for line in doc.splitlines()[:12]:
        match = _DOC_SIGNATURE.match(line)
        if match and match.group(1).split(".")[-1] == name.split(".")[-1]:
            found.update(_params_from_text(match.group(2)))
    return found
