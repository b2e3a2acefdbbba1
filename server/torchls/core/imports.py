"""What the file's imports bind: one model for hover's index, completion and every rule.

The checker and the editor's fast path used to build their tables apart (the checker kept a module-level name
that the module also reassigned; the fast path dropped it; neither saw a function's parameter named ``F``), so a
hover and a rule could disagree about what ``F.softmax`` is. Both read this instead.

What a name means, from its binding (statements only, never whole expressions):

- **module level**, including inside top-level ``if``/``try``: ``import a.b`` binds ``a``; ``import a.b as c``
  binds ``c`` to ``a.b``; ``from m import x as y`` binds ``y`` to ``m.x``; a later import of the same name wins.
  A name the module level also binds otherwise (an assignment, a loop or ``with`` target, a ``def`` or
  ``class``) is not reliably the import (``try: import apex`` / ``except ImportError: apex = None``) and is left
  out.
- **an import inside a function or class** binds the name there; where the module level does not bind the name
  at all it also stands for the module elsewhere (lazy imports: ``import torch`` at the top of each helper).
- **a function that binds the name otherwise** (a parameter ``F``, an assignment ``nn = ...``) shadows the import
  in its body and in the functions nested in it (:meth:`FileImports.shadowed_in`).
- relative imports (``from .layers import x``) name the project's own modules: resolved only when the file's
  module is known (:attr:`FileImports.relative`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from torchls.core.statements import (
    assigned_names,
    child_statements,
    nested_statements,
    statement_targets,
    target_names,
)

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(slots=True)
class FileImports:
    """The file's import table and where a function shadows one of its names."""

    table: dict[str, str] = field(default_factory=dict)  # local name -> qualified module or object
    relative: dict[str, str] = field(default_factory=dict)  # names relative imports bind -> absolute names
    # name -> the functions whose own bindings (parameters, assignments) hide the import inside them
    shadowing: dict[str, frozenset[ast.AST]] = field(default_factory=dict)

    def qualname(self, name: str, scopes: Iterator[ast.AST] | None = None) -> str | None:
        """What ``name`` means in the innermost of ``scopes`` (enclosing functions, innermost first; None: the
        module level), or None when it is not an import there."""
        qualname = self.table.get(name)
        if qualname is None or name not in self.shadowing or scopes is None:
            return qualname
        functions = self.shadowing[name]
        return None if any(scope in functions for scope in scopes) else qualname


def file_imports(tree: ast.Module, module: tuple[str, bool] | None = None) -> FileImports:
    """The imports of ``tree``; ``module`` is the file's ``(dotted module name, is a package)`` when known, for
    relative imports."""
    found = FileImports()
    module_level: list[ast.Import | ast.ImportFrom] = []
    nested: list[ast.Import | ast.ImportFrom] = []
    rebound: set[str] = set()
    functions: list[FunctionNode] = []
    _collect(tree.body, module_level, nested, rebound, functions, top=True)
    for statement in module_level:
        _bind(statement, found, module, override=True)
    for statement in nested:
        _bind(statement, found, module, override=False)
    for name in rebound:
        found.table.pop(name, None)
    shadowing: dict[str, set[ast.AST]] = {}
    for function in functions:
        own = _own_bindings(function)
        for name in own & found.table.keys():
            shadowing.setdefault(name, set()).add(function)
    found.shadowing = {name: frozenset(scopes) for name, scopes in shadowing.items()}
    return found


def _collect(
    body: list[ast.stmt],
    module_level: list,
    nested: list,
    rebound: set[str],
    functions: list[FunctionNode],
    top: bool,
) -> None:
    for statement in body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            (module_level if top else nested).append(statement)
            continue
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if top:
                rebound.add(statement.name)
            if not isinstance(statement, ast.ClassDef):
                functions.append(statement)
            _collect(statement.body, module_level, nested, rebound, functions, top=False)
            continue
        if top:
            for target in statement_targets(statement):
                target_names(target, rebound)
            for handler in getattr(statement, "handlers", ()):
                if handler.name:
                    rebound.add(handler.name)
        _collect(child_statements(statement), module_level, nested, rebound, functions, top)


def _bind(
    statement: ast.Import | ast.ImportFrom, found: FileImports, module: tuple[str, bool] | None, override: bool
) -> None:
    table = found.table
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            if alias.asname:
                local, qualname = alias.asname, alias.name
            else:  # ``import torch.nn`` binds ``torch``
                local = qualname = alias.name.split(".", 1)[0]
            if override or local not in table:
                table[local] = qualname
        return
    if statement.level:
        source = absolute_module(*module, statement.level, statement.module) if module else None
        if source is not None and override:
            for alias in statement.names:
                if alias.name != "*":
                    found.relative[alias.asname or alias.name] = f"{source}.{alias.name}"
        return
    if not statement.module:
        return
    for alias in statement.names:
        local = alias.asname or alias.name
        if alias.name != "*" and (override or local not in table):
            table[local] = f"{statement.module}.{alias.name}"


def _names_bound(statement: ast.Import | ast.ImportFrom) -> set[str]:
    return {(alias.asname or alias.name).split(".", 1)[0] for alias in statement.names}


def _own_bindings(function: FunctionNode) -> set[str]:
    """The names ``function`` binds other than by importing: its parameters and its assignments."""
    arguments = function.args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    names.update(a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None)
    imported = {
        name
        for statement in nested_statements(function)
        if isinstance(statement, ast.Import | ast.ImportFrom)
        for name in _names_bound(statement)
    }
    return names | (set(assigned_names(function)) - imported - {function.name})


def absolute_module(module: str, is_package: bool, level: int, name: str | None) -> str | None:
    """The module a relative import names: ``from ..layers import x`` in ``timm.models.vit`` -> ``timm.layers``;
    None when it climbs above the top package."""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 > len(parts) - 1:
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, name] if name else base) or None
