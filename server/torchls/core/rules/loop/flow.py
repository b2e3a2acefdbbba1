"""What the training-loop rules need to know about a file's structure, beyond the interpreter's values.

The scope (function or module) a node runs in, the grad mode a node provably runs under, the places a name is
bound, the loop and the branches around a node, and the calls of one training step. The walks up and across the
tree they rest on (ancestors, dominance, the textual order of statements, which in straight-line code is the
order they run) are ``core/control_flow.py``'s. Everything here answers "unknown" (None) rather than guess.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass, field

from torchls.core.control_flow import (
    FUNCTIONS,
    SCOPES,
    Scope,
    ancestors,
    dominates,
    end_position,
    position,
    scope_nodes,
)
from torchls.core.rules.base import Analysis, Context

LOOPS = (ast.For, ast.AsyncFor, ast.While)

# Grad modes.
DISABLED = "disabled"  # under no_grad / inference_mode / set_grad_enabled(False)
ENABLED = "enabled"  # module level, or under enable_grad / set_grad_enabled(True)
CALLER = "caller"  # a function body that sets nothing: whatever mode its caller runs it in (normally enabled)

_NO_GRAD = frozenset(
    {
        "torch.no_grad",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
    }
)
_INFERENCE_MODE = frozenset(
    {"torch.inference_mode", "torch.autograd.inference_mode", "torch.autograd.grad_mode.inference_mode"}
)
_ENABLE_GRAD = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})
_SET_GRAD_ENABLED = frozenset(
    {"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"}
)
GRAD_CONTEXTS = _NO_GRAD | _INFERENCE_MODE | _ENABLE_GRAD


def parent(node: ast.AST, ctx: Context) -> ast.AST | None:
    return ctx.parents().get(node)


def scope_of(node: ast.AST, ctx: Context) -> Scope:
    """The function, lambda, class body or module whose code ``node`` belongs to."""
    for ancestor in ancestors(node, ctx.parents()):
        if isinstance(ancestor, SCOPES):
            return ancestor
    return ctx.tree


def is_inside(node: ast.AST, container: ast.AST, ctx: Context) -> bool:
    return node is container or any(a is container for a in ancestors(node, ctx.parents()))


# ---------------------------------------------------------------------------------------------- grad mode


def grad_context_kind(expr: ast.expr, ctx: Context) -> str | None:
    """What a ``with`` item or decorator does to grad mode: DISABLED, ENABLED, "unknown", or None (nothing)."""
    call = expr if isinstance(expr, ast.Call) else None
    qualname = ctx.qualify(call.func if call is not None else expr)
    if qualname in _NO_GRAD:
        return DISABLED
    if qualname in _ENABLE_GRAD:
        return ENABLED
    if qualname in _INFERENCE_MODE:
        mode = _first_argument(call, "mode")
        if mode is None:
            return DISABLED
        if isinstance(mode, ast.Constant) and isinstance(mode.value, bool):
            return DISABLED if mode.value else None  # inference_mode(False) leaves grad mode as it is
        return "unknown"
    if qualname in _SET_GRAD_ENABLED and call is not None:
        mode = _first_argument(call, "mode")
        if isinstance(mode, ast.Constant) and isinstance(mode.value, bool):
            return ENABLED if mode.value else DISABLED
        return "unknown"
    return None


def _first_argument(call: ast.Call | None, name: str) -> ast.expr | None:
    if call is None:
        return None
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    return call.args[0] if call.args else None


def grad_mode(node: ast.AST, ctx: Context) -> str | None:
    """The grad mode ``node`` provably runs in: DISABLED, ENABLED, CALLER (a function that sets none), or None."""
    previous: ast.AST = node
    for ancestor in ancestors(node, ctx.parents()):
        if isinstance(ancestor, ast.With | ast.AsyncWith) and any(previous is s for s in ancestor.body):
            for item in reversed(ancestor.items):
                kind = grad_context_kind(item.context_expr, ctx)
                if kind == "unknown":
                    return None
                if kind is not None:
                    return kind
        elif isinstance(ancestor, ast.FunctionDef | ast.AsyncFunctionDef):
            if not any(previous is s for s in ancestor.body):
                previous = ancestor
                continue  # a decorator or default value: runs where the function is defined
            for decorator in ancestor.decorator_list:
                kind = grad_context_kind(decorator, ctx)
                if kind == "unknown":
                    return None
                if kind is not None:
                    return kind
            return CALLER
        elif isinstance(ancestor, ast.Lambda):
            return CALLER if previous is ancestor.body else None
        previous = ancestor
    return None if sets_grad_mode_globally(ctx) else ENABLED


@dataclass(frozen=True, slots=True)
class GlobalGradSwitch(Analysis):
    """Whether the file switches grad mode with a plain call (``torch.set_grad_enabled(False)`` on its own line)."""

    switches: bool

    @classmethod
    def compute(cls, ctx: Context) -> GlobalGradSwitch:
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                qualname = ctx.qualify(node.value.func) or ""
                if qualname in _SET_GRAD_ENABLED or qualname.endswith("_set_grad_enabled"):
                    return cls(True)
        return cls(False)


def sets_grad_mode_globally(ctx: Context) -> bool:
    """True when the file switches grad mode with a plain call (``torch.set_grad_enabled(False)`` on its own line)."""
    return ctx.analysis(GlobalGradSwitch).switches


# ---------------------------------------------------------------------------------------------- names


@dataclass(frozen=True, slots=True)
class FileFunctions(Analysis):
    """Every function and method the file defines (nested ones too), in ``ast.walk`` order, and their names."""

    definitions: tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...]
    names: frozenset[str]

    @classmethod
    def compute(cls, ctx: Context) -> FileFunctions:
        found = tuple(n for n in ast.walk(ctx.tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
        return cls(found, frozenset(f.name for f in found))


def root_name(expr: ast.AST) -> str | None:
    """``model`` for ``model``, ``model.fc.weight`` or ``model[0]``."""
    while isinstance(expr, ast.Attribute | ast.Subscript):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def bindings(scope: Scope, name: str, ctx: Context | None = None) -> list[ast.AST]:
    """Nodes of ``scope``'s code that bind ``name``: Name stores, plus imports, function and class definitions
    (with ``ctx``, the scope is indexed once per file)."""
    if ctx is None:
        return _binding_index(scope).get(name, [])
    cache = ctx.analysis(ScopeBindings).by_scope
    index = cache.get(scope)
    if index is None:
        index = cache[scope] = _binding_index(scope)
    return index.get(name, [])


@dataclass(slots=True)
class ScopeBindings(Analysis):
    """Each scope's bindings by name (``_binding_index``), indexed the first time a rule asks about the scope."""

    by_scope: dict[ast.AST, dict[str, list[ast.AST]]] = field(default_factory=dict)


