"""What calling one of the file's functions does to the train/eval mode of the models it is given.

``train_epoch(model, ...)`` that starts with ``model.train()`` leaves ``model`` in train mode;
``evaluate(model)`` that calls ``model.eval()`` and later ``model.train()`` leaves it in train mode too; one that
calls ``model.eval()`` only under an ``if``, or hands the model to code we cannot see, leaves the mode unknown.
The interpreter applies these effects at each call, so a rule sees the mode a model really has when some helper
evaluates it. Pure ``ast``: no values, just the statements of the function and of the functions it calls.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

Function = ast.FunctionDef | ast.AsyncFunctionDef

UNCHANGED = "unchanged"
# Callees that receive a model without changing its mode.
_HARMLESS = frozenset({"print", "len", "isinstance", "type", "id", "str", "repr", "getattr", "hasattr", "sum", "list"})
_CONDITIONAL = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match)


def mode_effects(function: Function, functions: Mapping[str, Function]) -> dict[str, bool | None]:
    """Parameter -> the mode it is left in (True: train, False: eval, None: not known); absent: unchanged."""
    return _effects(function, functions, frozenset())


def call_effect(call: ast.Call, name: str, functions: Mapping[str, Function]) -> bool | str | None:
    """What the call does to the mode of the model ``name`` it is given: True (train), False (eval), None (not
    known), or :data:`UNCHANGED`. ``functions``: the file's functions by name (the callees that can be seen)."""
    return _callee_effect(call, name, functions, frozenset())


def _effects(function: Function, functions: Mapping[str, Function], visiting: frozenset) -> dict[str, bool | None]:
    parameters = [a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]]
    effects: dict[str, bool | None] = {}
    for parameter in parameters:
        state = _walk(function.body, parameter, functions, visiting | {function.name}, UNCHANGED, False)
        if state != UNCHANGED:
            effects[parameter] = state  # type: ignore[assignment]
    return effects


def _walk(
    body: list[ast.stmt],
    name: str,
    functions: Mapping[str, Function],
    visiting: frozenset,
    state: object,
    conditional: bool,
) -> object:
    for statement in body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if _rebinds(statement, name):
            return None  # the name now holds something else: what happens next is not about the argument
        inner_conditional = conditional or isinstance(statement, _CONDITIONAL)
        for event in _events(statement, name, functions, visiting):
            state = _apply(state, event, inner_conditional)
        for block in _blocks(statement):
            state = _walk(block, name, functions, visiting, state, inner_conditional)
    return state


def _apply(state: object, event: object, conditional: bool) -> object:
    if event == UNCHANGED:
        return state
    if not conditional:
        return event
    return state if state == event else None  # maybe this, maybe what it was: known only when both agree


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    blocks = [getattr(statement, field, None) for field in ("body", "orelse", "finalbody")]
    found = [b for b in blocks if isinstance(b, list)]
    found += [handler.body for handler in getattr(statement, "handlers", ())]
    found += [case.body for case in getattr(statement, "cases", ())]
    return found


def _own_expressions(statement: ast.stmt) -> list[ast.AST]:
    """The expressions of the statement itself, not of the blocks nested in it."""
    nodes: list[ast.AST] = []
    for field, value in ast.iter_fields(statement):
        if field in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        for part in value if isinstance(value, list) else [value]:
            if isinstance(part, ast.AST):
                nodes.extend(ast.walk(part))
    return nodes


def _events(statement: ast.stmt, name: str, functions: Mapping[str, Function], visiting: frozenset) -> list[object]:
    events: list[object] = []
    for node in _own_expressions(statement):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == name:
            if func.attr == "eval":
                events.append(False)
            elif func.attr == "train":
                given = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "mode"), None)
                if given is None:
                    events.append(True)
                else:
                    events.append(
                        given.value if isinstance(given, ast.Constant) and isinstance(given.value, bool) else None
                    )
            continue
        passed = [a for a in node.args if isinstance(a, ast.Name) and a.id == name]
        passed += [k.value for k in node.keywords if isinstance(k.value, ast.Name) and k.value.id == name]
        if not passed:
            continue
        events.append(_callee_effect(node, name, functions, visiting))
    return events


def _callee_effect(call: ast.Call, name: str, functions: Mapping[str, Function], visiting: frozenset) -> object:
    func = call.func
    if isinstance(func, ast.Name) and func.id in _HARMLESS and func.id not in functions:
        return UNCHANGED
    callee = functions.get(func.id) if isinstance(func, ast.Name) else None
    if callee is None or callee.name in visiting:
        return None  # code we cannot see may put the model in either mode
    parameters = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
    effects = _effects(callee, functions, visiting)
    for parameter, argument in zip(parameters, call.args, strict=False):
        if isinstance(argument, ast.Name) and argument.id == name:
            return effects.get(parameter, UNCHANGED)
    for keyword in call.keywords:
        if isinstance(keyword.value, ast.Name) and keyword.value.id == name and keyword.arg is not None:
            return effects.get(keyword.arg, UNCHANGED)
    return None


def _rebinds(statement: ast.stmt, name: str) -> bool:
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor):
        targets = [statement.target]
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))
