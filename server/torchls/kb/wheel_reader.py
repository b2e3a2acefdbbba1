"""Read a torch release's public API statically, from the ``.py`` and ``.pyi`` files of its wheel (stdlib only).

Used by the developer tool :mod:`torchls.kb.version_table`, never by the server. A public dotted name
(``torch.nn.Linear``, ``torch.Tensor.view``, ``torch.cat``) is resolved by following the package's own imports
(``from .modules import *``, ``from .linear import Linear``, ``__all__``) and its stubs
(``torch/_C/_VariableFunctions.pyi``, ``torch/_C/__init__.pyi``, ``torch/nn/functional.pyi``), without importing
anything. Where a name cannot be followed statically the answer is :data:`UNKNOWN`; :data:`ABSENT` only where every
place that could hold it was read and lacks it.
"""

from __future__ import annotations

import ast
import re
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

UNKNOWN = "unknown"
ABSENT = "absent"
_WARNINGS = ("DeprecationWarning", "FutureWarning")


@dataclass
class Symbol:
    """What a name is bound to: ``function`` (its overloads), ``class``, ``module`` or ``value`` (anything else)."""

    kind: str
    module: str = ""
    nodes: list[ast.AST] = field(default_factory=list)
    in_class: bool = False
    owner: str = ""  # the class a method is defined in


@dataclass
class Api:
    """One public name in one release: its parameter names (None where they cannot be read) and deprecation."""

    params: frozenset[str] | None
    deprecated: bool = False
    open: bool = False  # takes **kwargs: a parameter it does not name may still be accepted


