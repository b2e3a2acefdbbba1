from __future__ import annotations

import ast

from torchls.core import control_flow
from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow, optimizers
from torchls.core.values import InstanceValue

# Schedulers whose step() is not the "first value" kind: they check nothing, or step others.
_OTHER_SCHEDULERS = frozenset({"ReduceLROnPlateau", "SequentialLR", "ChainedScheduler"})


class SchedulerStepBeforeOptimizerStep(Rule):
    """学习率调度器的 `scheduler.step()` 在第一次 `optimizer.step()` 之前就被调用。

    **为什么是问题**：从 PyTorch 1.1 起，正确的顺序是先 `optimizer.step()`、再 `scheduler.step()`。
    顺序反了，torch 会警告 `Detected call of lr_scheduler.step() before optimizer.step()`，并且学习率曲线的
    第一个值被跳过：整条曲线提前一步（warmup 少一步、`StepLR` 提前衰减）。只在调度器在同一个函数（或脚本）
    里创建、从创建到这次 `scheduler.step()` 之间一定没有执行过 `optimizer.step()`（也没有把优化器交给别的
    函数）、这次调用不在条件分支里，而且后面确实有 `optimizer.step()` 时才报告。

    **示例**
    ```python
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30)
    for epoch in range(100):
        scheduler.step()
        for x, y in loader:
            ...
            optimizer.step()
    ```

    **改正**：把 `scheduler.step()` 移到这一轮的 `optimizer.step()` 之后（按 epoch 调度时放在 epoch 末尾）。

    **自动修复**：无：调度器该放在哪一层循环要由作者决定。
    """

    code = "TL406"
    requires_text = ("lr_scheduler",)
    name = "scheduler-step-before-optimizer-step"
    severity = Severity.WARNING
    kb_entry = "torch.optim.lr_scheduler.StepLR"
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "step" and isinstance(func.value, ast.Name)):
            return
        if not flow.file_mentions(ctx, "lr_scheduler"):
            return
        scheduler = ctx.value(func.value)
        if not _is_lr_scheduler(scheduler):
            return
        name = func.value.id
        scope = flow.scope_of(node, ctx)
        created = _creation(scope, name, ctx)
        if created is None or control_flow.position(created) > control_flow.position(node):
            return
        if flow.conditional_between(node, scope, ctx) or _may_skip_to_later_iteration(node, scope, ctx):
            return
        optimizer = _optimizer_name(scheduler)
        between = [
            n
            for n in control_flow.scope_nodes(scope)
            if control_flow.end_position(created) <= control_flow.position(n) < control_flow.position(node)
            and isinstance(n, ast.Call)
        ]
        if any(_may_step(call, name, optimizer, ctx) for call in between):
            return
        later = [
            n
            for n in control_flow.scope_nodes(scope)
            if isinstance(n, ast.Call) and control_flow.position(n) > control_flow.position(node)
        ]
        if not any(_steps_optimizer(call, optimizer, ctx) or _hands_to_stepper(call, optimizer, ctx) for call in later):
            return
        message = f"`{name}.step()` 在第一次 `optimizer.step()` 之前调用：学习率曲线会跳过第一个值，torch 也会警告"
        ctx.report(node, message)


def _may_skip_to_later_iteration(node: ast.AST, scope: control_flow.Scope, ctx: Context) -> bool:
    """A ``continue``/``break``/``return``/``raise`` ahead of ``node`` in a loop around it: the first time it runs
    may come after later statements of earlier iterations."""
    loops = [
        a
        for a in control_flow.ancestors(node, ctx.parents())
        if isinstance(a, flow.LOOPS) and flow.is_inside(a, scope, ctx)
    ]
    for loop in loops:
        for inner in control_flow.walk_scope(loop):
            if isinstance(inner, ast.Continue | ast.Break | ast.Return | ast.Raise) and control_flow.position(
                inner
            ) < control_flow.position(node):
                return True
    return False


def _is_lr_scheduler(value: object) -> bool:
    return (
        isinstance(value, InstanceValue)
        and value.qualname.startswith("torch.optim.lr_scheduler.")
        and value.qualname.rsplit(".", 1)[-1] not in _OTHER_SCHEDULERS
        and value.origin is not None
    )


def _creation(scope: control_flow.Scope, name: str, ctx: Context) -> ast.stmt | None:
    """The one statement of ``scope`` that binds ``name`` (to the scheduler)."""
    stores = flow.bindings(scope, name, ctx)
    if len(stores) != 1 or flow.is_parameter(scope, name) or flow.simple_assignment(stores[0], ctx) is None:
        return None
    return control_flow.statement_of(stores[0], ctx.parents())


def _optimizer_name(scheduler: InstanceValue) -> str | None:
    call = scheduler.origin.node if scheduler.origin is not None else None
    if isinstance(call, ast.Call):
        for keyword in call.keywords:
            if keyword.arg == "optimizer":
                return keyword.value.id if isinstance(keyword.value, ast.Name) else None
        if call.args and isinstance(call.args[0], ast.Name):
            return call.args[0].id
    return None


def _may_step(call: ast.Call, scheduler: str, optimizer: str | None, ctx: Context) -> bool:
    """A call that may run ``optimizer.step()``: any other ``.step(...)``, or a call the optimizer is given to,
    or a function of this file that steps something."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "step":
        return not (isinstance(func.value, ast.Name) and _is_lr_scheduler(ctx.value(func.value)))
    arguments = [a.value if isinstance(a, ast.Starred) else a for a in call.args] + [k.value for k in call.keywords]
    if optimizer is None or any(flow.root_name(a) == optimizer for a in arguments):
        qualname = ctx.qualify(func) or ""
        if not qualname.startswith("torch.optim.lr_scheduler."):
            return True
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return called is not None and called in ctx.analysis(optimizers.TrainingHelpers).stepping


def _steps_optimizer(call: ast.Call, optimizer: str | None, ctx: Context) -> bool:
    """``optimizer.step()`` or ``scaler.step(optimizer)`` for the scheduler's optimizer."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "step"):
        return False
    receiver = func.value
    if optimizer is not None:
        if isinstance(receiver, ast.Name) and receiver.id == optimizer:
            return True
        return len(call.args) == 1 and isinstance(call.args[0], ast.Name) and call.args[0].id == optimizer
    value = ctx.value(receiver)
    return (
        isinstance(value, InstanceValue) and value.qualname.startswith("torch.optim.") and not _is_lr_scheduler(value)
    )


def _hands_to_stepper(call: ast.Call, optimizer: str | None, ctx: Context) -> bool:
    """``train_one_epoch(model, loader, optimizer)``: the optimizer goes to a function of this file that steps
    something, directly or through the functions it calls (``apply_gradients`` doing ``optimizer.step()``)."""
    if optimizer is None:
        return False
    arguments = [a.value if isinstance(a, ast.Starred) else a for a in call.args] + [k.value for k in call.keywords]
    if not any(isinstance(a, ast.Name) and a.id == optimizer for a in arguments):
        return False
    func = call.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return called is not None and called in ctx.analysis(optimizers.TrainingHelpers).stepping
