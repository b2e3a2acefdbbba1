from __future__ import annotations

import ast

from torchls.core import control_flow
from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow, optimizers
from torchls.core.statements import assigned_names, statement_targets
from torchls.core.values import Literal


class ZeroGradEveryMicroBatch(Rule):
    """梯度累积时 `optimizer.step()` 只每隔几步执行一次，`zero_grad()` 却每次迭代都执行：累积被清掉了。

    **为什么是问题**：写成 `if (i + 1) % accum_steps == 0: optimizer.step()`，说明作者想把几个 micro-batch
    的梯度累加起来再更新一次。可是 `optimizer.zero_grad()`（或 `model.zero_grad()`）不在这个条件里，每次迭代
    都会执行（也包括循环每次都调用的同一个类的方法里无条件执行的清零，如 `self.training_step(...)` 里的），
    于是前几个 micro-batch 的梯度还没用上就被清零，每次 `step()` 只用到最后一个 micro-batch 的梯度：
    等效 batch 没有变大，其余的前向和反向白算，而且不报错。只在同一个循环里 `backward()` 和 `zero_grad()`
    都无条件执行、同一个优化器的每个 `step()` 都在形如 `计数 % N == 0` 的条件下（计数在这个循环里变化）、
    循环里（或循环调用的本文件函数里）把损失除以同一个 `N`（`loss / accum_steps`，梯度累积的标志）、
    条件分支里没有自己的 `backward()`、也没有手工改写 `.grad` 时才报告。

    **示例**
    ```python
    for i, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
    ```

    **改正**：把清零放进执行 `step()` 的分支，紧跟在 `step()` 之后：
    ```python
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    ```

    **自动修复**：不提供：清零的新位置要由作者决定。
    """

    code = "TL414"
    requires_text = ("zero_grad",)
    name = "zero-grad-every-micro-batch"
    severity = Severity.ERROR
    kb_entry = "torch.optim.Optimizer.zero_grad"
    node_types = (ast.For, ast.AsyncFor, ast.While)

    def visit(self, node: ast.For | ast.AsyncFor | ast.While, ctx: Context) -> None:
        if not flow.file_mentions(ctx, "backward") or not flow.file_mentions(ctx, "%"):
            return
        calls = [n for n in optimizers.loop_body_nodes(node) if isinstance(n, ast.Call)]
        # A trainer's step split into methods (``loss = self.training_step(batch)`` zeroes and backpropagates):
        # the unconditional calls of a method of the same class that the loop calls on every iteration.
        sites = _inlined_sites(node, calls, ctx)
        inlined = _inlined_method_calls(sites, ctx)
        if inlined is None:
            return
        every_iteration = {id(c) for c in inlined}
        if not any(_is_backward(c) for c in [*calls, *inlined]):
            return
        counters = _counters(node)
        if not counters:
            return
        steps: dict[str, list[ast.Call]] = {}
        for call in calls:
            target = optimizers.stepped(call, ctx)
            if target is None:
                continue
            expr, closure = target
            if closure:
                return  # step(closure): the closure clears and computes the gradients itself
            steps.setdefault(ctx.text(expr), []).append(call)
        if not steps:
            return
        stepping, zeroing = optimizers.stepping_and_zeroing_functions(ctx)
        site_ids = {id(site) for site in sites}
        if _writes_gradients(node, [c for c in calls if id(c) not in site_ids], zeroing):
            return  # gradients accumulated by hand (`p.grad = total`): clearing .grad each time is part of it
        for optimizer, stepped in steps.items():
            gates = [_gate(call, node, counters, ctx) for call in stepped]
            if any(g is None for g in gates):
                continue  # stepped on every iteration somewhere: no accumulation to defeat
            gate_ifs = {id(g[0]) for g in gates if g is not None}
            if not all(_scaled_by(node, g[1], ctx) for g in gates if g is not None):
                continue  # the loss is not divided by N: stepping every N-th batch, not accumulating
            if _alternates(stepped, steps, ctx):
                continue
            if any(_is_backward(c) and _inside_any(c, gates, ctx) for c in calls):
                continue  # the gated branch computes its own gradients
            if not any(
                _is_backward(c) and (id(c) in every_iteration or _runs_every_iteration(c, node, ctx))
                for c in [*calls, *inlined]
            ):
                continue
            outside = [c for c in calls if id(c) not in site_ids]  # the inlined methods' own calls were read above
            if _may_step_elsewhere(outside, optimizer, stepped, gate_ifs, stepping, ctx):
                continue
            for call in [*calls, *inlined]:
                receiver = optimizers.zeroed(call)
                if receiver is None or not (id(call) in every_iteration or _runs_every_iteration(call, node, ctx)):
                    continue
                if _inside_any(call, gates, ctx):
                    continue
                if not _clears(receiver, optimizer, stepped[0], ctx):
                    continue
                divisor = ctx.text(gates[0][1]) if gates[0] is not None else "N"
                message = (
                    f"`{optimizer}.step()` 只每 `{divisor}` 步执行一次（梯度累积），`{ctx.text(receiver)}.zero_grad()` "
                    "却每次迭代都执行：前面各个 micro-batch 的梯度在 `step()` 之前就被清掉了"
                )
                ctx.report(call, message)
                return