class Release:
    """The sources of one release: ``files`` maps ``torch/nn/__init__.py``-style paths to their text."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = files
        self._trees: dict[str, ast.Module | None] = {}
        self._strings: dict[str, frozenset[str]] = {}
        self._found: dict[tuple[str, str], Symbol | str] = {}  # lookups that did not run into a cycle
        self._indexes: dict[str, _FileIndex] = {}
        self._exports: dict[str, set[str] | None] = {}
        self._self_names: dict[int, frozenset[str]] = {}  # id(ClassDef) -> what its methods set on self

    @classmethod
    def from_wheel(cls, wheel: Path) -> Release:
        """Read only the ``.py``/``.pyi`` members under ``torch/`` straight from the zip."""
        files: dict[str, str] = {}
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.startswith("torch/") and name.endswith((".py", ".pyi")):
                    files[name] = archive.read(name).decode("utf-8", errors="replace")
        return cls(files)

    # ------------------------------------------------------------------------------------------ modules

    def module_files(self, module: str) -> list[tuple[str, bool]]:
        """The files of ``module`` (its ``.py`` and ``.pyi``) with whether each is a package ``__init__``."""
        base = module.replace(".", "/")
        candidates = [(f"{base}/__init__.py", True), (f"{base}/__init__.pyi", True), (f"{base}.py", False)]
        candidates.append((f"{base}.pyi", False))
        return [(path, package) for path, package in candidates if path in self.files]

    def is_module(self, module: str) -> bool:
        return bool(self.module_files(module))

    def tree_of(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            try:
                self._trees[path] = ast.parse(self.files[path])
            except (SyntaxError, ValueError):
                self._trees[path] = None
            if self._trees[path] is not None:
                _mark_definitions(self._trees[path], path)  # type: ignore[arg-type]
        return self._trees[path]

    # ------------------------------------------------------------------------------------------ public API

    def api(self, dotted: str) -> Api | str:
        """``dotted`` in this release: an :class:`Api`, :data:`ABSENT` or :data:`UNKNOWN`."""
        found = self.resolve(dotted)
        if isinstance(found, str):
            return found
        params = _params(self, found)
        open_ = params is not None and any(name.startswith("**") for name in params)
        names = None if params is None else frozenset(name.lstrip("*") for name in params)
        return Api(names, _deprecated(found), open_)

    def resolve(self, dotted: str) -> Symbol | str:
        parts = dotted.split(".")
        if not self.is_module(parts[0]):
            return UNKNOWN
        # Attribute by attribute from the top package, as Python does: ``torch.nn.utils.spectral_norm`` is the
        # function that ``torch/nn/utils/__init__.py`` imports, not the module of the same name.
        found: Symbol | str = Symbol("module", parts[0])
        for part in parts[1:]:
            found = self.attribute(found, part, set())  # type: ignore[arg-type]
            if isinstance(found, str):
                return found
        return found

    def attribute(self, owner: Symbol, name: str, seen: set) -> Symbol | str:
        if owner.kind == "module":
            return self.lookup(owner.module, name, seen)
        if owner.kind == "class":
            return self._class_attribute(owner, name, seen)
        return UNKNOWN

    # ------------------------------------------------------------------------------------------ lookups

    def lookup(self, module: str, name: str, seen: set) -> Symbol | str:
        """``name`` at the top level of ``module`` (its ``.py`` and ``.pyi`` together)."""
        key = (module, name)
        if key in self._found:
            return self._found[key]
        if key in seen:
            return UNKNOWN
        seen = seen | {key}
        paths = self.module_files(module)
        if not paths:
            return UNKNOWN
        results = [self._lookup_in_file(module, path, package, name, seen) for path, package in paths]
        found = _merge(results)
        if not isinstance(found, Symbol) and self.is_module(f"{module}.{name}"):
            found = Symbol("module", f"{module}.{name}")
        if found != UNKNOWN:  # an unknown may come from a cycle on this path only
            self._found[key] = found
        return found

    def _lookup_in_file(self, module: str, path: str, package: bool, name: str, seen: set) -> Symbol | str:
        index = self._index(path)
        if index is None:
            return UNKNOWN
        functions: list[ast.AST] = []
        bound: list[Symbol | str] = []
        stars = [_absolute(module, package, node) for node in index.stars]
        # A module __getattr__ (lazy submodules, deprecated aliases) serves the names it lists.
        dynamic = index.has_getattr and name in self._strings_of(path)
        for node in index.bindings.get(name, ()):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append(node)
            elif isinstance(node, ast.ClassDef):
                bound.append(Symbol("class", module, [node]))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    followed = self.expression(module, node.value, seen) if node.value is not None else UNKNOWN
                    bound.append(followed if isinstance(followed, Symbol) else Symbol("value", module))
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(module, package, node)
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    elif (alias.asname or alias.name) == name and not self._in_release(source):
                        bound.append(Symbol("value", module))  # from math import inf: outside torch, it exists
                    elif (alias.asname or alias.name) == name:
                        inner = self.lookup(source, alias.name, seen)
                        if not isinstance(inner, Symbol) and self.is_module(f"{source}.{alias.name}"):
                            inner = Symbol("module", f"{source}.{alias.name}")
                        bound.append(inner)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if (alias.asname or alias.name.split(".")[0]) == name:
                        target = alias.name if alias.asname else name
                        known = self.is_module(target) or not self._in_release(target)
                        bound.append(Symbol("module", target) if known else UNKNOWN)
        if functions:
            return Symbol("function", module, functions)
        symbols = [b for b in bound if isinstance(b, Symbol)]
        if symbols:  # the last binding wins, but ``X = X`` (a self-reference) says nothing new
            return ([s for s in symbols if s.kind != "value"] or symbols)[-1]
        if bound:
            return UNKNOWN
        results: list[Symbol | str] = []
        for source in stars:
            exported = self._all(source)
            if exported is not None and name not in exported:
                continue
            if exported is None and name.startswith("_"):
                continue
            results.append(self.lookup(source, name, seen))
        found = _merge(results) if results else ABSENT
        return UNKNOWN if found == ABSENT and dynamic else found

    def _index(self, path: str) -> _FileIndex | None:
        """The file's top-level statements by the names they bind: a lookup reads only those."""
        if path not in self._indexes:
            tree = self.tree_of(path)
            if tree is None:
                return None
            self._indexes[path] = _FileIndex(tree)
        return self._indexes[path]

    def _strings_of(self, path: str) -> frozenset[str]:
        if path not in self._strings:
            tree = self.tree_of(path)
            nodes = ast.walk(tree) if tree else ()
            self._strings[path] = frozenset(
                n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)
            )
        return self._strings[path]

    def _in_release(self, module: str) -> bool:
        return module == "torch" or module.startswith("torch.")

    def _all(self, module: str) -> set[str] | None:
        """A module's ``__all__`` where it is a literal list (``+=`` of literals included), else None."""
        if module not in self._exports:
            self._exports[module] = self._read_all(module)
        return self._exports[module]

    def _read_all(self, module: str) -> set[str] | None:
        names: set[str] | None = None
        for path, _ in self.module_files(module):
            tree = self.tree_of(path)
            for node in top_level(tree.body if tree else []):
                target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
                if isinstance(node, ast.AugAssign):
                    target = node.target
                if isinstance(target, ast.Name) and target.id == "__all__":
                    try:
                        value = ast.literal_eval(node.value)  # type: ignore[attr-defined]
                    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                        return None
                    names = (names or set()) | set(value)
        return names

    def expression(self, module: str, node: ast.AST, seen: set) -> Symbol | str:
        if isinstance(node, ast.Name):
            return self.lookup(module, node.id, seen)
        if isinstance(node, ast.Attribute):
            owner = self.expression(module, node.value, seen)
            return owner if isinstance(owner, str) else self.attribute(owner, node.attr, seen)
        if isinstance(node, ast.Subscript):
            return self.expression(module, node.value, seen)
        if isinstance(node, ast.Call) and name_of(node.func) == "_add_docstr" and node.args:
            # relu = _add_docstr(torch.relu, "..."): the function it documents, else the docstring's first line
            # (``fft(input, n=None, dim=-1, norm=None) -> Tensor``) where that function is a compiled one.
            target = self.expression(module, node.args[0], seen)
            if isinstance(target, Symbol) and target.kind == "function":
                return target
            documented = _docstring_signature(node.args[1] if len(node.args) > 1 else None)
            return Symbol("function", module, [documented]) if documented else target
        if isinstance(node, ast.Call) and name_of(node.func) == "boolean_dispatch":  # max_pool2d
            branches = [k.value for k in node.keywords if k.arg in ("if_true", "if_false")]
            return _merge([self.expression(module, branch, seen) for branch in branches])
        return UNKNOWN

    def _class_attribute(self, owner: Symbol, name: str, seen: set) -> Symbol | str:
        cls = owner.nodes[0]
        assert isinstance(cls, ast.ClassDef)
        functions: list[ast.AST] = []
        for node in top_level(cls.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                functions.append(node)
            elif isinstance(node, ast.ClassDef) and node.name == name:
                return Symbol("class", owner.module, [node])
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return Symbol("value", owner.module)
        if functions:
            return Symbol("function", owner.module, functions, in_class=True, owner=cls.name)
        if name in self._names_set_on_self(cls):
            return Symbol("value", owner.module)
        results: list[Symbol | str] = []
        metaclass = [k.value for k in cls.keywords if k.arg == "metaclass"]  # class properties live there
        for base in [*cls.bases, *metaclass]:
            if isinstance(base, ast.Name) and base.id in ("object", "Generic", "Protocol", "NamedTuple", "type"):
                continue
            resolved = self.expression(owner.module, base, seen)
            if isinstance(resolved, Symbol) and resolved.kind == "class":
                results.append(self._class_attribute(resolved, name, seen))
            else:
                results.append(UNKNOWN)
        return _merge(results) if results else ABSENT

    def _names_set_on_self(self, cls: ast.ClassDef) -> frozenset[str]:
        if id(cls) not in self._self_names:
            self._self_names[id(cls)] = _set_on_self(cls)
        return self._self_names[id(cls)]


class _FileIndex:
    """One file's top-level statements (:func:`top_level`) by the name each binds, in file order."""

    def __init__(self, tree: ast.Module) -> None:
        self.bindings: dict[str, list[ast.stmt]] = {}
        self.stars: list[ast.ImportFrom] = []
        self.has_getattr = False
        for node in top_level(tree.body):
            for name in self._bound_by(node):
                self.bindings.setdefault(name, []).append(node)

    def _bound_by(self, node: ast.stmt) -> Iterator[str]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.has_getattr = self.has_getattr or node.name == "__getattr__"
            yield node.name
        elif isinstance(node, ast.ClassDef):
            yield node.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            yield from dict.fromkeys(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            if any(alias.name == "*" for alias in node.names):
                self.stars.append(node)
            yield from dict.fromkeys(alias.asname or alias.name for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Import):
            yield from dict.fromkeys(alias.asname or alias.name.split(".")[0] for alias in node.names)


_DOC_SIGNATURE = re.compile(r"\s*[\w.]+\((.*)\)\s*(?:->.*)?$")


def _docstring_signature(node: ast.AST | None) -> ast.FunctionDef | None:
    """The signature on the first line of a docstring passed to ``_add_docstr``, as a function definition."""
    while True:  # r"""...""".format(**common_args) + """...""": the first literal
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            node = node.func.value
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            node = node.left
        else:
            break
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return None
    first = node.value.strip().split("\n", 1)[0].rstrip(":")
    match = _DOC_SIGNATURE.match(first)
    if not match:
        return None
    try:
        function = ast.parse(f"def _({match.group(1)}): pass").body[0]
    except SyntaxError:
        return None
    return function if isinstance(function, ast.FunctionDef) else None


def _mark_definitions(tree: ast.Module, path: str) -> None:
    """Tag the classes and functions a file defines with it (``node.source_path``): readers that show signatures
    quote their source and, where a stub and an implementation both define a name, prefer the stub's."""
    for node in top_level(tree.body):
        if isinstance(node, ast.ClassDef):
            node.source_path = path  # type: ignore[attr-defined]
            for member in top_level(node.body):
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    member.source_path = path  # type: ignore[attr-defined]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.source_path = path  # type: ignore[attr-defined]


def _set_on_self(cls: ast.ClassDef) -> frozenset[str]:
    """The names a method assigns on ``self`` (``self.<name> = ...``) or registers (``self.register_buffer("<name>",
    ...)``)."""
    names: set[str] = set()
    for node in ast.walk(cls):
        stored = isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
        if stored and isinstance(node.value, ast.Name) and node.value.id == "self":  # type: ignore[attr-defined]
            names.add(node.attr)  # type: ignore[attr-defined]
        if isinstance(node, ast.Call) and name_of(node.func) in ("register_buffer", "register_parameter"):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
    return frozenset(names)


def _merge(results: list[Symbol | str]) -> Symbol | str:
    """Several places that could hold a name: functions' overloads join; any symbol wins over unknown over absent."""
    symbols = [r for r in results if isinstance(r, Symbol)]
    functions = [s for s in symbols if s.kind == "function"]
    if functions:
        first = functions[0]
        return Symbol("function", first.module, [n for s in functions for n in s.nodes], first.in_class, first.owner)
    if symbols:
        classes = [s for s in symbols if s.kind == "class"]
        if len(classes) > 1:
            return Symbol("class", classes[0].module, [n for s in classes for n in s.nodes])
        return classes[0] if classes else symbols[0]
    return UNKNOWN if UNKNOWN in results or not results else ABSENT


def top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements run at import time: into ``if``/``try``/``with`` blocks (both branches), not into functions."""
    for node in body:
        if isinstance(node, ast.If):
            yield from top_level(node.body)
            yield from top_level(node.orelse)
        elif isinstance(node, ast.Try):
            yield from top_level(node.body)
            for handler in node.handlers:
                yield from top_level(handler.body)
            yield from top_level(node.orelse)
            yield from top_level(node.finalbody)
        elif isinstance(node, ast.With):
            yield from top_level(node.body)
        else:
            yield node


def _absolute(module: str, package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    keep = len(parts) - node.level + (1 if package else 0)
    base = parts[: max(keep, 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _arguments(function: ast.AST, drop_self: bool) -> set[str]:
    args = function.args  # type: ignore[attr-defined]
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    if drop_self and positional and positional[0] in ("self", "cls") and not _is_static(function):
        positional = positional[1:]
    names = set(positional) | {a.arg for a in args.kwonlyargs}
    if args.vararg is not None:
        names.add("*" + args.vararg.arg)
    if args.kwarg is not None:
        names.add("**" + args.kwarg.arg)
    return names


def _is_static(function: ast.AST) -> bool:
    return any(name_of(d) == "staticmethod" for d in function.decorator_list)  # type: ignore[attr-defined]


def name_of(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _params(release: Release, symbol: Symbol) -> frozenset[str] | None:
    if symbol.kind == "function":
        names: set[str] = set()
        for node in symbol.nodes:
            names |= _arguments(node, symbol.in_class)
        return frozenset(names)
    if symbol.kind == "class":
        found = [release._class_attribute(Symbol("class", symbol.module, [n]), "__init__", set()) for n in symbol.nodes]
        init = _merge(found)
        if init == ABSENT:
            return frozenset()
        if isinstance(init, Symbol) and init.kind == "function":
            return frozenset(n for node in init.nodes for n in _arguments(node, True))
    return None


def _deprecated(symbol: Symbol) -> bool:
    """``@deprecated(...)`` on the definition, or an unconditional Deprecation/FutureWarning in its body (a warning
    inside an ``if`` is usually about one argument, not the API)."""
    nodes = list(symbol.nodes)
    if symbol.kind == "class":
        for cls in symbol.nodes:
            nodes += [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]  # type: ignore[attr-defined]
    for node in nodes:
        if any(name_of(d) == "deprecated" for d in getattr(node, "decorator_list", [])):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(_warns(s) for s in node.body):
            return True
    return False


def _warns(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
        return False
    call = statement.value
    if name_of(call.func) not in ("warn", "warn_once"):
        return False
    categories = call.args[1:2] + [k.value for k in call.keywords if k.arg == "category"]
    if not any(name_of(c) in _WARNINGS for c in categories):
        return False
    # "X should not be instantiated" is a FutureWarning about a use, not a deprecated API: the text must say so.
    texts = [n.value for n in ast.walk(call.args[0]) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    text = " ".join(texts).lower() if call.args else ""
    return not texts or "deprecat" in text or "will be removed" in text
