from __future__ import annotations

import ast

from torchls.core import control_flow
from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow
from torchls.core.rules.loop.modules import scaled_backward
from torchls.core.values import InstanceValue


class OptimizerStepBypassesScaler(Rule):
    """用 `scaler.scale(loss).backward()` 反向传播后，直接调用 `optimizer.step()`，而不是 `scaler.step(optimizer)`。

    **为什么是问题**：`GradScaler` 放大的是损失，所以 `.grad` 里是放大了 `scale` 倍（默认 65536）的梯度。
    只有 `scaler.step(optimizer)` 会先把梯度除回去、并在出现 inf/NaN 时跳过这一步；直接 `optimizer.step()`
    会用放大几万倍的梯度更新参数，模型很快发散。只在同一个函数里先有 `scaler.scale(...).backward()`、
    整个函数里既没有 `scaler.step(...)` 也没有 `scaler.unscale_(...)` 时才报告。

    **示例**
    ```python
    scaler.scale(loss).backward()
    optimizer.step()
    scaler.update()
    ```

    **改正**：`scaler.step(optimizer)`，之后 `scaler.update()`。

    **自动修复**：安全：后面有 `scaler.update()` 时，把 `optimizer.step()` 改为 `scaler.step(optimizer)`；
    没有 `update()` 时不修复（连续两次 `scaler.step` 而不 `update` 会报错）。
    """

    code = "TL413"
    requires_text = ("GradScaler", ".scale(")
    name = "optimizer-step-bypasses-scaler"
    severity = Severity.ERROR
    kb_entry = "torch.amp.GradScaler"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "step") or node.args or node.keywords:
            return
        if not flow.file_mentions(ctx, ".scale("):
            return
        optimizer = func.value
        if not _is_optimizer(optimizer, ctx):
            return
        scope = flow.scope_of(node, ctx)
        calls = flow.scope_calls(scope, ctx)
        scalers = [s for call in flow.step_window(node, calls, ctx) if (s := scaled_backward(call, ctx)) is not None]
        if not scalers:
            return
        scaler = ctx.text(scalers[-1])
        if ctx.text(optimizer) == scaler:
            return
        for call in calls:
            if _method_of(call, ctx) == (scaler, "step") or _method_of(call, ctx) == (scaler, "unscale_"):
                return
            if call is not node and any(ctx.text(a) == scaler for a in call.args):
                return  # the scaler goes to a helper that may step or unscale
        fix = None
        updates = [
            c
            for c in calls
            if _method_of(c, ctx) == (scaler, "update")
            and control_flow.position(c) > control_flow.position(node)
            and not flow.exclusive(c, node, ctx)
        ]
        if updates:
            fix = Fix(
                f"改为 `{scaler}.step({ctx.text(optimizer)})`",
                (ctx.replace(node, f"{scaler}.step({ctx.text(optimizer)})"),),
            )
        message = f"梯度由 `{scaler}` 放大过，直接调用 `{ctx.text(optimizer)}.step()` 会用放大的梯度更新参数"
        ctx.report(node, message, fix=fix)


def _method_of(call: ast.Call, ctx: Context) -> tuple[str, str] | None:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name | ast.Attribute):
        return ctx.text(func.value), func.attr
    return None


def _is_optimizer(node: ast.expr, ctx: Context) -> bool:
    value = ctx.value(node)
    if isinstance(value, InstanceValue):
        return value.qualname.startswith("torch.optim.") and ".lr_scheduler." not in value.qualname
    if value is not None:
        return False
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name.lower().endswith(("optimizer", "optim", "opt"))