def _inlined_sites(loop: ast.AST, calls: list[ast.Call], ctx: Context) -> list[ast.Call]:
    """The loop's calls ``self.method(...)`` that run on every iteration, to a plain method of the class around
    the loop (its body read as if it were the loop's)."""
    sites = []
    for call in calls:
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            continue
        function = _called_function(call, ctx)
        if function is None or function.decorator_list or not _runs_every_iteration(call, loop, ctx):
            continue
        sites.append(call)
    return sites


def _inlined_method_calls(sites: list[ast.Call], ctx: Context) -> list[ast.Call] | None:
    """The calls that run unconditionally in the methods the ``sites`` (:func:`_inlined_sites`) call, so on every
    iteration of the loop; None when such a method writes ``.grad`` by hand or steps something (then nothing is
    claimed)."""
    stepping, _ = optimizers.stepping_and_zeroing_functions(ctx)
    inlined: list[ast.Call] = []
    for site in sites:
        function = _called_function(site, ctx)
        assert function is not None
        nodes = list(control_flow.scope_nodes(function))
        for inner in nodes:
            if isinstance(inner, ast.Attribute) and inner.attr == "grad" and isinstance(inner.ctx, ast.Store | ast.Del):
                return None
            if isinstance(inner, ast.Call) and optimizers.stepped(inner, ctx) is not None:
                return None
            steps_by_name = isinstance(inner, ast.Call) and optimizers.called_name(inner) in stepping
            if steps_by_name and (_own_call(inner) or optimizers.passes(inner, {"self"})):  # type: ignore[arg-type]
                return None  # a function of the file that steps something, or one handed what may step
        for inner in nodes:
            if not isinstance(inner, ast.Call) or flow.enclosing_loop(inner, ctx) is not None:
                continue
            if flow.conditional_between(inner, function, ctx):
                continue
            inlined.append(inner)
    return inlined


def _own_call(call: ast.Call) -> bool:
    """``f(...)`` or ``self.f(...)``: what may run a function of this file (``model.train()`` runs torch's)."""
    func = call.func
    return isinstance(func, ast.Name) or (
        isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
    )


