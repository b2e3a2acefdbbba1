"""Qualified names of the symbols in a file, resolved statically through its imports.

This is the fast path of hover: no jedi, just the file's ``ast``. It knows

- the import-alias table (``import torch.nn as nn``, ``from torch.nn import functional as F`` ...), so
  ``F.softmax`` is ``torch.nn.functional.softmax``;
- the simple inference it can do for free: ``x = torch.randn(...)`` makes ``x.view`` a ``torch.Tensor.view``,
  ``self.fc = nn.Linear(...)`` makes ``self.fc`` an instance of ``torch.nn.Linear``, ``model = Net()`` with
  ``class Net(nn.Module)`` makes ``model.parameters`` a ``torch.nn.Module.parameters``, ``q, k, v = qkv.unbind(0)``
  and ``for t in x.split(4)`` make ``q`` and ``t`` tensors (unpacking or iterating a tuple of tensors, or a tensor).

Whatever it cannot prove it leaves unresolved, and the caller asks jedi.
"""

from __future__ import annotations

import ast
import bisect
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from torchls.core import facts
from torchls.core.call_sites import CallSiteInference
from torchls.core.imports import file_imports
from torchls.core.parsing import ParsedSource
from torchls.core.parts import (
    TENSOR,
    PartsInference,
    Value,
    as_value,
    generic_name,
    is_int_literal,
    is_module,
    is_none_literal,
    pick,
    unquoted,
)
from torchls.core.parts import (
    common as _common,
)
from torchls.core.parts import (
    is_tensor as _is_tensor,
)
from torchls.core.text import Position, SourceText, Span

__all__ = ["ModuleIndex", "Target", "Value"]

TargetKind = Literal["reference", "instance", "keyword"]

# The way from an unpacked or iterated value to the part a target gets: one step per level of unpacking, each
# the element's position, or None where it is not known (any element of a ``for`` loop, those after a ``*x``).
_Path = tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class Target:
    """What the cursor points at.

    ``reference``: a name that *is* a torch symbol (``nn.Linear``, ``x.view``); ``qualname`` is its name.
    ``instance``: a variable or attribute holding an instance of a torch class (``self.fc``); ``qualname`` is
    the class. ``keyword``: a keyword argument name in a call; ``qualname`` is the callee when known
    statically, ``keyword`` the argument, ``callee_end`` the end of the callee expression for jedi.
    """

    kind: TargetKind
    span: Span
    qualname: str | None
    keyword: str | None = None
    callee_end: Position | None = None


@dataclass(slots=True)
class _ClassInfo:
    node: ast.ClassDef
    members: set[str] = field(default_factory=set)
    # ``self.x = expr`` in a method; a Value where the call proves the kind (``register_buffer`` -> Tensor).
    self_bindings: dict[str, list[ast.expr | Value | None]] = field(default_factory=lambda: defaultdict(list))


@dataclass(slots=True)
class _Binding:
    line: int  # 0-based line of the binding statement, for "latest binding before the cursor"
    value: ast.expr | None  # None: bound by something we do not infer (with, import...) or by ``iterated``
    annotation: ast.expr | None = None
    # Tuple unpacking and ``for`` targets: the name holds the part of ``iterated`` that ``path`` leads to.
    iterated: ast.expr | None = None
    path: _Path = ()
    last_line: int | None = None  # a ``for`` target holds an element only up to the end of the loop's body
    parameter_of: ast.FunctionDef | ast.AsyncFunctionDef | None = None  # a plain parameter of this function
    defines: ast.FunctionDef | ast.AsyncFunctionDef | None = None  # ``def name(...)``: the function it binds
    inclusive: bool = False  # a comprehension's target: seen on its own line too (``[p for p in ps if p.x]``)
    imported: bool = False  # bound by an import statement

    def seen_from(self, line: int) -> bool:
        """True when code at ``line`` comes after this binding."""
        return self.line < line or (self.inclusive and self.line == line)

    def visible_at(self, line: int) -> bool:
        """For a ``for`` or comprehension target: True while it holds an element (inside the loop)."""
        return self.seen_from(line) and (self.last_line is None or line <= self.last_line)


@dataclass(frozen=True, slots=True)
class _Narrowing:
    """The body of ``if isinstance(name, kind):`` in ``scope``: lines after ``first`` up to ``last``."""

    scope: ast.AST
    first: int
    last: int
    kind: ast.expr


@dataclass(slots=True)
class _Identifier:
    start: int
    end: int
    node: ast.AST
    scope: ast.AST  # the innermost enclosing FunctionDef/Lambda or the Module
    klass: ast.ClassDef | None  # the class whose method encloses it, for ``self.x``
    parent: ast.AST | None = None  # the Call of a keyword, the Import/ImportFrom of an alias
    segment: str | None = None  # for dotted import names: the dotted prefix up to this segment


