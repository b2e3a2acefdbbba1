"""What the installed torch says about a public name: the object and its parameter names.

Only the tests import torch; the server reads torch through jedi.
"""

from __future__ import annotations

import dataclasses
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
        rest = parts[cut:]
        for index, attr in enumerate(rest):
            owner, obj = obj, getattr(obj, attr, _MISSING)
            if obj is _MISSING:
                if index == len(rest) - 1 and inspect.isclass(owner) and _sets_instance_attribute(owner, attr):
                    return InstanceAttribute(owner, attr)
                break
        else:
            return obj
        break  # the longest importable prefix lacks the attribute: maybe the whole name is a module
    try:
        return importlib.import_module(name)
    except ImportError:
        raise LookupError(f"{name}: the installed torch has no such API") from None


@dataclasses.dataclass(frozen=True)
class InstanceAttribute:
    """An attribute each instance of ``owner`` gets (``nn.Linear.weight``, ``Optimizer.param_groups``): not on
    the class, so ``getattr`` cannot find it."""

    owner: type
    name: str


def _sets_instance_attribute(cls: type, attr: str) -> bool:
    """Whether instances of ``cls`` have ``attr``: the class or a base declares it (``weight: Tensor``), or an
    ``__init__`` along the MRO assigns it (``self.weight = ...``) or registers it
    (``self.register_buffer("running_mean", ...)``)."""
    for klass in cls.__mro__:
        if attr in inspect.get_annotations(klass):
            return True
        init = klass.__dict__.get("__init__")
        if not inspect.isfunction(init):
            continue
        try:
            source = inspect.getsource(init)
        except (OSError, TypeError):
            continue
        assigned = re.search(rf"\bself\.{re.escape(attr)}\s*(?::[^=\n]*)?=(?!=)", source)
        registered = re.search(rf"register_(?:buffer|parameter)\(\s*[\"']{re.escape(attr)}[\"']", source)
        if assigned or registered:
            return True
    return False


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
    if isinstance(obj, typing._SpecialForm):
        return None  # ``torch.jit.Final`` is ``typing.Final``: subscripted (``Final[int]``), never called
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        # Calling an enum looks a member up by its value (``ShardingStrategy(1)``); the Enum constructor's
        # functional-API arguments are not this class's.
        return {"value"}
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
            inside = _balanced(following)
            if following[len(inside) + 1 :].lstrip().startswith(("==", "!=")):
                continue  # an identity in prose (``torch.fmod(a, b) == a - ...``), not a signature
            found.update(_params_from_text(inside))
    if not inspect.isfunction(obj):
        # What torch's own stubs declare for a built-in: overload-only names (``Tensor.view(size)``,
        # ``torch.zeros(..., pin_memory)``) that the docstring leaves out are what jedi shows on the card.
        found.update(_stub_parameters(name, obj))
    found.update(_forwarded_parameters(name))
    if inspect.isclass(obj):
        found.update(_module_stub_constructor_parameters(obj))
    forwarded_to = _base_member_parameters(name, found)
    return (found - {"args", "kwargs"}) | forwarded_to if forwarded_to else found


def _base_member_parameters(name: str, found: set[str]) -> set[str]:
    """A method that only passes ``*args, **kwargs`` on to the member of the same name on a base class takes that
    member's parameters: ``torch.distributed.rpc.RRef.to_here`` wraps the pybind ``PyRRef.to_here(timeout)``."""
    owner_name, _, member = name.rpartition(".")
    if not found <= {"args", "kwargs"} or not owner_name:
        return set()
    try:
        owner = resolve_object(owner_name)
    except Exception:
        return set()
    if not inspect.isclass(owner):
        return set()
    for base in owner.__mro__[1:]:
        if member in vars(base):
            return installed_parameters(f"{base.__module__}.{base.__qualname__}.{member}") or set()
    return set()