def _is_backward(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "backward"


def _counters(loop: ast.For | ast.AsyncFor | ast.While) -> set[str]:
    """Names and attribute paths whose value changes from one iteration of ``loop`` to the next: the loop
    variables and what its body assigns (``i``, ``step``, ``self.global_step``)."""
    found = set(assigned_names(loop))  # the loop's own target included
    for statement in ast.walk(loop):
        if isinstance(statement, ast.stmt):
            for target in statement_targets(statement):
                if isinstance(target, ast.Attribute) and optimizers.chain(target):
                    found.add(ast.unparse(target))
    return found


def _gate(step: ast.Call, loop: ast.AST, counters: set[str], ctx: Context) -> tuple[ast.If, ast.expr] | None:
    """The ``if`` that lets ``step`` run only every N-th iteration (``if (i + 1) % N == 0:``, or ``step`` after
    ``if i % N != 0: continue``) with its N; None when ``step`` may run on every iteration."""
    previous: ast.AST = step
    for ancestor in control_flow.ancestors(step, ctx.parents()):
        if ancestor is loop:
            break
        if isinstance(ancestor, (*control_flow.SCOPES, *flow.LOOPS)):
            return None
        if isinstance(ancestor, ast.If) and previous is not ancestor.test:
            in_body = any(previous is s for s in ancestor.body)
            divisor = _periodic(ancestor.test, counters, ctx, positive=in_body)
            if divisor is not None:
                return ancestor, divisor
        previous = ancestor
    else:
        return None
    # step() at the top level of the loop body, after `if i % N != 0: continue`
    statement = previous
    for earlier in loop.body:  # type: ignore[attr-defined]
        if earlier is statement:
            break
        if (
            isinstance(earlier, ast.If)
            and len(earlier.body) == 1
            and isinstance(earlier.body[0], ast.Continue)
            and not earlier.orelse
        ):
            divisor = _periodic(earlier.test, counters, ctx, positive=False)
            if divisor is not None:
                return earlier, divisor
    return None


def _periodic(test: ast.expr, counters: set[str], ctx: Context, positive: bool) -> ast.expr | None:
    """The N of a test that holds once every N iterations (``positive``: ``c % N == 0``; else its negation
    ``c % N != 0``), with ``c`` built from a loop counter and N not provably 1."""
    if isinstance(test, ast.BoolOp):
        # `a % N == 0 or last_batch` still gates; `and` too. For the negated form only the plain test is read.
        if not positive:
            return None
        for value in test.values:
            found = _periodic(value, counters, ctx, positive)
            if found is not None:
                return found
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        if isinstance(test.operand, ast.BinOp):
            return _modulo(test.operand, counters, ctx) if positive else None
        return _periodic(test.operand, counters, ctx, not positive)
    if isinstance(test, ast.BinOp) and not positive:
        return _modulo(test, counters, ctx)  # `if i % N: continue`
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op = test.ops[0]
    if not isinstance(op, ast.Eq if positive else ast.NotEq):
        return None
    left, right = test.left, test.comparators[0]
    if _is_zero(right):
        return _modulo(left, counters, ctx)
    if _is_zero(left):
        return _modulo(right, counters, ctx)
    return None


def _is_zero(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value == 0 and not isinstance(expr.value, bool)


def _modulo(expr: ast.expr, counters: set[str], ctx: Context) -> ast.expr | None:
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod)):
        return None
    if not any(isinstance(n, ast.Name | ast.Attribute) and ast.unparse(n) in counters for n in ast.walk(expr.left)):
        return None
    divisor = expr.right
    value = ctx.value(divisor)
    literal = (
        divisor.value if isinstance(divisor, ast.Constant) else value.value if isinstance(value, Literal) else None
    )
    if isinstance(literal, bool) or (isinstance(literal, int | float) and literal <= 1):
        return None  # every iteration: no accumulation
    if literal is not None and not isinstance(literal, int | float):
        return None
    return divisor


