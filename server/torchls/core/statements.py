"""Walking statements without walking every expression: what a block binds, and where.

The interpreter asks these for every loop, ``try`` and class, so they visit statements and assignment targets
only, never whole expression trees.
"""

from __future__ import annotations

import ast

# ``try`` statements, whose handlers bind names; ``ast.TryStar`` (``except*``) exists from Python 3.11 on.
TRY_STATEMENTS: tuple[type[ast.stmt], ...] = tuple(
    getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name)
)


def child_statements(node: ast.AST) -> list[ast.stmt]:
    """The statements directly nested in a compound statement (bodies, else, finally, handlers, cases)."""
    found: list[ast.stmt] = []
    for field_name in ("body", "orelse", "finalbody"):
        block = getattr(node, field_name, None)
        if isinstance(block, list):
            found.extend(block)
    for handler in getattr(node, "handlers", ()):
        found.extend(handler.body)
    for case in getattr(node, "cases", ()):
        found.extend(case.body)
    return found


def nested_statements(node: ast.AST, into_definitions: bool = True) -> list[ast.stmt]:
    """Every statement inside ``node`` at any depth (not ``node`` itself), in no particular order.

    ``into_definitions=False`` stops at nested functions and classes (they are listed, their bodies are not).
    Cheaper than ``ast.walk`` whenever only statements matter (assignments, ``with``, ``for``).
    """
    found: list[ast.stmt] = []
    stack = list(child_statements(node))
    while stack:
        statement = stack.pop()
        found.append(statement)
        if into_definitions or not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stack.extend(child_statements(statement))
    return found


def statement_targets(node: ast.stmt) -> list[ast.expr]:
    """The expressions a statement binds (assignment targets, loop variables, ``with ... as``)."""
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor):
        return [node.target]
    if isinstance(node, ast.With | ast.AsyncWith):
        return [item.optional_vars for item in node.items if item.optional_vars is not None]
    return []


def target_names(target: ast.expr, names: set[str]) -> None:
    if isinstance(target, ast.Name):
        names.add(target.id)
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            target_names(element, names)
    elif isinstance(target, ast.Starred):
        target_names(target.value, names)


def assigned_names(node: ast.AST) -> frozenset[str]:
    """Names bound anywhere inside ``node``, not inside nested functions or classes (only their own names).

    Walks statements and their targets only, never whole expression trees: this runs for every loop, each
    time the interpreter evaluates it, so the answer is kept on the node.
    """
    cached = getattr(node, "_torchls_assigned", None)
    if cached is not None:
        return cached
    found = _assigned_names(node)
    node._torchls_assigned = found  # type: ignore[attr-defined]
    return found


def _assigned_names(node: ast.AST) -> frozenset[str]:
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        names: set[str] = set()
        for generator in node.generators:
            target_names(generator.target, names)
        return frozenset(names)
    if isinstance(node, ast.Lambda):
        return frozenset()
    names = set()
    stack: list[ast.AST] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(current.name)
            if current is not node:
                continue
        elif isinstance(current, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in current.names)
        elif isinstance(current, TRY_STATEMENTS):
            names.update(handler.name for handler in current.handlers if handler.name)
        if isinstance(current, ast.stmt):
            for target in statement_targets(current):
                target_names(target, names)
        stack.extend(child_statements(current))
    return frozenset(names)


def self_attributes_assigned(function: ast.AST) -> set[str]:
    """Attributes a method assigns on ``self`` (``self.x = ...``), from its statements' targets."""
    found: set[str] = set()
    stack: list[ast.AST] = list(child_statements(function))
    while stack:
        statement = stack.pop()
        for target in statement_targets(statement):  # type: ignore[arg-type]
            for node in ast.walk(target):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                    found.add(node.attr)
        stack.extend(child_statements(statement))
    return found