class ModuleIndex(PartsInference, CallSiteInference):
    """Everything the fast path needs about one version of one file; build once, query many times."""

    def __init__(
        self,
        parsed: ParsedSource,
        source: SourceText,
        module: tuple[str, bool] | None = None,
        project_returns: Callable[[str], str | None] | None = None,
    ) -> None:
        """``module``: this file's dotted module name and whether it is a package's ``__init__`` (for relative
        imports); ``project_returns``: the torch class a function of another project module is annotated to
        return, by qualified name (see :mod:`torchls.project`)."""
        self.source = source
        self.tree = parsed.tree
        self.module = module
        self._project_returns = project_returns
        self._project_results: dict[str, str | None] = {}
        imports = self._file_imports = file_imports(parsed.tree, module)
        self.imports: dict[str, str] = imports.table
        self.project_imports: dict[str, str] = imports.relative  # relative imports' names -> absolute names
        self._imported_modules: dict[ast.AST, set[str]] = defaultdict(set)  # top-level modules imported, by scope
        self.classes: dict[str, _ClassInfo] = {}
        self._bindings: dict[ast.AST, dict[str, list[_Binding]]] = defaultdict(lambda: defaultdict(list))
        self._identifiers: dict[int, list[_Identifier]] = defaultdict(list)
        self._scopes: list[tuple[int, int, ast.AST, ast.ClassDef | None]] = []  # functions: lines, node, class
        self._enclosing: dict[ast.AST, ast.AST] = {}  # a function or lambda -> the scope it is defined in
        self._function_results: dict[ast.AST, Value] = {}  # functions proven to return a torch value
        self._branch_marks: dict[int, dict[int, int]] | None = None  # line -> {if statement: branch}; see below
        self._if_else: list[ast.If] = []  # every ``if`` with an ``else`` (or ``elif``), for _branch_marks
        self._narrowings: dict[str, list[_Narrowing]] = defaultdict(list)  # ``if isinstance(name, C):`` bodies
        self._name_uses: dict[str, list[ast.Name]] = defaultdict(list)  # every load of each plain name
        self._calls: dict[str, list[ast.Call]] = defaultdict(list)  # every call of each plain name
        self._all_calls: list[tuple[ast.Call, ast.AST, ast.ClassDef | None]] = []  # with scope and class
        self._call_by_func: dict[int, ast.Call] = {}  # a call by the id of its callee expression
        self._attribute_loads: dict[str, list[ast.Attribute]] = defaultdict(list)  # ``x.name`` loads, by name
        self._method_class: dict[ast.AST, ast.ClassDef] = {}  # each method -> its class
        # What ``xs.append(...)`` / ``self.layers.append(...)`` add to a list: None once something unknown is.
        self._appends: dict[tuple, list[ast.expr] | None] = {}
        self._init_call_sites()
        self.memo: dict[tuple, object] = {}  # proven values and parts, by question (never a None: see infer)
        self._analysis: Callable[[ast.AST], tuple[str, str | None] | None] | None = None  # see use_analysis
        # Built from part of the file only (core/first_look.py): parameters are not read from calls it cannot see.
        self.partial = False
        self.steps = 0  # taken by the current question (see PartsInference.step)
        self._torch_uses: tuple[frozenset[str], frozenset[str], frozenset[str]] | None = None
        self._statement_lines: list[int] | None = None  # built on first use
        self._collect(self.tree, scope=self.tree, klass=None, method_of=None)

    # ----------------------------------------------------------------------------------------- building

    def _collect(
        self, node: ast.AST, scope: ast.AST, klass: ast.ClassDef | None, method_of: ast.ClassDef | None
    ) -> None:
        """One walk that records imports, bindings, classes and identifier positions."""
        for child in ast.iter_child_nodes(node):
            self._visit(child, scope, klass, method_of)

    def _visit(self, node: ast.AST, scope: ast.AST, klass: ast.ClassDef | None, method_of: ast.ClassDef | None) -> None:
        kind = type(node)
        if kind in _LEAVES:
            return
        if kind not in _RECORDED:  # most nodes: only their children matter (the elif chain below costs)
            for child in ast.iter_child_nodes(node):
                self._visit(child, scope, klass, method_of)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            self._record_import(node, scope)
        elif isinstance(node, ast.ClassDef):
            info = self.classes.setdefault(node.name, _ClassInfo(node))
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    info.members.add(stmt.name)
                elif isinstance(stmt, ast.Assign | ast.AnnAssign):
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    info.members.update(t.id for t in targets if isinstance(t, ast.Name))
            self._bind(scope, node.name, node.lineno, None)
            for base in [*node.bases, *node.decorator_list, *(k.value for k in node.keywords)]:
                self._visit(base, scope, klass, method_of)
            for stmt in node.body:
                # Methods of this class see ``self`` as an instance of it.
                self._visit(stmt, scope, node, node)
            return
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            self._enclosing[node] = scope
            if method_of is not None:
                self._method_class[node] = method_of
            if not isinstance(node, ast.Lambda):
                self._bindings[scope][node.name].append(_Binding(node.lineno - 1, None, defines=node))
                self._scopes.append((node.lineno - 1, self._extended_end(node), node, method_of))
                for decorator in node.decorator_list:
                    self._visit(decorator, scope, klass, method_of)
                if node.returns is not None:
                    self._visit(node.returns, scope, klass, method_of)
            args = node.args
            for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
                self._visit(default, scope, klass, method_of)
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is None:
                    continue
                plain = arg is not args.vararg and arg is not args.kwarg and not isinstance(node, ast.Lambda)
                function = node if plain else None  # its calls in the file say what it holds (see call_sites)
                self._bindings[node][arg.arg].append(
                    _Binding(node.lineno - 1, None, arg.annotation, parameter_of=function)  # type: ignore[arg-type]
                )
                if arg.annotation is not None:
                    self._visit(arg.annotation, node, klass, method_of)
            body = node.body if isinstance(node.body, list) else [node.body]
            inner_class = method_of if not isinstance(node, ast.Lambda) else klass
            for stmt in body:
                self._visit(stmt, node, inner_class, None)
            return
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind_target(target, scope, klass, node.value, node.lineno)
        elif isinstance(node, ast.AnnAssign):
            self._bind_target(node.target, scope, klass, node.value, node.lineno, node.annotation)
        elif isinstance(node, ast.For):
            self._bind_part(node.target, scope, klass, node.iter, (None,), node.lineno, self._loop_body_end(node))
        elif isinstance(node, ast.AugAssign | ast.AsyncFor):
            target = node.target
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    self._bind(scope, name.id, node.lineno, None)
            if isinstance(node, ast.AugAssign):  # ``xs += [...]``: the list may now hold anything
                self._appends[self._container_key(node.target, scope)] = None
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            last = (node.end_lineno or node.lineno) - 1
            for generator in node.generators:
                self._bind_part(
                    generator.target, scope, klass, generator.iter, (None,), node.lineno, last, inclusive=True
                )
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            for name in ast.walk(node.optional_vars):
                if isinstance(name, ast.Name):
                    self._bind(scope, name.id, name.lineno, None)
        elif isinstance(node, ast.NamedExpr):
            self._bind(scope, node.target.id, node.lineno, node.value)
        elif isinstance(node, ast.Name | ast.Attribute):
            self._record_identifier(node, scope, klass)
        elif isinstance(node, ast.If):
            if node.orelse:
                self._if_else.append(node)
            self._record_narrowing(node, scope)
        elif isinstance(node, ast.Call):
            self._record_registration(node, klass)
            self._record_append(node, scope)
            self._all_calls.append((node, scope, klass))
            self._call_by_func[id(node.func)] = node
            if isinstance(node.func, ast.Name):
                self._calls[node.func.id].append(node)
            for keyword in node.keywords:
                if keyword.arg is not None:
                    start = self.source.position_from_ast(keyword.lineno, keyword.col_offset)
                    self._identifiers[start.line].append(
                        _Identifier(start.column, start.column + len(keyword.arg), keyword, scope, klass, node)
                    )
        self._collect(node, scope, klass, method_of)

    def _record_registration(self, call: ast.Call, klass: ast.ClassDef | None) -> None:
        """``self.register_buffer('name', tensor)`` binds ``self.name`` to a tensor (a parameter for
        ``register_parameter``), as an assignment would; a ``None`` value may stay None, so proves nothing."""
        func = call.func
        if not (
            klass is not None
            and isinstance(func, ast.Attribute)
            and func.attr in ("register_buffer", "register_parameter")
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and len(call.args) >= 2
            and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str)
        ):
            return
        value = call.args[1]
        known = not (isinstance(value, ast.Constant) and value.value is None)
        kind = facts.TENSOR if func.attr == "register_buffer" else "torch.nn.Parameter"
        self.classes.setdefault(klass.name, _ClassInfo(klass)).self_bindings[call.args[0].value].append(
            Value(kind) if known else None
        )

    def _record_narrowing(self, node: ast.If, scope: ast.AST) -> None:
        """``if isinstance(h, torch.Tensor):``: inside the body, ``h`` is one (until it is bound again)."""
        test = node.test
        if (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance"
            and len(test.args) == 2
            and isinstance(test.args[0], ast.Name)
            and isinstance(test.args[1], ast.Name | ast.Attribute)
        ):
            last = (node.body[-1].end_lineno or node.body[-1].lineno) - 1
            narrowing = _Narrowing(scope, node.lineno - 1, last, test.args[1])
            self._narrowings[test.args[0].id].append(narrowing)

    def _narrowed(self, name: str, where: _Identifier, line: int) -> Value | None:
        """The class an ``isinstance`` test proves ``name`` is at ``line`` (the binding it tested still holds)."""
        for narrowing in self._narrowings.get(name, ()):
            if narrowing.scope is not where.scope or not narrowing.first < line <= narrowing.last:
                continue
            binding = self._latest_binding(name, where, line)
            if binding is not None and binding.line > narrowing.first:
                continue  # bound again inside the body
            qualname = self.qualify(narrowing.kind)
            if (
                qualname is not None
                and _is_torch_name(qualname)
                and qualname[len(qualname.rsplit(".", 1)[0]) + 1 :][:1].isupper()
            ):
                return Value(qualname)
            if isinstance(narrowing.kind, ast.Name) and narrowing.kind.id in self.classes:
                base = self._torch_base(narrowing.kind.id)
                return Value(base, narrowing.kind.id) if base else None
        return None

    @staticmethod
    def _container_key(target: ast.expr, scope: ast.AST) -> tuple:
        """How :attr:`_appends` names a list: a name in a scope, or a ``self`` attribute of any class."""
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            return ("self", target.attr)
        return ("name", id(scope), target.id) if isinstance(target, ast.Name) else ("other",)

    def _record_append(self, call: ast.Call, scope: ast.AST) -> None:
        """``xs.append(x)``, ``self.layers.extend(more)``, ``xs.insert(0, x)``: what a list is given."""
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in ("append", "extend", "insert"):
            return
        key = self._container_key(func.value, scope)
        added = self._appends.setdefault(key, [])
        if added is None:
            return
        argument = call.args[-1] if call.args and not call.keywords else None
        if argument is None or isinstance(argument, ast.Starred) or (func.attr == "insert") != (len(call.args) == 2):
            self._appends[key] = None
        elif func.attr == "extend":
            added.append(ast.Starred(value=argument, lineno=argument.lineno))  # its elements
        else:
            added.append(argument)

    def _appended(self, key: tuple) -> list[ast.expr] | None:
        """What the file appends to the list ``key`` names (see :meth:`_container_key`); None when unknown."""
        return self._appends.get(key, [])

    def _bind(self, scope: ast.AST, name: str, lineno: int, value: ast.expr | None) -> None:
        self._bindings[scope][name].append(_Binding(lineno - 1, value))

    def _bind_target(
        self,
        target: ast.expr,
        scope: ast.AST,
        klass: ast.ClassDef | None,
        value: ast.expr | None,
        lineno: int,
        annotation: ast.expr | None = None,
    ) -> None:
        if isinstance(target, ast.Name):
            self._bindings[scope][target.id].append(_Binding(lineno - 1, value, annotation))
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and klass is not None
        ):
            self.classes.setdefault(klass.name, _ClassInfo(klass)).self_bindings[target.attr].append(value)
        elif isinstance(target, ast.Tuple | ast.List) and value is not None:
            self._bind_part(target, scope, klass, value, (), lineno)
        else:  # subscripts, other objects' attributes: bound to something we do not infer
            self._bind_unknown(target, scope, klass, lineno)

    def _bind_part(
        self,
        target: ast.expr,
        scope: ast.AST,
        klass: ast.ClassDef | None,
        iterated: ast.expr,
        path: _Path,
        lineno: int,
        last_line: int | None = None,
        inclusive: bool = False,
    ) -> None:
        """Bind the names of an unpacking or ``for`` target to the parts of ``iterated`` they receive; which
        parts are tensors is decided when a name is inferred."""
        if isinstance(target, ast.Name):
            binding = _Binding(lineno - 1, None, None, iterated, path, last_line, inclusive=inclusive)
            self._bindings[scope][target.id].append(binding)
        elif isinstance(target, ast.Tuple | ast.List):
            after_star = False
            for index, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):  # gets a list of the remaining elements
                    self._bind_unknown(element.value, scope, klass, lineno)
                    after_star = True
                else:
                    position = None if after_star else index
                    self._bind_part(element, scope, klass, iterated, (*path, position), lineno, last_line, inclusive)
        else:
            self._bind_unknown(target, scope, klass, lineno)

    def _bind_unknown(self, target: ast.expr, scope: ast.AST, klass: ast.ClassDef | None, lineno: int) -> None:
        """Bind every name and ``self`` attribute that ``target`` stores to to a value we do not infer."""
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self._bind(scope, node.id, lineno, None)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and klass is not None
            ):
                self.classes.setdefault(klass.name, _ClassInfo(klass)).self_bindings[node.attr].append(None)

    def _record_identifier(self, node: ast.Name | ast.Attribute, scope: ast.AST, klass: ast.ClassDef | None) -> None:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            self._attribute_loads[node.attr].append(node)
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                self._name_uses[node.id].append(node)
            start = self.source.position_from_ast(node.lineno, node.col_offset)
            self._identifiers[start.line].append(
                _Identifier(start.column, start.column + len(node.id), node, scope, klass)
            )
            return
        # The attribute's own name ends where the node ends; its start is found backwards from there.
        end = self.source.position_from_ast(node.end_lineno or node.lineno, node.end_col_offset or 0)
        self._identifiers[end.line].append(_Identifier(end.column - len(node.attr), end.column, node, scope, klass))

    def _record_import(self, node: ast.Import | ast.ImportFrom, scope: ast.AST) -> None:
        line_text = self.source.line(node.lineno - 1)
        if isinstance(node, ast.ImportFrom):
            if node.level:  # ``from ._manipulate import adapt_input_conv``: the project's own module
                for alias in node.names:
                    if alias.name != "*":
                        self._bindings[scope][alias.asname or alias.name].append(_Binding(node.lineno - 1, None))
                return
            if not node.module:
                return
            self._record_dotted(node.module, node, line_text, node.lineno, node.col_offset)
            for alias in node.names:
                if alias.name == "*":
                    continue
                qualname = f"{node.module}.{alias.name}"
                local = alias.asname or alias.name
                self._register_import(local, qualname, scope, node.lineno)
                self._record_alias(alias, qualname, node)
            return
        for alias in node.names:
            if alias.asname:
                self._register_import(alias.asname, alias.name, scope, node.lineno)
            else:  # ``import torch.nn`` binds ``torch``
                top = alias.name.split(".", 1)[0]
                self._register_import(top, top, scope, node.lineno)
            self._record_dotted(alias.name, node, self.source.line(alias.lineno - 1), alias.lineno, alias.col_offset)
            if alias.asname:
                self._record_alias(alias, alias.name, node, only_asname=True)

    def _register_import(self, local: str, qualname: str, scope: ast.AST, lineno: int) -> None:
        self._imported_modules[scope].add(qualname.split(".", 1)[0])
        self._bindings[scope][local].append(_Binding(lineno - 1, None, imported=True))

    def _record_dotted(self, dotted: str, node: ast.AST, line_text: str, lineno: int, col_offset: int) -> None:
        """Record each segment of a dotted module name in an import statement as its own identifier."""
        from_column = self.source.position_from_ast(lineno, col_offset).column
        start = line_text.find(dotted, from_column)
        if start < 0:  # split over lines with backslashes or parentheses: not worth a hover
            return
        offset = start
        for index, segment in enumerate(dotted.split(".")):
            prefix = ".".join(dotted.split(".")[: index + 1])
            self._identifiers[lineno - 1].append(
                _Identifier(offset, offset + len(segment), node, self.tree, None, node, prefix)
            )
            offset += len(segment) + 1

    def _record_alias(self, alias: ast.alias, qualname: str, node: ast.AST, only_asname: bool = False) -> None:
        line = alias.lineno - 1
        text = self.source.line(line)
        column = self.source.position_from_ast(alias.lineno, alias.col_offset).column
        if not only_asname:
            self._identifiers[line].append(
                _Identifier(column, column + len(alias.name), alias, self.tree, None, node, qualname)
            )
        if alias.asname:
            end = self.source.position_from_ast(alias.end_lineno or alias.lineno, alias.end_col_offset or 0).column
            if text[end - len(alias.asname) : end] == alias.asname:
                self._identifiers[line].append(
                    _Identifier(end - len(alias.asname), end, alias, self.tree, None, node, qualname)
                )

    def _extended_end(self, node: ast.AST) -> int:
        """A function's last line, extended over the blank or deeper-indented lines after it: the line being
        typed does not parse, so the parsed function may end just before the cursor."""
        end = (getattr(node, "end_lineno", None) or node.lineno) - 1  # type: ignore[attr-defined]
        return self._extend_over_indented(end, node.col_offset)  # type: ignore[attr-defined]

    def _loop_body_end(self, loop: ast.For) -> int:
        """The last line of a loop's body, extended like :meth:`_extended_end` (``else:`` stops it)."""
        last = loop.body[-1]
        return self._extend_over_indented((last.end_lineno or last.lineno) - 1, loop.col_offset)

    def _extend_over_indented(self, end: int, indent: int) -> int:
        """``end`` moved down over the blank lines and the lines indented deeper than ``indent`` after it."""
        lines = self.source.lines
        while end + 1 < len(lines):
            following = lines[end + 1]
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            end += 1
        return end

    # ----------------------------------------------------------------------------------------- queries

    def statement_line_before(self, line: int) -> int | None:
        """The last line at or before ``line`` where a statement begins the line: a place to start reading
        tokens that is never inside a string. None when no statement begins before ``line``."""
        starts = self._statement_lines
        if starts is None:
            found = set()
            lines = self.source.lines
            for node in ast.walk(self.tree):
                if isinstance(node, ast.stmt) and node.lineno <= len(lines):
                    text = lines[node.lineno - 1]
                    # First on its line (not ``a = 1; b = f(``): its byte offset is the line's indentation,
                    # which is ASCII, so bytes and characters agree.
                    if node.col_offset == len(text) - len(text.lstrip()):
                        found.add(node.lineno - 1)
            starts = self._statement_lines = sorted(found)
        index = bisect.bisect_right(starts, line)
        return starts[index - 1] if index else None

    def qualify_dotted(self, dotted: str) -> str | None:
        """``nn.functional`` -> ``torch.nn.functional`` through the imports; None when the head is not imported."""
        head, _, rest = dotted.partition(".")
        base = self.imports.get(head)
        if base is None:
            return None
        return f"{base}.{rest}" if rest else base

    def value_at(self, expression: str, position: Position) -> Value | None:
        """The torch value of ``expression`` (``x``, ``self.fc``, ``model``) as code at ``position`` sees it."""
        self.steps = 0
        try:
            expr = ast.parse(expression.strip(), mode="eval").body
        except SyntaxError:
            return None
        scope, klass = self._scope_at(position.line)
        where = _Identifier(position.column, position.column, expr, scope, klass)
        if self._analysis is not None:
            analysed = self._analysed_occurrence(expr, where, position)
            if analysed is not None:
                return analysed
        return self.infer(expr, where, position.line)

    _OCCURRENCE_LINES = 200  # how far back value_at looks for the expression written before

    def _analysed_occurrence(self, expr: ast.expr, where: _Identifier, position: Position) -> Value | None:
        """The analysis's value of ``expr`` (``x``, ``self.fc``) where this tree last has it before ``position``
        in the same scope, while the same binding of its root name holds: completion's receiver is text being
        typed, not a node of this tree, and the code just before it shows what it is."""
        text = _dotted(expr)
        if text is None:
            return None
        root = text.split(".", 1)[0]
        stored = text if "." in text else None  # `self.fc = ...` in between changes what self.fc holds
        binding = self._latest_binding(root, where, position.line) if root != "self" else None
        first = max(0, position.line - self._OCCURRENCE_LINES)
        for line in range(position.line, first - 1, -1):
            for identifier in sorted(self._identifiers.get(line, ()), key=lambda i: -i.end):
                node = identifier.node
                if identifier.scope is not where.scope or not isinstance(node, ast.Name | ast.Attribute):
                    continue
                if line == position.line and (identifier.end > position.column or isinstance(node.ctx, ast.Store)):
                    continue  # after the cursor, or bound by the statement the cursor is in: not yet
                if _dotted(node) != text:
                    continue
                if stored is not None and isinstance(node.ctx, ast.Store):
                    return None
                if root != "self" and self._latest_binding(root, identifier, line) is not binding:
                    return None
                analysed = self._analysis(node)  # type: ignore[misc]
                return Value(*analysed) if analysed is not None else None
            if binding is not None and binding.line == line:
                return None  # the name is bound on this line: earlier occurrences are another value
        return None

    def container_at(self, name: str, position: Position) -> str | None:
        """``builtins.dict`` (list, set, tuple, str) when the binding of ``name`` that code at ``position`` sees is
        a display, a comprehension, a string literal or a call of the builtin type: for listing its members
        without jedi. Kept apart from :meth:`infer`, which proves torch values for hover and diagnostics too."""
        if not name.isidentifier():
            return None
        where = self._where(position.line)
        binding = self._latest_binding(name, where, position.line)
        if binding is None or binding.value is None or binding.annotation is not None:
            return None
        value = binding.value
        for kinds, builtin in _CONTAINER_DISPLAYS:
            if isinstance(value, kinds):
                return builtin
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return "builtins.str"
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in _CONTAINER_TYPES
            and self._is_builtin(value.func.id)
        ):
            return f"builtins.{value.func.id}"
        return None

    def qualify(self, expr: ast.expr) -> str | None:
        """The dotted torch-or-other qualified name an expression refers to through imports, if static."""
        return qualify(expr, self.imports)

    def qualify_annotation(self, annotation: ast.expr) -> str | None:
        """The class an annotation names (see :func:`qualify_annotation`)."""
        return qualify_annotation(annotation, self.imports)

    def target_at(self, position: Position) -> Target | None:
        """The symbol at ``position`` (code points), or None when there is no identifier there."""
        self.steps = 0
        identifier = self._identifier_at(position)
        if identifier is None:
            return None
        span = Span(Position(position.line, identifier.start), Position(position.line, identifier.end))
        node = identifier.node
        if isinstance(node, ast.keyword):
            call = identifier.parent
            assert isinstance(call, ast.Call)
            end = self.source.position_from_ast(call.func.end_lineno or call.lineno, call.func.end_col_offset or 0)
            return Target("keyword", span, self._callee_name(call.func, identifier), node.arg, end)
        if identifier.segment is not None:  # a name in an import statement
            return Target("reference", span, identifier.segment)
        assert isinstance(node, ast.Name | ast.Attribute)
        qualname = self.qualify(node) if not self._shadowed(node, identifier) else None
        if qualname is not None:
            return Target("reference", span, qualname)
        if isinstance(node, ast.Attribute):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if owner in self.classes and len(self._bindings_of(owner)) == 1:  # ``Exchange.apply`` on the class
                base = self._torch_base(owner)
                inherited = base is not None and self._inherited_from_torch(owner, node.attr)
                return Target("reference", span, f"{base}.{node.attr}" if inherited else None)
            receiver = self.infer(node.value, identifier, position.line)
            if receiver is not None:
                attribute_value = self.infer(node, identifier, position.line)
                if (
                    attribute_value is not None
                    and attribute_value.user_class is None
                    # ``x.shape``, ``x.grad`` are documented as the tensor's own attributes, not as a Size
                    and node.attr not in facts.TENSOR_ATTRIBUTES
                    and node.attr not in facts.TENSOR_ATTRIBUTE_CLASSES
                    # ``fc.weight`` is still named as the layer's attribute, not described as a Parameter
                    and facts.module_attribute_result(receiver.qualname, node.attr) is None
                ):
                    return Target("instance", span, attribute_value.qualname)
                if receiver.user_class and not self._inherited_from_torch(receiver.user_class, node.attr):
                    return Target("reference", span, None)
                base = facts.ATTRIBUTE_BASES.get(receiver.qualname, receiver.qualname)
                return Target("reference", span, f"{base}.{node.attr}")
        value = self.infer(node, identifier, position.line)
        if value is not None and value.user_class is None:
            return Target("instance", span, value.qualname)
        return Target("reference", span, None)

    def unproven_member_at(self, position: Position) -> tuple[str, str | None] | None:
        """``(member, receiver's attribute)`` at ``position`` when it is ``receiver.member`` and the file proves
        nothing about the receiver (not an import, no value inferred): what :mod:`torchls.core.name_guess` may go
        by. The second is the receiver's own last name when it is an attribute (``weight`` in
        ``m.weight.dtype``), else None."""
        self.steps = 0
        identifier = self._identifier_at(position)
        node = identifier.node if identifier is not None else None
        if not isinstance(node, ast.Attribute) or self.qualify(node.value) is not None:
            return None
        if self.infer(node.value, identifier, position.line) is not None:  # type: ignore[arg-type]
            return None
        return node.attr, node.value.attr if isinstance(node.value, ast.Attribute) else None

    def receiver_members(self, position: Position) -> frozenset[str]:
        """The other members the code reads on the receiver of ``receiver.member`` at ``position``, where that
        receiver is a name bound once in its function (a parameter, one assignment): ``view`` and ``shape`` for
        ``x.device`` in a function that also reads ``x.view(...)`` and ``x.shape``. Together they say more about
        what ``x`` is than one member alone (:func:`torchls.core.name_guess.tensor_member_by_name`)."""
        identifier = self._identifier_at(position)
        node = identifier.node if identifier is not None else None
        if not isinstance(node, ast.Attribute) or not isinstance(node.value, ast.Name):
            return frozenset()
        scope, _ = self._scope_at(position.line)
        name = node.value.id
        if scope is self.tree or len(self._bindings[scope].get(name, ())) != 1:
            return frozenset()  # module level, or a name bound again: which value each read sees is another question
        read = {
            other.attr
            for other in ast.walk(scope)
            if isinstance(other, ast.Attribute)
            and isinstance(other.ctx, ast.Load)
            and isinstance(other.value, ast.Name)
            and other.value.id == name
        }
        return frozenset(read - {node.attr})

    def imported_modules(self, position: Position | None = None) -> frozenset[str]:
        """The top-level modules the file imports (``numpy`` for ``import numpy as np``): at module level and,
        with ``position``, in the functions enclosing it (an import inside another function is not seen there)."""
        scopes = self._scope_chain(self._scope_at(position.line)[0]) if position is not None else self._imported_modules
        return frozenset(module for scope in scopes for module in self._imported_modules.get(scope, ()))

    def torch_uses(self) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """The torch names the file calls, the torch classes it instantiates (capitalised callees) and the torch
        modules it reaches into (``torch.jit.`` in ``torch.jit.script``): what completion prefetches from jedi.
        Computed once per index (a walk of the whole tree: tens of milliseconds on a long file)."""
        if self._torch_uses is None:
            called: set[str] = set()
            modules: set[str] = set()
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Call):
                    qualname = self.qualify(node.func)
                    if _is_torch_name(qualname):
                        called.add(qualname)  # type: ignore[arg-type]
                elif isinstance(node, ast.Attribute):
                    qualname = self.qualify(node.value)
                    if _is_torch_name(qualname) and qualname.rsplit(".", 1)[-1][:1].islower():  # type: ignore[union-attr]
                        modules.add(qualname)  # type: ignore[arg-type]
            classes = {name for name in called if name.rsplit(".", 1)[-1][:1].isupper()}
            self._torch_uses = frozenset(called), frozenset(classes), frozenset(modules)
        return self._torch_uses

    def torch_names(self) -> frozenset[str]:
        """The torch names the file's imports make of its dotted names (``nn.Conv2d``, ``torch.cuda``), with no
        inference: cheap enough to compute for a whole long file as it opens."""
        found = set()
        for identifiers in self._identifiers.values():
            for identifier in identifiers:
                if identifier.segment is None and isinstance(identifier.node, ast.Name | ast.Attribute):
                    qualname = self.qualify(identifier.node)
                    if _is_torch_name(qualname):
                        found.add(qualname)
        return frozenset(found)  # type: ignore[arg-type]

    def torch_references(self) -> Iterator[tuple[Position, str]]:
        """Every use of a torch API the fast path can name, once per use: ``F.relu(x)`` gives
        ``torch.nn.functional.relu`` (not also ``torch.nn.functional``), ``x.view`` on a known tensor gives
        ``torch.Tensor.view``. Import statements and keyword arguments are not uses."""
        receivers = {id(node.value) for node in ast.walk(self.tree) if isinstance(node, ast.Attribute)}
        for line in sorted(self._identifiers):
            for identifier in self._identifiers[line]:
                node = identifier.node
                if identifier.segment is not None or not isinstance(node, ast.Name | ast.Attribute):
                    continue
                if id(node) in receivers and self.qualify(node) is not None:
                    continue  # ``torch.nn`` in ``torch.nn.Linear``: the whole chain is one use
                position = Position(line, identifier.start)
                found = self.target_at(position)
                if found is not None and found.kind == "reference" and (found.qualname or "").startswith("torch."):
                    yield position, found.qualname  # type: ignore[misc]

    def _shadowed(self, expr: ast.expr, where: _Identifier) -> bool:
        """True when the name an import bound at the head of ``expr`` is bound again in a function around the use
        (a parameter ``F``, ``nn = None``): then it is not the module, as the checker's rules read it too."""
        while isinstance(expr, ast.Attribute):
            expr = expr.value
        if not isinstance(expr, ast.Name) or expr.id not in self._file_imports.shadowing:
            return False
        return self._file_imports.qualname(expr.id, self._scope_chain(where.scope)) is None

    def _scope_chain(self, scope: ast.AST | None) -> Iterator[ast.AST]:
        """``scope`` and the scopes it is defined in, innermost first."""
        while scope is not None:
            yield scope
            scope = self._enclosing.get(scope)

    def _callee_name(self, func: ast.expr, identifier: _Identifier) -> str | None:
        qualname = self.qualify(func)
        if qualname is not None:
            return qualname
        if isinstance(func, ast.Attribute):
            receiver = self.infer(func.value, identifier, func.lineno - 1)
            if receiver is not None and receiver.user_class is None:
                return f"{facts.ATTRIBUTE_BASES.get(receiver.qualname, receiver.qualname)}.{func.attr}"
        value = self.infer(func, identifier, func.lineno - 1)
        if value is not None and value.user_class is None:
            return value.qualname  # calling an instance: its class's ``forward``/``__call__`` arguments
        return None

    def _identifier_at(self, position: Position) -> _Identifier | None:
        candidates = self._identifiers.get(position.line, ())
        inside = [c for c in candidates if c.start <= position.column < c.end]
        if not inside:  # the cursor right after a name (``view|(``) still means that name
            inside = [c for c in candidates if c.end == position.column]
        # Attribute identifiers of different nesting never overlap; the narrowest match is the right one.
        return min(inside, key=lambda c: c.end - c.start, default=None)

    def _user_defines(self, class_name: str, member: str) -> bool:
        seen: set[str] = set()
        while class_name in self.classes and class_name not in seen:
            seen.add(class_name)
            info = self.classes[class_name]
            if member in info.members or member in info.self_bindings:
                return True
            local_bases = [b.id for b in info.node.bases if isinstance(b, ast.Name) and b.id in self.classes]
            if not local_bases:
                return False
            class_name = local_bases[0]
        return False

    def _inherited_from_torch(self, class_name: str, member: str) -> bool:
        """True when ``member`` of an instance of this file's class can only be its torch base's: the index sees
        the whole class (not a partial index, which leaves other methods out) and every base is local or torch (a
        mixin from elsewhere may define it), and the class itself does not define or bind it."""
        if self.partial:
            return False
        found = self.user_class_members(class_name)
        return found is not None and member not in found[0]

    def user_class_members(self, class_name: str) -> tuple[dict[str, str], str] | None:
        """The members a class of this file defines itself, through its local bases, as ``{name: kind}`` (kind:
        method / class / variable), and the torch class it finally derives from. None when a base is neither
        local nor torch (a mixin from elsewhere: only jedi knows what it adds)."""
        members: dict[str, str] = {}
        torch_base = None
        pending, seen = [class_name], set()
        while pending:
            name = pending.pop(0)
            if name in seen:
                continue
            seen.add(name)
            info = self.classes.get(name)
            if info is None:
                return None
            for stmt in info.node.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                    is_property = any(
                        isinstance(d, ast.Name) and d.id in ("property", "cached_property") for d in stmt.decorator_list
                    )
                    members.setdefault(stmt.name, "property" if is_property else "method")
                elif isinstance(stmt, ast.ClassDef):
                    members.setdefault(stmt.name, "class")
                elif isinstance(stmt, ast.Assign | ast.AnnAssign):
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    for target in targets:
                        if isinstance(target, ast.Name):
                            members.setdefault(target.id, "variable")
            for attribute in info.self_bindings:
                members.setdefault(attribute, "variable")
            for base in info.node.bases:
                qualname = self.qualify(base)
                if qualname is not None and qualname.startswith("torch."):
                    torch_base = torch_base or qualname
                elif isinstance(base, ast.Name) and base.id in self.classes:
                    pending.append(base.id)
                elif not (isinstance(base, ast.Name) and base.id == "object"):
                    return None
        if torch_base is None:
            return None
        return members, torch_base

    # ---------------------------------------------------------------------------------------- inference

    def use_analysis(self, class_of: Callable[[ast.AST], tuple[str, str | None] | None]) -> None:
        """Answer for the names and attributes of this tree from the checker's analysis of it first.

        ``class_of`` is :meth:`torchls.core.values_at.FileValues.class_of` for this very tree: ``(torch class,
        the file's class or None)`` of a node. Once it is set, a receiver's class is what the interpreter
        proves, as in the diagnostics; this index's own inference answers only where the analysis knows
        nothing, or before it is computed."""
        self._analysis = class_of
        self.memo.clear()  # answers given before the analysis may differ from it

    def infer(self, expr: ast.expr, where: _Identifier, line: int, depth: int = 0) -> Value | None:
        """The torch class of the value of ``expr`` at ``line``, when the file proves it; else None."""
        return self.memoised("value", self._infer, expr, where, line, depth)

    def _infer(self, expr: ast.expr, where: _Identifier, line: int, depth: int) -> Value | None:
        if self._analysis is not None and isinstance(expr, ast.Name | ast.Attribute):
            analysed = self._analysis(expr)
            if analysed is not None:
                return Value(*analysed)
        if isinstance(expr, ast.Name):
            return self._infer_name(expr.id, where, line, depth)
        if isinstance(expr, ast.Attribute):
            if isinstance(expr.value, ast.Name) and expr.value.id == "self" and where.klass is not None:
                return self._infer_self_attribute(where.klass, expr.attr, where, depth)
            receiver = self.infer(expr.value, where, line, depth + 1)
            if receiver is not None and receiver.user_class is None:
                if receiver.qualname == facts.MODULE_DICT:  # ``self.transformer.wte``
                    return self.module_dict_member(expr.value, expr.attr, where, line, depth + 1)
                result = facts.attribute_result(receiver.qualname, expr.attr) or facts.module_attribute_result(
                    receiver.qualname, expr.attr
                )
                return Value(result) if result else None
            return None
        if isinstance(expr, ast.Call):
            return self._infer_call(expr, where, line, depth)
        if isinstance(expr, ast.IfExp):  # ``nn.Linear(...) if n else nn.Identity()``: both branches must agree
            # ``nn.Conv2d(...) if flag else None``: code that uses the value has the layer
            branches = [b for b in (expr.body, expr.orelse) if not is_none_literal(b)]
            return _common([self.infer(b, where, line, depth + 1) for b in branches])
        if isinstance(expr, ast.BinOp):
            # Arithmetic on a tensor or a Parameter gives a plain tensor (``bn.weight / bn.running_var``).
            for side in (expr.left, expr.right):
                if _is_tensor(self.infer(side, where, line, depth + 1)):
                    return TENSOR
            return None
        if isinstance(expr, ast.Subscript) and is_int_literal(expr.slice):  # ``torch.max(x, 1)[0]``, ``out[0]``
            return as_value(self.parts(expr, where, line, depth + 1))
        if isinstance(expr, ast.UnaryOp | ast.Subscript):
            operand = expr.operand if isinstance(expr, ast.UnaryOp) else expr.value
            return TENSOR if _is_tensor(self.infer(operand, where, line, depth + 1)) else None
        return None

    def _infer_part(self, iterated: ast.expr, path: _Path, where: _Identifier, line: int, depth: int) -> Value | None:
        """The value of the part of ``iterated`` that ``path`` leads to (see :class:`_Binding`)."""
        parts = self.parts(iterated, where, line, depth + 1)
        for position in path:
            parts = pick(parts, position)
        return as_value(parts)

    def _is_builtin(self, name: str) -> bool:
        """True when no import or binding anywhere in the file hides the builtin ``name``."""
        return name not in self.imports and all(name not in names for names in self._bindings.values())

    def _yields_tensors(self, expr: ast.expr, where: _Identifier, line: int, depth: int) -> bool:
        """True when unpacking or iterating the value of ``expr`` certainly yields tensors."""
        return _is_tensor(self.element_of(expr, where, line, depth))

    def _infer_call(self, call: ast.Call, where: _Identifier, line: int, depth: int) -> Value | None:
        if isinstance(call.func, ast.Name) and call.func.id == "next" and self._is_builtin("next"):
            return as_value(
                self.parts(call, where, line, depth + 1)
            )  # ``next(iter(loader))``, ``next(m.parameters())``
        callee = self.qualify(call.func)
        if callee is not None:
            result = facts.call_result(callee) if _is_torch_name(callee) else self._project_result(callee)
            return Value(result) if result else None
        callee = self._project_callee(call.func)
        if callee is not None:  # ``adapt_input_conv(...)`` imported relatively
            result = self._project_result(callee)
            return Value(result) if result else None
        if isinstance(call.func, ast.Name) and call.func.id in self.classes:
            base = self._torch_base(call.func.id)
            return Value(base, call.func.id) if base else None
        called = self._called_function(call.func, where, line, depth + 1)
        if called is not None:  # ``rotate_half(x)``, ``self.get_bias(...)``: a function of this file
            return self._function_result(*called, depth + 1)
        if isinstance(call.func, ast.Attribute):
            receiver = self.infer(call.func.value, where, line, depth + 1)
            if receiver is not None and is_module(receiver) and call.func.attr in facts.MODULE_SELF_METHODS:
                # ``Net().to(device)``, ``model.eval()``: the module itself, unless its class redefines the method
                if receiver.user_class is None or not self._user_defines(receiver.user_class, call.func.attr):
                    return receiver
                return None
            if receiver is not None and receiver.user_class is None:
                result = facts.method_result(receiver.qualname, call.func.attr, bool(call.args or call.keywords))
                if result:
                    return Value(result)
        return as_value(self.layer_call_parts(call.func, where, line, depth + 1))

    def _project_callee(self, func: ast.expr) -> str | None:
        """The qualified name of a function a relative import brings in, called as ``f(...)`` or through an
        imported module (``helpers.f(...)``); None when the file binds the name again."""
        head = func.value if isinstance(func, ast.Attribute) else func
        if not isinstance(head, ast.Name) or head.id not in self.project_imports:
            return None
        if len(self._bindings_of(head.id)) != 1:
            return None
        base = self.project_imports[head.id]
        return f"{base}.{func.attr}" if isinstance(func, ast.Attribute) else base

    def _project_result(self, qualname: str) -> str | None:
        """What another module of the project annotates the function ``qualname`` to return (asked once)."""
        if self._project_returns is None:
            return None
        if qualname not in self._project_results:
            self._project_results[qualname] = self._project_returns(qualname)
        return self._project_results[qualname]

    def _called_function(
        self, func: ast.expr, where: _Identifier, line: int, depth: int = 0
    ) -> tuple[ast.FunctionDef, ast.ClassDef | None] | None:
        """The function of this file a call runs, and the class it is a method of: a plain name bound once, to
        a ``def``, or ``self.name`` where the class (or a local base) defines the method and no ``self.name = ...``
        hides it. Decorators must keep what the function returns (``@torch.no_grad()``, ``@staticmethod``)."""
        if isinstance(func, ast.Name):
            binding = self._latest_binding(func.id, where, line)
            if binding is None or binding.defines is None or len(self._bindings_of(func.id)) != 1:
                return None
            function, owner = binding.defines, None
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            if where.klass is None or (found := self._method(where.klass.name, func.attr)) is None:
                return None
            function, owner = found
        elif isinstance(func, ast.Attribute):  # ``model.generate(...)`` on an instance of a class of the file
            receiver = self.infer(func.value, where, line, depth + 1)
            if receiver is None or receiver.user_class is None:
                return None
            if (found := self._method(receiver.user_class, func.attr)) is None:
                return None
            function, owner = found
        else:
            return None
        if not isinstance(function, ast.FunctionDef) or not all(
            self._keeps_result(decorator) for decorator in function.decorator_list
        ):
            return None  # ``async def`` returns a coroutine; other decorators may return anything
        return function, owner

    def _method(self, class_name: str, name: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef] | None:
        """The ``def`` a method call on an instance of a class of this file runs, following local bases; None
        when an instance attribute of that name is assigned anywhere on the way (it may hold something else)."""
        seen: set[str] = set()
        while class_name in self.classes and class_name not in seen:
            seen.add(class_name)
            info = self.classes[class_name]
            if name in info.self_bindings:
                return None
            for node in info.node.body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                    return node, info.node
            if name in info.members:
                return None  # a class attribute, not a method
            local = [b.id for b in info.node.bases if isinstance(b, ast.Name) and b.id in self.classes]
            if not local:
                return None
            class_name = local[0]
        return None

    def _keeps_result(self, decorator: ast.expr) -> bool:
        """True for decorators whose wrapper returns what the function returns."""
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Name) and target.id in ("staticmethod", "classmethod"):
            return self._is_builtin(target.id)
        return keeps_result(decorator, self.imports)

    def _function_result(self, function: ast.FunctionDef, klass: ast.ClassDef | None, depth: int) -> Value | None:
        """What calling a function of this file returns: the torch class its return annotation names, or, without
        one, what every ``return`` agrees on when the function returns a value on every path."""
        if function in self._function_results:
            return self._function_results[function]
        result = as_value(self.function_parts(function, klass, depth + 1))
        if result is not None and not _is_torch_name(result.qualname):
            result = None
        if result is not None:  # a failure may come from the depth limit: not remembered
            self._function_results[function] = result
        return result

    def _torch_base(self, class_name: str) -> str | None:
        """The first torch class among the bases of a class defined in this file, following local bases."""
        seen: set[str] = set()
        while class_name in self.classes and class_name not in seen:
            seen.add(class_name)
            node = self.classes[class_name].node
            next_local = None
            for base in node.bases:
                qualname = self.qualify(base)
                if qualname and qualname.startswith("torch."):
                    return qualname
                if isinstance(base, ast.Name) and base.id in self.classes:
                    next_local = next_local or base.id
            if next_local is None:
                return None
            class_name = next_local
        return None

    def _infer_name(self, name: str, where: _Identifier, line: int, depth: int) -> Value | None:
        if name == "self" and where.klass is not None:
            base = self._torch_base(where.klass.name)
            return Value(base, where.klass.name) if base else None
        narrowed = self._narrowed(name, where, line)
        if narrowed is not None:
            return narrowed
        binding = self._latest_binding(name, where, line)
        if binding is None:
            return None
        if binding.annotation is not None:
            annotated = self.qualify_annotation(binding.annotation)
            if annotated and annotated.startswith("torch."):
                return Value(annotated)
        if binding.parameter_of is not None and binding.annotation is None:
            return as_value(self._passed_parts(binding.parameter_of, name, depth + 1))
        if binding.iterated is not None:
            if binding.last_line is not None and not binding.visible_at(line):
                return None  # after the loop: the last element, or the earlier value when there was none
            return self._infer_part(binding.iterated, binding.path, where, binding.line, depth + 1)
        if binding.value is None:
            return None
        return self.infer(binding.value, where, binding.line, depth + 1)

    def _bindings_of(self, name: str) -> list[_Binding]:
        return [b for names in self._bindings.values() for b in names.get(name, ())]

    def _scope_at(self, line: int) -> tuple[ast.AST, ast.ClassDef | None]:
        """The innermost function enclosing ``line`` (else the module), and the class it is a method of."""
        scope, klass = self.tree, None
        for start, end, node, method_of in self._scopes:
            if start < line <= end and (scope is self.tree or start >= scope.lineno - 1):  # type: ignore
                scope, klass = node, method_of
        return scope, klass

    def _where(self, line: int) -> _Identifier:
        """An identifier standing for code at ``line``, for inferring an expression written there."""
        return _Identifier(0, 0, self.tree, *self._scope_at(line))

    def _scope_chain(self, scope: ast.AST) -> Iterator[ast.AST]:
        """``scope``, the functions it is nested in (a closure sees their names), then the module."""
        while scope is not self.tree:
            yield scope
            scope = self._enclosing.get(scope, self.tree)
        yield self.tree

    def _latest_binding(self, name: str, where: _Identifier, line: int) -> _Binding | None:
        """The binding of ``name`` that code at ``line`` sees: the latest one before it in the innermost scope
        that binds the name."""
        for scope in self._scope_chain(where.scope):
            bindings = self._bindings.get(scope, {}).get(name)
            if not bindings:
                continue
            earlier = [b for b in bindings if b.seen_from(line) and not self._exclusive(b.line, line)]
            if scope is self.tree and not earlier:
                earlier = bindings  # module names used inside functions may be bound later in the file
            if not earlier:
                return None
            return max(reversed(earlier), key=lambda b: b.line)  # of two on one line (``a = 1; a = 2``), the later
        return None

    def _exclusive(self, first: int, second: int) -> bool:
        """True when the two lines lie in different branches of one ``if``/``else`` (``elif`` included): a
        binding in one branch never reaches a use in the other."""
        if self._branch_marks is None:
            self._branch_marks = self._mark_branches()
        marks, others = self._branch_marks.get(first), self._branch_marks.get(second)
        if not marks or not others:
            return False
        return any(others.get(statement, branch) != branch for statement, branch in marks.items())

    def _mark_branches(self) -> dict[int, dict[int, int]]:
        """For each line inside an ``if`` that has an ``else``: which branch of it (0 body, 1 else) it is in."""
        marks: dict[int, dict[int, int]] = defaultdict(dict)
        for node in self._if_else:
            for branch, body in enumerate((node.body, node.orelse)):
                first, last = body[0].lineno - 1, (body[-1].end_lineno or body[-1].lineno) - 1
                for line in range(first, last + 1):
                    marks[line][id(node)] = branch
        return marks

    def _infer_self_attribute(self, klass: ast.ClassDef, attr: str, where: _Identifier, depth: int) -> Value | None:
        info = self.classes.get(klass.name)
        if info is None or attr not in info.self_bindings:
            return None
        values = []
        for expr in info.self_bindings[attr]:
            if expr is None:
                return None
            if isinstance(expr, Value):
                values.append(expr)
                continue
            # ``self.x`` bound in ``__init__`` is evaluated in the method that binds it, not at the cursor.
            values.append(self.infer(expr, self._where(expr.lineno - 1), expr.lineno - 1, depth + 1))
        return _common(values)