def _writes_gradients(loop: ast.AST, calls: list[ast.Call], zeroing: set[str]) -> bool:
    """The loop writes ``.grad`` itself (``p.grad = ...``, ``p.grad.copy_(...)``), or calls a function of this file
    that clears or writes gradients."""
    for inner in optimizers.loop_body_nodes(loop):  # type: ignore[arg-type]
        if isinstance(inner, ast.Attribute) and inner.attr == "grad" and isinstance(inner.ctx, ast.Store | ast.Del):
            return True
        if (
            isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Attribute)
            and isinstance(inner.func.value, ast.Attribute)
            and inner.func.value.attr == "grad"
            and inner.func.attr.endswith("_")
        ):
            return True  # p.grad.copy_(...), p.grad.add_(...)
    return any(
        optimizers.called_name(c) in zeroing and not (isinstance(c.func, ast.Attribute) and c.func.attr == "zero_grad")
        for c in calls
    )


def _scaled_by(loop: ast.AST, divisor: ast.expr, ctx: Context) -> bool:
    """Somewhere in the loop a value is divided by the gate's N (``loss / accum_steps``, ``loss /= N``): the mark
    of gradient accumulation, which averages the N micro-batches. Also inside a function of the file the loop
    calls (``loss = micro_loss(model, x, y)`` returning ``... / ACCUM_STEPS``), when that function divides by the
    same module-level name or by a parameter the call passes N to."""
    wanted = ctx.text(divisor)
    if any(_divides_by(inner, wanted, ctx) for inner in optimizers.loop_body_nodes(loop)):  # type: ignore[arg-type]
        return True
    scope = flow.scope_of(loop, ctx)
    global_divisor = isinstance(divisor, ast.Name) and _global_name(divisor.id, scope, ctx)
    calls = [n for n in optimizers.loop_body_nodes(loop) if isinstance(n, ast.Call)]  # type: ignore[arg-type]
    return any(_helper_scales(call, wanted, global_divisor, ctx, 2, None) for call in calls)


def _divides_by(node: ast.AST, wanted: str, ctx: Context) -> bool:
    if isinstance(node, ast.BinOp | ast.AugAssign) and isinstance(node.op, ast.Div):
        right = node.right if isinstance(node, ast.BinOp) else node.value
        return ctx.text(right) == wanted
    return False


def _global_name(name: str, scope: control_flow.Scope, ctx: Context) -> bool:
    """``name`` read in ``scope`` is the module-level variable: not bound in the function (nor a parameter)."""
    if isinstance(scope, ast.Module):
        return True
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) or flow.scope_of(scope, ctx) is not ctx.tree:
        return False
    return not flow.is_parameter(scope, name) and not flow.bindings(scope, name, ctx)


def _helper_scales(
    call: ast.Call, wanted: str, global_divisor: bool, ctx: Context, depth: int, holding: set[str] | None
) -> bool:
    """``call`` runs a module-level function of the file that divides something by N: the same module-level name
    ``wanted`` (``global_divisor``), or a parameter the call binds to N: an argument spelled ``wanted`` in the
    loop's own call, or one of the caller's parameters ``holding`` N in a nested one."""
    if depth <= 0:
        return False
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    function = _called_function(call, ctx)
    if function is None:
        return False
    method = isinstance(call.func, ast.Attribute)
    parameters = [a.arg for a in [*function.args.posonlyargs, *function.args.args]][1 if method else 0 :]
    passed = dict(zip(parameters, call.args, strict=False))
    passed.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    spelled = {
        name
        for name, argument in passed.items()
        if (
            ctx.text(argument) == wanted
            if holding is None
            else isinstance(argument, ast.Name) and argument.id in holding
        )
        and not flow.bindings(function, name, ctx)
    }
    for inner in control_flow.scope_nodes(function):
        if isinstance(inner, ast.BinOp | ast.AugAssign) and isinstance(inner.op, ast.Div):
            right = inner.right if isinstance(inner, ast.BinOp) else inner.value
            if isinstance(right, ast.Name) and (
                right.id in spelled or (global_divisor and right.id == wanted and _global_name(right.id, function, ctx))
            ):
                return True
            if method and wanted.startswith("self.") and ctx.text(right) == wanted:
                return True  # `return loss / self.args.accum_steps` in a method the loop calls on the same self
        if isinstance(inner, ast.Call) and _helper_scales(inner, wanted, global_divisor, ctx, depth - 1, spelled):
            return True  # a helper of the helper
    return False


