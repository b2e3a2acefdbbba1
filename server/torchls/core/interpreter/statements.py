"""Statements: assignments and binding, branches, loops, ``with`` and ``try``; how envs split and merge.

Statements are evaluated in order, scope by scope. After a branch or a loop a name keeps its value only where
every path agrees; a short loop over known items runs item by item; a loop whose body reads what an earlier
iteration set is also evaluated once as its first iteration. ``with`` blocks set the grad mode and the default
device, ``try`` blocks that catch torch's errors mark their body as guarded.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from torchls.core import facts
from torchls.core.interpreter.base import _UNROLL_ITEMS, Env, InterpreterBase
from torchls.core.interpreter.known_values import _known_items, _merged
from torchls.core.rules.base import Context
from torchls.core.statements import assigned_names, target_names
from torchls.core.values import (
    DictValue,
    InstanceValue,
    Literal,
    ModuleValue,
    Number,
    OfClass,
    SequenceOf,
    TensorValue,
    TupleValue,
    Value,
    merge,
)

_RUNTIME_ERRORS = frozenset(
    {"Exception", "BaseException", "RuntimeError", "ValueError", "TypeError", "AssertionError", "IndexError"}
)


class StatementsMixin(InterpreterBase):
    """Evaluates statements and binds assigned values to names, attributes and subscripts."""

    def _assign(self, node: ast.Assign, env: Env) -> None:
        if len(node.targets) == 1:
            self._note_dim_names(node.targets[0], node.value)
        value = self.expr(node.value, env)
        for target in node.targets:
            self.bind(target, value, env)

    def _augassign(self, node: ast.AugAssign, env: Env) -> None:
        if isinstance(node.target, ast.Name):
            current = self._load(node.target.id, env)
            self.record(node.target, current)
        else:
            current = self.expr(node.target, env)
        other = self.expr(node.value, env)
        result = self._arithmetic(current, other, node.op, node)
        if isinstance(current, TensorValue) and isinstance(result, TensorValue):
            # `w -= x` on a tensor is in place: still the same (leaf) tensor, now with other values.
            result = result.with_(is_leaf=current.is_leaf, origin=current.origin, requires_grad=current.requires_grad)
        if isinstance(node.target, ast.Name):
            env[node.target.id] = result

    def _annassign(self, node: ast.AnnAssign, env: Env) -> None:
        if node.value is not None:
            self.bind(node.target, self.expr(node.value, env), env)
        elif isinstance(node.target, ast.Name):
            env[node.target.id] = self._annotation(node.annotation)

    def _return(self, node: ast.Return, env: Env) -> None:
        value = self.expr(node.value, env) if node.value is not None else None
        if self._returns is not None:
            self._returns.append(value)

    def _if(self, node: ast.If, env: Env) -> None:
        test = self.expr(node.test, env)
        body, orelse = dict(env), dict(env)
        body.update(self._narrowed(node.test, env))
        returns = self._returns
        before_body = len(returns) if returns is not None else 0
        self.block(node.body, body)
        before_orelse = len(returns) if returns is not None else 0
        self.block(node.orelse, orelse)
        if isinstance(test, Literal) and not isinstance(node.test, ast.Constant):
            # A test the code decides (`if i == 0` in an unrolled loop): only that branch runs. Both were walked
            # for the rules; a literal `if True:`/`if 0:` is left to merging, as authors toggle those by hand.
            # What the branch that does not run would return is not what the function returns.
            if returns is not None:
                if test.value:
                    del returns[before_orelse:]
                else:
                    del returns[before_body:before_orelse]
            env.update(body if test.value else orelse)
            for name in set(env) - set(body if test.value else orelse):
                env.pop(name)
            return
        _merge_into(env, body, orelse)

    def _assert(self, node: ast.Assert, env: Env) -> None:
        self.expr(node.test, env)
        if node.msg is not None:
            self.expr(node.msg, env)
        env.update(self._narrowed(node.test, env))  # past `assert isinstance(m, nn.Conv2d)`, m is one

    def _narrowed(self, test: ast.expr, env: Env) -> Env:
        """What ``if isinstance(m, nn.Conv2d):`` (alone or in an ``and``) proves about names in its body."""
        tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        narrowed: Env = {}
        for check in tests:
            if not (
                isinstance(check, ast.Call)
                and isinstance(check.func, ast.Name)
                and check.func.id == "isinstance"
                and "isinstance" not in env
                and len(check.args) == 2
                and isinstance(check.args[0], ast.Name)
            ):
                continue
            name, classes = check.args[0].id, check.args[1]
            value = self._instance_of(classes.elts if isinstance(classes, ast.Tuple) else [classes])
            current = env.get(name)
            if value is not None and not _at_least_as_precise(current, value):
                narrowed[name] = value
        return narrowed

    def _instance_of(self, classes: Sequence[ast.expr]) -> Value:
        """An instance of one of ``classes`` (torch classes or the file's modules), where they share a class."""
        found: list[Value] = []
        for cls in classes:
            qualname = self.ctx.qualify(cls)
            if qualname is not None and facts.ATTRIBUTE_BASES.get(qualname, qualname) == facts.TENSOR:
                found.append(TensorValue())
            elif qualname is not None and (facts.is_module_class(qualname) or qualname == facts.MODULE):
                found.append(OfClass(qualname))
            elif isinstance(cls, ast.Name) and cls.id in self.classes and self.classes[cls.id].torch_base:
                found.append(OfClass(self.classes[cls.id].torch_base or "", cls.id))
            elif qualname is not None and qualname.startswith("torch."):
                found.append(OfClass(qualname))  # an optimizer, a device...: only its class is proved
            else:
                return None
        if not found:
            return None
        result = found[0]
        for other in found[1:]:
            result = merge(result, other)
        return result

    def _loop_env(self, node: ast.AST, env: Env) -> Env:
        """The env a loop body starts with: names the loop assigns are unknown, as after any iteration."""
        inner = dict(env)
        for name in assigned_names(node):
            inner[name] = None
        return inner

    def _for(self, node: ast.For | ast.AsyncFor, env: Env) -> None:
        iterable = self.expr(node.iter, env)
        items = self._unrolled_items(iterable, node)
        if items is not None:
            # A short loop over a sequence the code spells out runs once per item, in order: its body sees
            # each item (a stage's width, a layer to append) rather than "one of them".
            self._unroll_budget -= len(items)
            for item in items:
                self.bind(node.target, item, env)
                self.block(node.body, env)
            self.block(node.orelse, env)
            return
        item = self._iteration(iterable, node.iter)
        self._first_iteration(node, env, lambda first: self.bind(node.target, item, first))
        inner = self._loop_env(node, env)
        self.bind(node.target, item, inner)
        sink = self._init_attribute_sink()
        before = dict(sink) if sink is not None else None
        self.block(node.body, inner)
        self.block(node.orelse, inner)
        _accumulated_lists(env, inner)
        if sink is not None and before is not None:
            _accumulated_lists(before, sink)  # self.samples = [] ... self.samples.append(...) in __init__
            sink.update({name: before[name] for name in before if isinstance(before[name], SequenceOf)})
        _merge_into(env, env, inner)

    def _first_iteration(self, node: ast.For | ast.AsyncFor | ast.While, env: Env, start: Callable) -> None:
        """The loop body once more, as its first iteration runs: with the values from before the loop, which the
        general pass forgets for every name the loop assigns (``h`` in ``logits, h = step(token, h)``). What it
        proves holds whenever the loop runs at all; its env is dropped. Two levels of loops at most."""
        if self._first_iterations >= 2:
            return
        carries = self._carrying_loops.get(node)
        if carries is None:
            carries = self._carrying_loops[node] = _carries_values(node)
        if not carries:
            return
        first = dict(env)
        sink = self._init_attribute_sink()
        kept = dict(sink) if sink is not None else None
        self._first_iterations += 1
        try:
            start(first)
            self.block(node.body, first)
        finally:
            self._first_iterations -= 1
            if sink is not None and kept is not None:  # what it stored on the instance goes with its env
                sink.clear()
                sink.update(kept)

    def _unrolled_items(self, iterable: Value, node: ast.For | ast.AsyncFor) -> tuple[Value, ...] | None:
        items = _known_items(iterable)
        if items is None or not 0 < len(items) <= _UNROLL_ITEMS or self._unroll_budget < len(items):
            return None
        if _leaves_early(node):
            return None
        return items

    def _while(self, node: ast.While, env: Env) -> None:
        self._first_iteration(node, env, lambda first: self.expr(node.test, first))
        inner = self._loop_env(node, env)
        self.expr(node.test, inner)
        self.block(node.body, inner)
        self.block(node.orelse, inner)
        _merge_into(env, env, inner)

    def _with(self, node: ast.With | ast.AsyncWith, env: Env) -> None:
        mode: bool | None = None
        sets_device = False
        for item in node.items:
            self.expr(item.context_expr, env)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, None, env)
            item_mode = _grad_mode(item.context_expr, self.ctx)
            mode = item_mode if item_mode is not None else mode
            context = item.context_expr
            sets_device |= isinstance(context, ast.Call) and self.ctx.qualify(context.func) == "torch.device"
        previous = (self.ctx.grad_enabled, self.default_device_changed, self.ctx.autocast)
        if mode is not None:
            self.ctx.grad_enabled = mode
        if sets_device:
            self.default_device_changed = True  # `with torch.device("cuda"):` makes factories create there
        if any(_starts_autocast(item.context_expr, self.ctx) for item in node.items):
            self.ctx.autocast = True
        self.block(node.body, env)
        self.ctx.grad_enabled, self.default_device_changed, self.ctx.autocast = previous

    def _try(self, node: ast.Try, env: Env) -> None:
        before = dict(env)
        guarded = any(_catches_runtime_errors(handler, self.ctx) for handler in node.handlers)
        self.ctx.guarded += guarded
        try:
            self.block(node.body, env)
        finally:
            self.ctx.guarded -= guarded
        for handler in node.handlers:
            inner = self._loop_env(ast.Module(body=node.body, type_ignores=[]), before)
            if handler.type is not None:
                self.expr(handler.type, inner)
            if handler.name:
                inner[handler.name] = None
            self.block(handler.body, inner)
            _merge_into(env, env, inner)
        self.block(node.orelse, env)
        self.block(node.finalbody, env)

    def bind(self, target: ast.expr, value: Value, env: Env) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
            self.record(target, value)
            self._visit_rules(target)
        elif isinstance(target, ast.Tuple | ast.List):
            items = value.items if isinstance(value, TupleValue) and len(value.items) == len(target.elts) else None
            if isinstance(value, SequenceOf):  # q, k, v = x.unbind(0): every item is one
                items = tuple(None if isinstance(e, ast.Starred) else value.item for e in target.elts)
            if isinstance(value, TensorValue) and not any(isinstance(e, ast.Starred) for e in target.elts):
                # q, k, v = qkv.permute(2, 0, 3, 1, 4): unpacking runs along the first dim
                row = TensorValue(
                    shape=value.dims[1:] if value.dims else None,
                    dtype=value.dtype,
                    device=value.device,
                    requires_grad=value.requires_grad,
                    is_leaf=False,
                )
                items = (row,) * len(target.elts)
            for index, element in enumerate(target.elts):
                self.bind(element, items[index] if items else None, env)
        elif isinstance(target, ast.Attribute):
            owner = self.expr(target.value, env)
            if isinstance(target.value, ast.Name) and target.value.id == "self" and self.ctx.klass is not None:
                self.ctx.klass.assigned.setdefault(target.attr, []).append(value)
            self._attribute_assigned(target, owner, value, env)
            sink = self._init_attribute_sink(target)
            if sink is not None:
                if target.attr in sink:
                    self.ctx.klass.unstable.add(target.attr)  # type: ignore[union-attr]
                sink[target.attr] = value
            self._visit_rules(target)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, None, env)
        else:  # subscript targets: evaluate their parts for the rules
            for child in ast.iter_child_nodes(target):
                if isinstance(child, ast.expr):
                    self.expr(child, env)
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                changed = env.get(target.value.id)
                if isinstance(changed, DictValue):
                    key = self.ctx.values.get(target.slice)
                    env[target.value.id] = changed.with_item(key.value, value) if isinstance(key, Literal) else None
                if isinstance(changed, TensorValue):
                    # x[i] = v changes values in place: same shape, but no longer what made it (softmax...).
                    env[target.value.id] = changed.with_(provenance=None, origin=None)
                if isinstance(changed, ModuleValue):
                    # backbone[3] = nn.Linear(512, 10): still a Sequential/ModuleList, its layers no longer known
                    env[target.value.id] = OfClass(changed.qualname, changed.user_class)
            self._visit_rules(target)

    def _attribute_assigned(self, target: ast.Attribute, owner: Value, value: Value, env: Env) -> None:
        """``cfg.lr = 0.1`` or ``model.head = nn.Linear(...)`` outside the class: what the object now holds."""
        if isinstance(owner, TensorValue) and target.attr == "requires_grad" and isinstance(target.value, ast.Name):
            # loss.requires_grad = True: whether it now requires grad is what was assigned, not what it was
            given = value.value if isinstance(value, Literal) and isinstance(value.value, bool) else None
            env[target.value.id] = owner.with_(requires_grad=given, no_graph=None)
            return
        if isinstance(owner, InstanceValue) and owner.qualname == "namespace" and isinstance(target.value, ast.Name):
            fields = owner.arg("fields")
            if isinstance(fields, DictValue):
                env[target.value.id] = InstanceValue("namespace", (("fields", fields.with_item(target.attr, value)),))
            return
        klass = self._user_class_of(owner)
        if klass is not None and not (isinstance(target.value, ast.Name) and target.value.id == "self"):
            klass.unstable.add(target.attr)  # set from outside: no longer what __init__ made, for any instance
            klass.assigned.setdefault(target.attr, []).append(value)