def _module_stub_constructor_parameters(cls: type) -> set[str]:
    """Constructor parameters that the ``.pyi`` stub torch ships beside a Python module declares for one of its
    classes (``torch/nn/parameter.pyi``: ``Buffer(data, requires_grad, persistent)``). jedi prefers the stub, so the
    card shows them even where the runtime disagrees (``Buffer`` rejects ``requires_grad``); the entry explains them."""
    import ast
    import sys
    from pathlib import Path

    module = sys.modules.get(getattr(cls, "__module__", ""))
    source = getattr(module, "__file__", None)
    if not source or not source.endswith(".py") or not Path(source[:-3] + ".pyi").is_file():
        return set()
    found: set[str] = set()
    for node in ast.parse(Path(source[:-3] + ".pyi").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            for member in node.body:
                if isinstance(member, ast.FunctionDef) and member.name in ("__init__", "__new__"):
                    arguments = member.args
                    names = [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
                    found.update(n for n in names if n not in ("self", "cls"))
    return found


# APIs whose ``**kwargs`` go on to another callable, which jedi follows: the card lists what it finds there.
# Each target with the parameters the API takes from it (None: all but those the API fills itself).
_KWARGS_FORWARDED_TO: dict[str, tuple[tuple[str, frozenset[str] | None], ...]] = {
    # Module.compile(*args, **kwargs) calls torch.compile(self._call_impl, *args, **kwargs).
    "torch.nn.Module.compile": (("torch.compile", None),),
    # torch.load(..., **pickle_load_args) calls _load(..., **pickle_load_args), whose own keyword is
    # ``pickle_file``; both end in ``pickle_module.Unpickler(file, **pickle_load_args)``.
    "torch.load": (("torch.serialization._load", frozenset({"pickle_file"})), ("pickle.Unpickler", None)),
    # CppExtension(name, sources, *args, **kwargs) returns setuptools.Extension(name, sources, *args, **kwargs).
    "torch.utils.cpp_extension.CppExtension": (("setuptools.Extension", None),),
}
_FILLED_BY_CALLER = {"torch.compile": {"model"}, "pickle.Unpickler": {"file"}}


def _forwarded_parameters(name: str) -> set[str]:
    found: set[str] = set()
    for target, taken in _KWARGS_FORWARDED_TO.get(name, ()):
        module, _, attr = target.rpartition(".")
        obj = getattr(importlib.import_module(module), attr)
        functions = [obj]
        if inspect.isclass(obj):  # setuptools.Extension passes its ``**kw`` on to distutils' Extension
            functions += [k.__dict__["__init__"] for k in obj.__mro__ if inspect.isfunction(k.__dict__.get("__init__"))]
        names: set[str] = set()
        for function in functions:
            try:
                parameters = inspect.signature(function).parameters.values()
            except (TypeError, ValueError):
                continue
            keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            names.update(p.name for p in parameters if p.kind in keyword)
        names -= {"self", *_FILLED_BY_CALLER.get(target, ())}
        found.update(names if taken is None else names & taken)
    return found


def _stub_parameters(name: str, obj: Any) -> set[str]:
    """Parameters that torch's own type stubs (``torch/_C/*.pyi``) declare for a built-in: a function of
    ``torch._C._VariableFunctions`` or ``torch._C``, a method of a class implemented in C (``TensorBase``,
    ``Future``), or the constructor of one (``torch.device``, ``torch.LongTensor``), every overload together."""
    import torch

    parts = name.split(".")
    if len(parts) == 2 and parts[0] == "torch" and not inspect.isclass(obj):
        found = set()
        if getattr(torch._C._VariableFunctions, parts[1], None) is obj:
            found |= _stub_index("_VariableFunctions").get(("", parts[1]), set())
        if getattr(torch._C, parts[1], None) is obj:
            found |= _stub_index("__init__").get(("", parts[1]), set())
        return found
    if inspect.isclass(obj):
        return _stub_members(obj, ("__init__", "__new__")) or set()
    try:
        owner = resolve_object(".".join(parts[:-1]))
    except LookupError:
        return set()
    return (_stub_members(owner, (parts[-1],)) or set()) if inspect.isclass(owner) else set()


def _stub_file(cls: type) -> str | None:
    """The stub in ``torch/_C`` that may declare a class of torch's (``torch/_C/__init__.pyi`` for
    ``torch.device`` and ``torch._C.TensorBase``, ``_distributed.pyi`` for ``torch._C._distributed.Shard``)."""
    module = getattr(cls, "__module__", "")
    module = {"torch.distributed.distributed_c10d": "torch._C._distributed_c10d"}.get(module, module)  # re-homed C type
    if module in ("torch", "torch._C"):
        return "__init__"
    if module.startswith("torch._C."):
        return module.split(".", 2)[2]
    return None


def _stub_members(cls: type, members: tuple[str, ...], seen: set[tuple[str, str]] | None = None) -> set[str] | None:
    """Parameters of ``members`` where Python finds them first for ``cls``: along its MRO (a stub class's
    own stub bases right after it), the first class that declares one of them. A Python function there has a
    real signature, so the stubs add nothing (empty set); None when no class declares them."""
    seen = set() if seen is None else seen
    for klass in cls.__mro__:
        # ``__new__`` sits in the class dict as a staticmethod.
        defined = [getattr(klass.__dict__.get(m), "__func__", klass.__dict__.get(m)) for m in members]
        if any(inspect.isfunction(function) for function in defined):
            return set()
        file = _stub_file(klass)
        if file is None or (file, klass.__name__) in seen:
            continue
        found = _stub_class_members(file, klass.__name__, members, seen)
        if found is not None:
            return found
    return None


def _stub_class_members(file: str, owner: str, members: tuple[str, ...], seen: set[tuple[str, str]]) -> set[str] | None:
    import torch

    seen.add((file, owner))
    index = _stub_index(file)
    declared = [index[(owner, member)] for member in members if (owner, member) in index]
    if declared:
        return set().union(*declared)
    for base in sorted(index.get((owner, "<bases>"), ())):
        if (base, "<bases>") in index:  # a class of the same stub
            found = _stub_class_members(file, base, members, seen) if (file, base) not in seen else None
        elif inspect.isclass(runtime := getattr(torch, base, None)):  # ``LongTensor(Tensor)``
            found = _stub_members(runtime, members, seen)
        else:
            found = None
        if found is not None:
            return found
    return None


@functools.cache
def _stub_index(stub: str) -> dict[tuple[str, str], set[str]]:
    """``(class, function) -> parameter names`` of one stub in ``torch/_C`` (class ``""``: module level);
    ``(class, "<bases>")`` lists the class's bases by name."""
    import ast
    from pathlib import Path

    import torch

    index: dict[tuple[str, str], set[str]] = {}
    path = Path(torch.__file__).parent / "_C" / f"{stub}.pyi"
    if not path.is_file():
        return index

    def add(owner: str, function: ast.FunctionDef) -> None:
        arguments = function.args
        names = [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
        names += [a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None]
        index.setdefault((owner, function.name), set()).update(n for n in names if n not in ("self", "cls"))

    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef):
            add("", node)
        elif isinstance(node, ast.ClassDef):
            bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
            index.setdefault((node.name, "<bases>"), set()).update(bases)
            for member in node.body:
                if isinstance(member, ast.FunctionDef):
                    add(node.name, member)
    return index