# Node kinds the index walk records something about (see ModuleIndex._visit); the others are only walked through,
# and leaves (contexts, operators, constants) not even that: a 5,000-line file has 80,000 nodes.
_RECORDED = frozenset(
    {
        ast.Import,
        ast.ImportFrom,
        ast.ClassDef,
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.Lambda,
        ast.Assign,
        ast.AnnAssign,
        ast.For,
        ast.AugAssign,
        ast.AsyncFor,
        ast.ListComp,
        ast.SetComp,
        ast.DictComp,
        ast.GeneratorExp,
        ast.withitem,
        ast.NamedExpr,
        ast.Name,
        ast.Attribute,
        ast.If,
        ast.Call,
    }
)
_LEAVES = frozenset(
    {ast.Load, ast.Store, ast.Del, ast.Constant, *ast.operator.__subclasses__(), *ast.cmpop.__subclasses__()}
    | {*ast.unaryop.__subclasses__(), *ast.boolop.__subclasses__()}
)


def _dotted(expr: ast.AST) -> str | None:
    """``self.fc.weight`` for a chain of attributes on a name; None for anything else."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        base = _dotted(expr.value)
        return f"{base}.{expr.attr}" if base is not None else None
    return None


def qualify(expr: ast.expr, imports: dict[str, str]) -> str | None:
    """The dotted qualified name an expression refers to through a module's ``imports``, if static."""
    if isinstance(expr, ast.Name):
        return imports.get(expr.id)
    if isinstance(expr, ast.Attribute):
        base = qualify(expr.value, imports)
        return f"{base}.{expr.attr}" if base else None
    return None


