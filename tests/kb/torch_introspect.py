"""What the installed torch says about a public name: the object and its parameter names.

Only the tests import torch; the server reads torch through jedi.
"""

from __future__ import annotations

import enum
import functools
import importlib
import inspect
import re
import typing
from typing import Any

_DOC_SIGNATURE = re.compile(r"^\s*(?:\.\. (?:method|function):: )?([A-Za-z_][A-Za-z0-9_.]*)\(")
_MISSING = object()


def resolve_object(name: str) -> Any:
    """The object a dotted public name refers to, or raise LookupError.

    An attribute wins over a submodule of the same name: ``torch.multiprocessing.spawn`` is the function the
    package exports, not the module it is defined in.
    """
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, _MISSING)
            if obj is _MISSING:
                break
        else:
            return obj
        break  # the longest importable prefix lacks the attribute: maybe the whole name is a module
    try:
        return importlib.import_module(name)
    except ImportError:
        raise LookupError(f"{name}: the installed torch has no such API") from None


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


def _balanced(text: str) -> str:
    """The text up to the parenthesis that closes an already opened one."""
    depth = 1
    for index, char in enumerate(text):
        depth += char in "([{"
        depth -= char in ")]}"
        if depth == 0:
            return text[:index]
    return text


def installed_parameters(name: str) -> set[str] | None:
    """Parameter names of a callable in the installed torch (all overloads together); None if not callable."""
    obj = resolve_object(name)
    if isinstance(obj, property) or not callable(obj):
        return None
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        return None  # an enum's members are documented, not the Enum constructor's arguments
    found: set[str] = set()
    try:
        signature = inspect.signature(obj)
        found.update(p for p in signature.parameters if p not in ("self",))
    except (TypeError, ValueError):
        pass
    # A class with a generic ``__new__(*args, **kwargs)`` (torch.fx.GraphModule) takes its ``__init__``'s.
    if inspect.isclass(obj) and found <= {"args", "kwargs"} and inspect.isfunction(getattr(obj, "__init__", None)):
        found.update(p for p in inspect.signature(obj.__init__).parameters if p != "self")
    # Classes such as nn.LSTM declare their real constructor arguments only in typed ``@overload``s.
    init = getattr(obj, "__init__", None) if inspect.isclass(obj) else None
    get_overloads = getattr(typing, "get_overloads", lambda function: [])  # Python 3.11+
    for overload in get_overloads(init) if inspect.isfunction(init) else ():
        found.update(p for p in inspect.signature(overload).parameters if p != "self")
    # Built-ins (torch.randn, Tensor.view) have no inspectable signature; their docstrings start with them, and
    # overloads are spelled ``.. method:: to(dtype, non_blocking=False)`` / ``.. function::`` further down.
    doc = inspect.getdoc(obj) or ""
    lines = doc.splitlines()
    starts = [i for i, line in enumerate(lines) if i < 12 or ".. method::" in line or ".. function::" in line]
    for index in starts:
        match = _DOC_SIGNATURE.match(lines[index])
        if match and match.group(1).split(".")[-1] in (name.split(".")[-1], "__init__"):
            # A long signature may continue on the next lines.
            following = "\n".join([lines[index][match.end() :], *lines[index + 1 : index + 6]])
            found.update(_params_from_text(_balanced(following)))
    if not found:
        found.update(_stub_parameters(name))
    return found


def _stub_parameters(name: str) -> set[str]:
    """Parameters from torch's own type stubs, for built-ins with neither a signature nor a docstring
    (``torch.relu``, ``Tensor.split_with_sizes``): ``_VariableFunctions.pyi`` and ``TensorBase`` in ``_C``."""
    parts = name.split(".")
    if parts[:2] == ["torch", "Tensor"] and len(parts) == 3:
        return _stub_index().get(("TensorBase", parts[2]), set())
    if len(parts) == 2 and parts[0] == "torch":
        return _stub_index().get(("", parts[1]), set())
    return set()


@functools.cache
def _stub_index() -> dict[tuple[str, str], set[str]]:
    import ast
    from pathlib import Path

    import torch

    index: dict[tuple[str, str], set[str]] = {}
    stubs = Path(torch.__file__).parent / "_C"

    def add(owner: str, function: ast.FunctionDef) -> None:
        arguments = function.args
        names = [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
        names += [a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None]
        index.setdefault((owner, function.name), set()).update(n for n in names if n not in ("self", "cls"))

    for path, owners in ((stubs / "_VariableFunctions.pyi", None), (stubs / "__init__.pyi", {"TensorBase"})):
        if not path.is_file():
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if owners is None and isinstance(node, ast.FunctionDef):
                add("", node)
            elif isinstance(node, ast.ClassDef) and owners and node.name in owners:
                for member in node.body:
                    if isinstance(member, ast.FunctionDef):
                        add(node.name, member)
    return index