def _binding_index(scope: Scope) -> dict[str, list[ast.AST]]:
    index: dict[str, list[ast.AST]] = {}
    for node in scope_nodes(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            index.setdefault(node.id, []).append(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            index.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.alias):
            index.setdefault((node.asname or node.name).split(".")[0], []).append(node)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                index.setdefault(name, []).append(node)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            index.setdefault(node.name, []).append(node)
    for found in index.values():
        found.sort(key=position)
    return index


def is_parameter(scope: Scope, name: str) -> bool:
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        return False
    args = scope.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return any(a is not None and a.arg == name for a in every)


def scopes_sharing(scope: Scope, name: str, ctx: Context | None = None) -> list[Scope]:
    """``scope`` and the functions nested in it that see its ``name`` (they do not bind a name of their own);
    with ``ctx``, remembered per scope and name for the file."""
    if ctx is not None:
        cache = ctx.analysis(SharedScopes).by_key
        key = (scope, name)
        found = cache.get(key)
        if found is None:
            found = cache[key] = scopes_sharing(scope, name)
        return found
    found: list[Scope] = [scope]
    for node in ast.walk(scope):
        if node is scope or not isinstance(node, FUNCTIONS):
            continue
        if is_parameter(node, name) or any(not isinstance(b, ast.Global | ast.Nonlocal) for b in bindings(node, name)):
            continue
        found.append(node)
    return found


def simple_assignment(store: ast.AST, ctx: Context) -> ast.expr | None:
    """The value of ``name = value`` (or ``name: T = value``) when ``store`` is that plain name target."""
    statement = parent(store, ctx)
    if isinstance(statement, ast.Assign) and any(t is store for t in statement.targets):
        return statement.value
    if isinstance(statement, ast.AnnAssign) and statement.target is store:
        return statement.value
    return None


def bound_value(store: ast.Name, ctx: Context) -> ast.expr | None:
    """``x = value``, or the matching part of ``a, b = f(), g()``."""
    value = simple_assignment(store, ctx)
    if value is not None:
        return value
    target = parent(store, ctx)
    statement = parent(target, ctx) if isinstance(target, ast.Tuple) else None
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and statement.targets[0] is target
        and isinstance(statement.value, ast.Tuple)
        and len(statement.value.elts) == len(target.elts)  # type: ignore[union-attr]
    ):
        return statement.value.elts[target.elts.index(store)]  # type: ignore[union-attr]
    return None