def _at_least_as_precise(current: Value, narrowed: Value) -> bool:
    """True when what a name holds already says what an ``isinstance`` test proves (or more)."""
    if isinstance(narrowed, TensorValue):
        return isinstance(current, TensorValue)
    if isinstance(narrowed, OfClass) and isinstance(current, ModuleValue | OfClass):
        if narrowed.user_class is not None:
            return current.user_class == narrowed.user_class
        return narrowed.qualname == facts.MODULE or (
            current.user_class is None and current.qualname == narrowed.qualname
        )
    return False


def _carries_values(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """Some name the loop body reads before the body assigns it, and assigns later (``h`` in ``logits, h =
    step(token, h)``): only then does the first iteration see values the general pass forgets."""
    assigned = set(assigned_names(loop))
    if isinstance(loop, ast.For | ast.AsyncFor):
        loop_variables: set[str] = set()
        target_names(loop.target, loop_variables)
        assigned -= loop_variables  # the loop variable is the same in both passes
    if not assigned:
        return False
    stored: set[str] = set()
    for statement in loop.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in assigned - stored:
                return True
        stored |= set(assigned_names(statement)) if isinstance(statement, ast.stmt) else set()
    return False


def _accumulated_lists(before: Env, after: Env) -> None:
    """``preds = []`` then ``preds.append(logits.argmax(1))`` in a loop of unknown length: afterwards ``preds``
    holds any number of such tensors (:class:`SequenceOf`), in both envs so the merge keeps it."""
    for name, grown in after.items():
        start = before.get(name)
        if not (isinstance(start, TupleValue) and not start.items and isinstance(grown, TupleValue) and grown.items):
            continue
        item = _merged(grown.items)
        if isinstance(item, TensorValue | Number) or (
            isinstance(item, TupleValue)
            and any(isinstance(i, TensorValue | Number) for i in item.items)
            and all(i is None or isinstance(i, TensorValue | Number) for i in item.items)
        ):
            # tensors, Python numbers, or records that are tuples of them (parts not known stay unknown)
            before[name] = after[name] = SequenceOf(item)


def _leaves_early(loop: ast.For | ast.AsyncFor) -> bool:
    """The loop body may skip the rest of an iteration or the loop (break, continue, return, raise, yield)."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Break | ast.Continue | ast.Return | ast.Raise | ast.Yield | ast.YieldFrom | ast.Try):
            return True
    return False


def _merge_into(env: Env, a: Env, b: Env) -> None:
    for name in set(a) | set(b):
        env[name] = merge(a.get(name), b.get(name)) if name in a and name in b else None


def _catches_runtime_errors(handler: ast.ExceptHandler, ctx: Context) -> bool:
    """A bare ``except:`` or one that catches what torch raises for shape, device and dtype errors."""
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for kind in types:
        name = ctx.qualify(kind) or (kind.id if isinstance(kind, ast.Name) else "")
        if name.rsplit(".", 1)[-1] in _RUNTIME_ERRORS or name.startswith("torch."):
            return True
    return False


def _grad_mode(expr: ast.expr, ctx: Context) -> bool | None:
    """What a ``with`` item does to grad mode: True (enables), False (disables) or None (leaves it)."""
    call = expr if isinstance(expr, ast.Call) else None
    qualname = ctx.qualify(call.func if call is not None else expr)
    first = call.args[0] if call is not None and call.args else None
    if qualname in ("torch.enable_grad", "torch.autograd.enable_grad"):
        return True
    if qualname in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled") and isinstance(first, ast.Constant):
        return bool(first.value)
    if qualname in ("torch.inference_mode", "torch.autograd.inference_mode") and isinstance(first, ast.Constant):
        return None if first.value is False else False  # inference_mode(False) changes nothing
    return False if _disables_grad(expr, ctx) else None


_AUTOCASTS = frozenset(
    {
        "torch.autocast",
        "torch.amp.autocast",
        "torch.cuda.amp.autocast",
        "torch.cpu.amp.autocast",
        "torch.amp.autocast_mode.autocast",
    }
)


def _starts_autocast(expr: ast.expr, ctx: Context) -> bool:
    """``with torch.autocast(...)`` (any spelling), unless it says ``enabled=False``."""
    if not isinstance(expr, ast.Call) or ctx.qualify(expr.func) not in _AUTOCASTS:
        return False
    enabled = next((k.value for k in expr.keywords if k.arg == "enabled"), None)
    return not (isinstance(enabled, ast.Constant) and enabled.value is False)


def _disables_grad(expr: ast.expr, ctx: Context) -> bool:
    """``torch.no_grad()``, ``torch.inference_mode()``, ``torch.set_grad_enabled(False)``, or the decorator form."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    qualname = ctx.qualify(target)
    if qualname in (
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
    ):
        return True
    if qualname == "torch.set_grad_enabled" and isinstance(expr, ast.Call) and expr.args:
        first = expr.args[0]
        return isinstance(first, ast.Constant) and first.value is False
    return False
