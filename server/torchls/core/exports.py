"""What another module of the user's project gives the fast path: the torch class each of its top-level functions
is annotated to return, and the names it re-exports from elsewhere (a package's ``__init__``).

``from ._manipulate import adapt_input_conv`` followed by ``w = adapt_input_conv(3, w)`` makes ``w.`` a tensor
when ``_manipulate.py`` says ``def adapt_input_conv(...) -> Tensor``: the annotation, read without jedi. Only
annotations count across files; an unannotated function is left to jedi.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field

from .imports import absolute_module
from .names import keeps_result, qualify_annotation
from .parsing import deep_statements


@dataclass(frozen=True, slots=True)
class ModuleExports:
    returns: dict[str, str] = field(default_factory=dict)  # function -> the torch class its annotation names
    reexports: dict[str, str] = field(default_factory=dict)  # name -> the qualified name it was imported as


def module_exports(text: str, module: str, is_package: bool) -> ModuleExports:
    """The exports of the module ``module`` whose source is ``text``; empty for code that does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ModuleExports()
    if deep_statements(tree):
        return ModuleExports()  # its functions' bodies would exhaust the stack of the walks that read them
    imports: dict[str, str] = {}
    functions: dict[str, ast.FunctionDef] = {}
    bound: Counter[str] = Counter()  # a name bound twice at the top level may hold either
    for statement in _top_level(tree.body):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                local = alias.asname or alias.name.split(".", 1)[0]
                imports[local] = alias.name if alias.asname else local
                bound[local] += 1
        elif isinstance(statement, ast.ImportFrom):
            source = (
                absolute_module(module, is_package, statement.level, statement.module)
                if statement.level
                else statement.module
            )
            for alias in statement.names:
                if source and alias.name != "*":
                    imports[alias.asname or alias.name] = f"{source}.{alias.name}"
                    bound[alias.asname or alias.name] += 1
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound[statement.name] += 1
            if isinstance(statement, ast.FunctionDef):
                functions[statement.name] = statement
        else:
            for target in _assigned(statement):
                bound[target] += 1
    returns = {}
    for name, function in functions.items():
        if bound[name] != 1 or function.returns is None:
            continue
        if not all(keeps_result(d, imports) for d in function.decorator_list):
            continue
        annotated = qualify_annotation(function.returns, imports)
        if annotated is not None and annotated.startswith("torch."):
            returns[name] = annotated
    reexports = {name: qualname for name, qualname in imports.items() if bound[name] == 1}
    return ModuleExports(returns, reexports)


def _top_level(body: list[ast.stmt]):
    """The module's own statements, including those inside top-level ``if``/``try`` (optional imports)."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If):
            yield from _top_level(statement.body)
            yield from _top_level(statement.orelse)
        elif isinstance(statement, ast.Try):
            for block in (statement.body, *(h.body for h in statement.handlers), statement.orelse):
                yield from _top_level(block)


def _assigned(statement: ast.stmt) -> list[str]:
    """The names an assignment-like statement binds at the top level."""
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign | ast.For):
        targets = [statement.target]
    elif isinstance(statement, ast.With):
        targets = [item.optional_vars for item in statement.items if item.optional_vars is not None]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