def enclosing_loop(node: ast.AST, ctx: Context) -> ast.For | ast.AsyncFor | ast.While | None:
    """The innermost loop whose body (not its iterable or test) contains ``node``, within the same scope."""
    previous: ast.AST = node
    for ancestor in ancestors(node, ctx.parents()):
        if isinstance(ancestor, SCOPES):
            return None
        if isinstance(ancestor, LOOPS) and any(previous is s for s in [*ancestor.body, *ancestor.orelse]):
            return ancestor
        previous = ancestor
    return None


def conditional_between(node: ast.AST, container: ast.AST, ctx: Context) -> bool:
    """True when something between ``container`` and ``node`` may skip ``node`` on the way (if, try, match...)."""
    previous: ast.AST = node
    for ancestor in ancestors(node, ctx.parents()):
        if ancestor is container:
            return False
        if isinstance(ancestor, ast.If | ast.IfExp | ast.Try | ast.BoolOp | ast.Match | ast.ExceptHandler):
            if isinstance(ancestor, ast.If) and previous is ancestor.test:
                previous = ancestor
                continue
            if isinstance(ancestor, ast.Try) and any(previous is s for s in ancestor.body):
                previous = ancestor  # the body of a try runs (the first statements at least)
                continue
            if isinstance(ancestor, ast.BoolOp) and previous is ancestor.values[0]:
                previous = ancestor
                continue
            return True
        if isinstance(ancestor, ast.comprehension | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            return True
        previous = ancestor
    return False


def exclusive(a: ast.AST, b: ast.AST, ctx: Context) -> bool:
    """True when ``a`` and ``b`` sit in different arms of one ``if``/``try``/``match`` (they never both run in one
    pass), or in different functions."""
    chain_a = [a, *ancestors(a, ctx.parents())]
    seen = {id(n): i for i, n in enumerate(chain_a)}
    previous_b: ast.AST = b
    for ancestor in [b, *ancestors(b, ctx.parents())]:
        if id(ancestor) in seen:
            index = seen[id(ancestor)]
            if index == 0 or ancestor is b:
                return False
            arm_a, arm_b = _arm(ancestor, chain_a[index - 1]), _arm(ancestor, previous_b)
            return bool(arm_a) and bool(arm_b) and arm_a != arm_b
        if isinstance(ancestor, SCOPES):
            return True
        previous_b = ancestor
    return True


def _arm(node: ast.AST, child: ast.AST) -> str:
    """Which arm of a branching statement ``child`` is in ("" for anything that is not an exclusive arm)."""
    if isinstance(node, ast.If | ast.IfExp):
        if child is node.test:
            return ""
        return "body" if (child is node.body or (isinstance(node.body, list) and child in node.body)) else "orelse"
    if isinstance(node, ast.Try):  # the body may run (in part) before any handler: only handlers exclude each other
        return f"handler{node.handlers.index(child)}" if child in node.handlers else ""
    if isinstance(node, ast.Match):
        return f"case{node.cases.index(child)}" if child in node.cases else ""
    return ""


def reaching_bindings(name: str, use: ast.AST, ctx: Context) -> list[ast.AST] | None:
    """The bindings of ``name`` whose value may reach ``use``: the last one that surely runs before it, plus any
    later one in a loop around both (the next iteration sees it). None when that is not clear."""
    scope = scope_of(use, ctx)
    stores = [
        s
        for s in bindings(scope, name, ctx)
        if not (isinstance(s, ast.Name) and isinstance(parent(s, ctx), ast.AugAssign))
    ]
    before = sorted((s for s in stores if position(s) < position(use)), key=position)
    if not before or is_parameter(scope, name):
        return None
    last = before[-1]
    if not dominates(last, use, ctx.parents()):
        return None
    reaching = [last]
    loops = [a for a in ancestors(use, ctx.parents()) if isinstance(a, LOOPS) and is_inside(a, scope, ctx)]
    for store in stores:
        if position(store) > position(use) and any(is_inside(store, loop, ctx) for loop in loops):
            reaching.append(store)
    return reaching


def step_window(node: ast.AST, calls: list[ast.Call], ctx: Context) -> list[ast.Call]:
    """The calls that run in the same training step before ``node``: in the innermost loop around ``node`` (or
    its scope), after the last ``.step(...)`` before it, and not in a branch that excludes ``node``. ``calls`` are
    in source order (:func:`scope_calls`)."""
    loop = enclosing_loop(node, ctx)
    # Inside the loop by source range: the same as walking up the parents, without walking (a long file has many
    # steps, each asking about every call); only the calls between the loop's start and ``node`` are looked at.
    start, end = (position(loop), end_position(loop)) if loop is not None else ((0, 0), (1 << 62, 0))
    here = position(node)
    calls = calls[bisect.bisect_left(calls, start, key=position) : bisect.bisect_left(calls, here, key=position)]
    after = (0, 0)
    for call in calls:
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "step"
            and end_position(call) <= here
            and start <= position(call)
            and end_position(call) <= end
        ):
            after = max(after, end_position(call))
    return sorted(
        (
            c
            for c in calls
            if max(after, start) <= position(c) < here and end_position(c) <= end and not exclusive(c, node, ctx)
        ),
        key=position,
    )


