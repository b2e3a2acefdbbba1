"""Walks up and across one file's syntax tree: parents, enclosing statements and functions, the nodes of a scope,
and what runs before what. Pure ``ast``: the interpreter and every rule family can use it.

Three questions have two answers here, on purpose, because rules prove different things with them:

- The function around a node: :func:`enclosing_function` is the innermost ``def`` or lambda, looking through
  class bodies (a class inside a function belongs to that function); :func:`scope_function` is the ``def`` whose
  own code the node is, None inside a lambda or a class body.
- The nodes of a scope: :func:`walk_pruned` stops at nested functions, lambdas and classes (it yields them, not
  their decorators or defaults); :func:`walk_scope` yields what runs in the scope, the decorators, defaults and
  bases of nested definitions included.
- Running before: :func:`dominates_in_block` holds for a statement earlier in the very block that contains the
  later node; :func:`dominates` holds for any node earlier in the text that nothing branching or looping
  separates from the later one (a ``with`` does not separate them, an ``if`` does).

A parent table (:func:`parent_table`) is built once per file; rules get theirs from ``Context.parents()``.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterator, Mapping

Parents = Mapping[ast.AST, ast.AST]  # child -> parent
Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef | ast.Module

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def parent_table(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """Child -> parent. Reads ``_fields`` directly (``ast.walk`` costs twice as much on big files) and skips the
    shared ``Load``/``Store`` context singletons, which have no single parent."""
    table: dict[ast.AST, ast.AST] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        for name in node._fields:
            if name == "ctx":
                continue
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        table[item] = node
                        stack.append(item)
            elif isinstance(value, ast.AST):
                table[value] = node
                stack.append(value)
    return table


def ancestors(node: ast.AST, parents: Parents) -> Iterator[ast.AST]:
    """The parent of ``node``, its parent, and so on up to the module."""
    current = parents.get(node)
    while current is not None:
        yield current
        current = parents.get(current)


def statement_of(node: ast.AST, parents: Parents) -> ast.stmt | None:
    """``node`` itself when it is a statement, else the innermost statement around it."""
    if isinstance(node, ast.stmt):
        return node
    for parent in ancestors(node, parents):
        if isinstance(parent, ast.stmt):
            return parent
    return None


def enclosing_function(node: ast.AST, parents: Parents) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None:
    """The innermost function or lambda around ``node``, through class bodies; None at module level."""
    for parent in ancestors(node, parents):
        if isinstance(parent, FUNCTIONS):
            return parent
    return None


def scope_function(node: ast.AST, parents: Parents) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The ``def`` whose own code ``node`` is; None inside a lambda or a class body, or at module level."""
    for ancestor in ancestors(node, parents):
        if isinstance(ancestor, ast.FunctionDef | ast.AsyncFunctionDef):
            return ancestor
        if isinstance(ancestor, ast.Lambda | ast.ClassDef):
            return None
    return None


# ---------------------------------------------------------------------------------------------- walking down


