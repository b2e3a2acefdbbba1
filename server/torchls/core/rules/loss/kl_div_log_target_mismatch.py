from __future__ import annotations

import ast

from torchls.core.findings import Edit, Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import LossCall, editable_constructor, loss_call, reliable
from torchls.core.values import LOG_SOFTMAX, SOFTMAX


class KlDivLogTargetMismatch(Rule):
    """`KLDivLoss` / `F.kl_div` 的目标是对数概率却没有设 `log_target=True`，或者目标是概率却设了 `log_target=True`。

    **为什么是问题**：`log_target=False`（默认）时目标必须是普通**概率**，按 `target * (log(target) - input)` 计算；
    把 `log_softmax` 的输出（都是负数）当概率传进去，`log(target)` 得到 NaN 或无意义的值。反过来，
    `log_target=True` 时目标要是对数概率，传 softmax 的概率同样算错。两种都不报错。知识蒸馏里很常见：
    学生、教师都写成 `log_softmax`，却忘了设 `log_target=True`。

    **示例**
    ```python
    loss = F.kl_div(F.log_softmax(s, dim=1), F.log_softmax(t, dim=1), reduction="batchmean")
    ```

    **改正**：`F.kl_div(F.log_softmax(s, dim=1), F.log_softmax(t, dim=1), reduction="batchmean", log_target=True)`，
    或者把目标改成 `F.softmax(t, dim=1)`。

    **自动修复**：安全：`F.kl_div` 调用，或写在调用处 / 只用于这一次调用的 `nn.KLDivLoss(...)`，补上或改正
    `log_target=`，使它与目标的形式一致。`log_target` 是变量、损失模块还被别处使用时不提供修复。
    """

    code = "TL311"
    requires_text = ("kl_div", "KLDivLoss")
    name = "kl-div-log-target-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.nn.KLDivLoss"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind != "KLDivLoss" or loss.target_node is None:
            return
        target = loss.target(ctx)
        if target is None or target.provenance not in (LOG_SOFTMAX, SOFTMAX) or not reliable(loss.target_node, ctx):
            return
        known, log_target = loss.option("log_target", ctx)
        if not known:
            return
        log_target = bool(log_target)
        if target.provenance == LOG_SOFTMAX and not log_target:
            message = f"`{loss.label}` 的目标已经是对数概率，但没有设 `log_target=True`：它会被当成概率计算"
            wanted = True
        elif target.provenance == SOFTMAX and log_target:
            message = f"`{loss.label}` 设了 `log_target=True`，但目标是 softmax 的概率而不是对数概率"
            wanted = False
        else:
            return
        edit = _log_target_edit(loss, wanted, ctx)
        fix = Fix(f"改为 `log_target={wanted}`", (edit,)) if edit is not None else None
        ctx.report(node, message, fix=fix, related=ctx.related(target.origin))


def _log_target_edit(loss: LossCall, wanted: bool, ctx: Context) -> Edit | None:
    call: ast.Call | None = loss.call.node if loss.functional else editable_constructor(loss, ctx)
    if call is None:
        return None
    for keyword in call.keywords:
        if keyword.arg == "log_target":
            return ctx.replace(keyword.value, str(wanted))
    if loss.functional and len(call.args) > 5:
        return ctx.replace(call.args[5], str(wanted))
    if not loss.functional and len(call.args) > 3:
        return ctx.replace(call.args[3], str(wanted))
    items: list[ast.AST] = [*call.args, *(k.value for k in call.keywords)]
    if items:
        last = max(items, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))
        return ctx.insert_after(last, f", log_target={wanted}")
    text = ctx.text(call)
    if text.endswith("()"):
        return ctx.replace(call, f"{text[:-1]}log_target={wanted})")
    return None