def qualify_annotation(annotation: ast.expr, imports: dict[str, str]) -> str | None:
    """The class an annotation names: ``torch.Tensor``, ``Optional[Tensor]``, ``Tensor | None``,
    ``"torch.Tensor"``. An optional value is still that class wherever its members are used."""
    spelled = not_optional(annotation)
    if spelled is None or isinstance(spelled, ast.Subscript | ast.BinOp):
        return None
    return qualify(spelled, imports)


def not_optional(annotation: ast.expr) -> ast.expr | None:
    """The annotation without its quotes and without ``Optional[...]`` / ``... | None`` around it (where its
    members are used, the value was not None); None for a string that does not parse or a union of several."""
    spelled = unquoted(annotation)
    if isinstance(spelled, ast.Subscript) and generic_name(spelled) == "Optional":
        return not_optional(spelled.slice)
    if isinstance(spelled, ast.BinOp) and isinstance(spelled.op, ast.BitOr):
        sides = [spelled.left, spelled.right]
        real = [side for side in sides if not is_none_literal(side)]
        return not_optional(real[0]) if len(real) == 1 else None
    return spelled


def keeps_result(decorator: ast.expr, imports: dict[str, str]) -> bool:
    """True for decorators whose wrapper returns what the function returns (``@torch.no_grad()``); the builtin
    ``staticmethod``/``classmethod`` are for the caller to check, as only it knows what the file binds."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return qualify(target, imports) in _RESULT_KEEPING_DECORATORS


# Displays and comprehensions, and the builtin type each makes (see ModuleIndex.container_at).
_CONTAINER_DISPLAYS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    ((ast.Dict, ast.DictComp), "builtins.dict"),
    ((ast.List, ast.ListComp), "builtins.list"),
    ((ast.Set, ast.SetComp), "builtins.set"),
    (ast.Tuple, "builtins.tuple"),
    (ast.JoinedStr, "builtins.str"),
)
_CONTAINER_TYPES = frozenset({"dict", "list", "set", "tuple", "str"})

# Decorators (by qualified name) whose wrapper returns what the decorated function returns.
_RESULT_KEEPING_DECORATORS = frozenset(
    {
        "torch.no_grad",
        "torch.enable_grad",
        "torch.inference_mode",
        "torch.jit.script",
        "torch.jit.ignore",
        "torch.jit.unused",
        "torch.jit.export",
        "torch.compile",
        "torch.compiler.disable",
        "torch.fx.wrap",
        "functools.cache",
        "functools.lru_cache",
    }
)


def _is_torch_name(qualname: str | None) -> bool:
    return bool(qualname) and (qualname == "torch" or qualname.startswith("torch."))  # type: ignore[union-attr]
