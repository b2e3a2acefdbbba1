from __future__ import annotations

import ast

from torchls.core import control_flow
from torchls.core.findings import Edit, Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow
from torchls.core.rules.loop.modules import scaled_backward
from torchls.core.text import Span

_CLIPS = frozenset(
    "torch.nn.utils." + name
    for name in (
        "clip_grad_norm_",
        "clip_grad_value_",
        "clip_grad_norm",
        "clip_grad.clip_grad_norm_",
        "clip_grad.clip_grad_value_",
        "clip_grad.clip_grad_norm",
    )
)


class ClipScaledGradients(Rule):
    """用 `GradScaler` 混合精度训练时，`clip_grad_norm_` / `clip_grad_value_` 之前没有 `scaler.unscale_(optimizer)`。

    **为什么是问题**：`scaler.scale(loss).backward()` 算出的梯度被放大了 `scale` 倍（默认 65536）。
    不先 `scaler.unscale_(optimizer)` 就裁剪，`max_norm` 比较的是放大后的范数，几乎每一步都被过度裁剪，
    等于把学习率压得极小；`clip_grad_value_` 的阈值同样失去意义。正确顺序是
    `backward` → `unscale_` → 裁剪 → `scaler.step` → `scaler.update`。只在同一个函数里、裁剪前确实有
    `scaler.scale(...).backward()`，而两者之间没有 `unscale_`、`scaler.step` 时才报告。

    **示例**
    ```python
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    ```

    **改正**：在裁剪前加一行 `scaler.unscale_(optimizer)`。

    **自动修复**：安全：这一步（从 `backward` 到下一次 `scaler.update()`）里还没有 `unscale_`、只有一个
    `scaler.step(optimizer)`、`backward` 和 `scaler.step` 都不在条件分支里、裁剪语句独占一行时，在裁剪前
    插入 `scaler.unscale_(optimizer)`；`scaler.step` 会知道梯度已经反缩放，不会再做一次。
    """

    code = "TL407"
    requires_text = ("clip_grad",)
    name = "clip-scaled-gradients"
    severity = Severity.ERROR
    kb_entry = "torch.amp.GradScaler"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        if not flow.file_mentions(ctx, "clip_grad") or ctx.qualify(node.func) not in _CLIPS:
            return
        scope = flow.scope_of(node, ctx)
        calls = flow.scope_calls(scope, ctx)
        backwards = [
            (call, scaler)
            for call in flow.step_window(node, calls, ctx)
            if (scaler := scaled_backward(call, ctx)) is not None
        ]
        if not backwards:
            self._scaled_in_another_function(node, calls, ctx)
            return
        backward, scaler = max(backwards, key=lambda pair: control_flow.position(pair[0]))
        scaler_text = ctx.text(scaler)
        for call in calls:
            if not (control_flow.end_position(backward) <= control_flow.position(call) < control_flow.position(node)):
                continue
            if _method_of(call, scaler_text, ctx) in ("unscale_", "step"):
                return
            if any(ctx.text(a) == scaler_text for a in _arguments(call)):
                return  # the scaler goes somewhere that may unscale
        clip = ctx.qualify(node.func).rsplit(".", 1)[-1]  # type: ignore[union-attr]
        message = f"`{clip}` 之前没有 `{scaler_text}.unscale_(...)`：裁剪的是被 GradScaler 放大过的梯度"
        ctx.report(node, message, fix=_fix(node, backward, scaler_text, calls, ctx))

    def _scaled_in_another_function(self, node: ast.Call, calls: list[ast.Call], ctx: Context) -> None:
        """A trainer class that splits the step: ``training_step`` does ``self.scaler.scale(loss).backward()``,
        ``_optimizer_step`` clips and then ``self.scaler.step(...)``. The order between the two functions is not
        known here, so only where nothing in the file could unscale: no ``unscale_`` anywhere and the scaler
        never handed to a function."""
        if flow.file_mentions(ctx, "unscale_") or not flow.file_mentions(ctx, ".scale("):
            return
        after = [c for c in calls if control_flow.position(c) > control_flow.position(node)]
        stepped = {ctx.text(c.func.value) for c in after if isinstance(c.func, ast.Attribute) and c.func.attr == "step"}
        if not stepped:
            return
        file_calls = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call)]
        scalers = {ctx.text(scaler) for call in file_calls if (scaler := scaled_backward(call, ctx)) is not None}
        for scaler_text in sorted(stepped & scalers):
            if any(ctx.text(a) == scaler_text for call in file_calls for a in _arguments(call)):
                continue  # the scaler goes somewhere that may unscale
            clip = ctx.qualify(node.func).rsplit(".", 1)[-1]  # type: ignore[union-attr]
            message = (
                f"`{clip}` 之前没有 `{scaler_text}.unscale_(...)`"
                f"（`{scaler_text}.scale(loss).backward()` 在另一个函数里）：裁剪的是被 GradScaler 放大过的梯度"
            )
            ctx.report(node, message)
            return


def _method_of(call: ast.Call, receiver: str, ctx: Context) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and ctx.text(func.value) == receiver:
        return func.attr
    return None


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [a.value if isinstance(a, ast.Starred) else a for a in call.args] + [k.value for k in call.keywords]


def _fix(node: ast.Call, backward: ast.Call, scaler: str, calls: list[ast.Call], ctx: Context) -> Fix | None:
    """Insert ``scaler.unscale_(optimizer)`` on its own line before the clipping statement, when this step (from
    the backward to the next ``scaler.update()``) unscales nothing yet and steps exactly one optimizer."""
    scope = flow.scope_of(node, ctx)
    updates = [
        c
        for c in calls
        if _method_of(c, scaler, ctx) == "update" and control_flow.position(c) > control_flow.position(node)
    ]
    end = min((control_flow.position(c) for c in updates), default=(1 << 30, 0))
    window = [c for c in calls if control_flow.position(backward) < control_flow.position(c) < end]
    if any(_method_of(c, scaler, ctx) == "unscale_" for c in window):
        return None
    steps = [
        c
        for c in window
        if _method_of(c, scaler, ctx) == "step" and control_flow.position(c) > control_flow.position(node)
    ]
    if len(steps) != 1 or len(steps[0].args) != 1 or not isinstance(steps[0].args[0], ast.Name | ast.Attribute):
        return None
    if flow.conditional_between(backward, scope, ctx) or flow.conditional_between(steps[0], scope, ctx):
        return None  # the scaler may not be in use where the clip runs
    statement = control_flow.statement_of(node, ctx.parents())
    holder = flow.parent(statement, ctx) if statement is not None else None
    if statement is None or holder is None or not any(statement in body for body in _bodies(holder)):
        return None
    line = ctx.source.line(statement.lineno - 1)
    start = ctx.source.position_from_ast(statement.lineno, statement.col_offset)
    indent = line[: start.column]
    if indent.strip() or _shares_line_with_previous(statement, holder):
        return None
    optimizer = ctx.text(steps[0].args[0])
    text = f"{scaler}.unscale_({optimizer})\n{indent}"
    return Fix(f"在裁剪前插入 `{scaler}.unscale_({optimizer})`", (Edit(Span(start, start), text),))


def _bodies(holder: ast.AST) -> list[list[ast.stmt]]:
    return [
        value for value in vars(holder).values() if isinstance(value, list) and value and isinstance(value[0], ast.stmt)
    ]


def _shares_line_with_previous(statement: ast.stmt, holder: ast.AST) -> bool:
    for body in _bodies(holder):
        if statement in body:
            index = body.index(statement)
            return index > 0 and (body[index - 1].end_lineno or 0) >= statement.lineno
    return False