def _called_function(call: ast.Call, ctx: Context) -> ast.FunctionDef | None:
    """The definition ``call`` runs: a module-level function of the file (``micro_loss(...)``), or a method of the
    class around the call, called on ``self`` (``self.compute_loss(...)``)."""
    func = call.func
    if isinstance(func, ast.Name):
        definitions = flow.bindings(ctx.tree, func.id, ctx)
        found = definitions[0] if len(definitions) == 1 else None
        return found if isinstance(found, ast.FunctionDef) else None
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return None
    klass = next((a for a in control_flow.ancestors(call, ctx.parents()) if isinstance(a, ast.ClassDef)), None)
    if klass is None:
        return None
    methods = [s for s in klass.body if isinstance(s, ast.FunctionDef) and s.name == func.attr]
    return methods[0] if len(methods) == 1 else None


def _alternates(stepped: list[ast.Call], steps: dict[str, list[ast.Call]], ctx: Context) -> bool:
    """Another optimizer steps on the iterations this one skips (an ``else`` arm): alternating updates."""
    others = [c for calls in steps.values() for c in calls if c not in stepped]
    return any(flow.exclusive(mine, other, ctx) for mine in stepped for other in others)


def _inside_any(node: ast.AST, gates: list, ctx: Context) -> bool:
    """Inside (the body or else of) one of the gates' ``if`` statements."""
    return any(g is not None and flow.is_inside(node, g[0], ctx) and node is not g[0] for g in gates)


def _runs_every_iteration(node: ast.AST, loop: ast.AST, ctx: Context) -> bool:
    """In ``loop``'s own body (no nested loop), on no branch, and no ``continue`` of this loop before it."""
    if flow.enclosing_loop(node, ctx) is not loop or flow.conditional_between(node, loop, ctx):
        return False
    for inner in optimizers.loop_body_nodes(loop):  # type: ignore[arg-type]
        if (
            isinstance(inner, ast.Continue)
            and control_flow.position(inner) < control_flow.position(node)
            and flow.enclosing_loop(inner, ctx) is loop
        ):
            return False
    return True


def _may_step_elsewhere(
    calls: list[ast.Call],
    optimizer: str,
    stepped: list[ast.Call],
    gate_ifs: set[int],
    stepping: set[str],
    ctx: Context,
) -> bool:
    """A call outside the gates that may step the optimizer too: it hands the optimizer to a function, or calls a
    function of this file that steps something."""
    root = optimizer.split(".")[0]
    for call in calls:
        if call in stepped or optimizers.is_scaler_call(call, ctx):
            continue
        if any(id(a) in gate_ifs for a in control_flow.ancestors(call, ctx.parents())):
            continue
        name = optimizers.called_name(call)
        if name in stepping and not (isinstance(call.func, ast.Attribute) and call.func.attr in ("step", "zero_grad")):
            return True
        if (ctx.qualify(call.func) or "").startswith("torch."):
            continue
        if optimizers.passes(call, {root}) and root != "self":
            return True
        if root == "self" and any(ctx.text(a) == optimizer for a in [*call.args, *(k.value for k in call.keywords)]):
            return True
    return False


def _clears(receiver: ast.expr, optimizer: str, step: ast.Call, ctx: Context) -> bool:
    """``receiver.zero_grad()`` clears every gradient the optimizer steps: the same optimizer, or a model that
    holds all the modules the optimizer was built from."""
    zeroed = ctx.text(receiver)
    if zeroed == optimizer:
        return True
    target = optimizers.stepped(step, ctx)
    built = optimizers.construction(target[0], ctx) if target is not None else None
    sources = optimizers.parameter_sources(built, ctx) if built is not None else None
    if not sources:
        return False
    return all(optimizers.same_module_within(source, receiver, ctx) for source in sources)