def scope_calls(scope: Scope, ctx: Context) -> list[ast.Call]:
    """The calls of ``scope``'s own code (not of functions nested in it) in source order, listed once per scope
    and file."""
    cache = ctx.analysis(ScopeCalls).by_scope
    found = cache.get(scope)
    if found is None:
        found = cache[scope] = sorted((n for n in scope_nodes(scope) if isinstance(n, ast.Call)), key=position)
    return found


@dataclass(slots=True)
class ScopeCalls(Analysis):
    by_scope: dict[ast.AST, list[ast.Call]] = field(default_factory=dict)


@dataclass(slots=True)
class SharedScopes(Analysis):
    by_key: dict[tuple[ast.AST, str], list[Scope]] = field(default_factory=dict)


def name_loads(scope: Scope, ctx: Context) -> dict[str, list[ast.Name]]:
    """The reads of each name in ``scope``'s own code, indexed once per scope and file."""
    cache = ctx.analysis(NameLoads).by_scope
    found = cache.get(scope)
    if found is None:
        found = cache[scope] = {}
        for node in scope_nodes(scope):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                found.setdefault(node.id, []).append(node)
    return found


@dataclass(slots=True)
class NameLoads(Analysis):
    by_scope: dict[ast.AST, dict[str, list[ast.Name]]] = field(default_factory=dict)


def file_mentions(ctx: Context, *words: str) -> bool:
    """Whether the file's text contains any of ``words`` (cached per file: rules call this for every node as a
    cheap way to skip files that cannot have their pattern)."""
    cache = ctx.analysis(Mentions).words
    found = False
    for word in words:
        if word not in cache:
            cache[word] = word in ctx.source.text
        found = found or cache[word]
    return found


@dataclass(slots=True)
class Mentions(Analysis):
    """Whether the file's text contains a word, looked up once per word and file."""

    words: dict[str, bool] = field(default_factory=dict)