def walk_pruned(root: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``root`` (not ``root`` itself), not entering the functions, lambdas and classes it
    contains: those are yielded, their decorators, defaults and bodies are not. For a function ``root``: its body,
    arguments and decorators."""
    stack = list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def walk_scope(root: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``root`` (not ``root`` itself) that runs in ``root``'s scope: nested functions, lambdas
    and classes are yielded with their decorators and defaults (and a class's bases), not their bodies; in no
    particular order. For a function ``root``: only its own decorators and defaults (see :func:`scope_nodes`)."""
    stack = list(_scope_children(root))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(_scope_children(node))


def scope_nodes(root: Scope) -> Iterator[ast.AST]:
    """The nodes of a scope's own code (its body), for a function, class, lambda or module."""
    if isinstance(root, ast.Lambda):
        stack: list[ast.AST] = [root.body]
        yield root.body
    else:
        stack = list(root.body)
        yield from root.body
    while stack:
        node = stack.pop()
        for child in _scope_children(node):
            yield child
            stack.append(child)


def _scope_children(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        yield from node.decorator_list
        yield from node.args.defaults
        yield from (d for d in node.args.kw_defaults if d is not None)
        return
    if isinstance(node, ast.ClassDef):
        yield from node.decorator_list
        yield from node.bases
        return
    if isinstance(node, ast.Lambda):
        return
    yield from ast.iter_child_nodes(node)


# ---------------------------------------------------------------------------------------------- order


def position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def end_position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


def dominates_in_block(statement: ast.stmt, node: ast.AST, parents: Parents) -> bool:
    """True when ``statement`` sits in the block (body, else or finally) that holds ``node`` or a statement
    around it, earlier: it runs before ``node`` on every path. A statement nested in a ``with`` or ``if`` of that
    block does not count."""
    block_owner = parents.get(statement)
    if block_owner is None:
        return False
    block = _block_holding(block_owner, statement)
    if block is None:
        return False
    # Siblings of one block are in source order: compare positions instead of searching the list (a module of
    # thousands of statements asks this for many of them).
    first, last = position(block[0]), position(block[-1])
    here = position(statement)
    current: ast.AST | None = node
    while current is not None:
        above = parents.get(current)
        if above is block_owner:
            return isinstance(current, ast.stmt) and here < position(current) <= last and position(current) >= first
        if current is block_owner:
            return False
        current = above
    return False


def _block_holding(owner: ast.AST, statement: ast.stmt) -> list[ast.stmt] | None:
    """The statement list of ``owner`` (body, else or finally) that holds ``statement``."""
    for field_name in ("body", "orelse", "finalbody"):
        block = getattr(owner, field_name, None)
        if isinstance(block, list) and block and position(block[0]) <= position(statement) <= position(block[-1]):
            return block if any(s is statement for s in (block[0], block[-1])) or _holds(block, statement) else None
    return None


def _holds(block: list[ast.stmt], statement: ast.stmt) -> bool:
    """``statement`` is an element of the sorted ``block`` (by bisection on positions)."""
    index = bisect.bisect_left(block, position(statement), key=position)
    return index < len(block) and block[index] is statement


_BRANCHING = (
    ast.If,
    ast.IfExp,
    ast.Try,
    ast.ExceptHandler,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Match,
    ast.BoolOp,
    ast.comprehension,
    *SCOPES,
)


def dominates(first: ast.AST, later: ast.AST, parents: Parents) -> bool:
    """``first`` comes before ``later`` in the text and runs whenever ``later`` runs: nothing between ``first`` and
    their common ancestor branches or loops around ``first`` alone (any node; a ``with`` is no branch)."""
    if position(first) >= position(later):
        return False
    around_later = {id(a) for a in ancestors(later, parents)}
    for ancestor in ancestors(first, parents):
        if id(ancestor) in around_later:
            return True
        if isinstance(ancestor, _BRANCHING):
            return False
    return False


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def later_iteration_only(store: ast.AST, use: ast.AST, parents: Parents) -> bool:
    """True when the binding ``store`` can reach ``use`` only from an earlier iteration of the innermost loop
    around ``use``: ``use`` runs on every iteration (nothing branches between it and the loop's body) and
    ``store`` comes after it in that body, or binds the result of the very statement that reads ``use``
    (``h = cell(x, h)`` reads the ``h`` of the iteration before). The first time ``use`` runs, ``store`` has not.
    """
    top: ast.AST = use
    loop: ast.AST | None = None
    for ancestor in ancestors(use, parents):
        if isinstance(ancestor, _LOOPS) and top in ancestor.body:
            loop = ancestor
            break
        if isinstance(ancestor, _BRANCHING):
            return False  # a branch, a loop's header or else, a comprehension or a nested scope
        top = ancestor
    if loop is None:
        return False
    block = loop.body  # type: ignore[attr-defined]
    store_top = next((a for a in [store, *ancestors(store, parents)] if parents.get(a) is loop), None)
    if store_top is None or store_top not in block:
        return False  # not in the loop's body
    if block.index(store_top) > block.index(top):
        return True
    if store_top is not top:
        return False
    statement = statement_of(use, parents)
    if statement is statement_of(store, parents) and isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
        return store is not use and any(store is t or store in ast.walk(t) for t in _targets(statement))
    return position(statement_of(store, parents) or store) > position(statement or use)


def _targets(statement: ast.Assign | ast.AugAssign | ast.AnnAssign) -> list[ast.expr]:
    return list(statement.targets) if isinstance(statement, ast.Assign) else [statement.target]
