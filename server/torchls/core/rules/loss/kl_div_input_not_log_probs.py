from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import loss_call, reliable, softmax_to_log_softmax, written_call
from torchls.core.values import LOGITS, SIGMOID, SOFTMAX

_WHAT = {
    SOFTMAX: "经过 softmax 的概率",
    SIGMOID: "经过 sigmoid 的概率",
    LOGITS: "未做 log_softmax 的 logits",
}


class KlDivInputNotLogProbs(Rule):
    """`KLDivLoss` / `F.kl_div` 的第一个参数（预测）不是对数概率，而是 softmax 的概率或原始 logits。

    **为什么是问题**：`kl_div(input, target)` 按 `target * (log(target) - input)` 计算，`input` 必须是
    **对数概率**（`log_softmax` 的输出），这与 `target`（默认是普通概率）不同。传概率或 logits 不会报错，
    但算出的值不是 KL 散度，可能为负，模型朝错误的方向优化。知识蒸馏里最常见。

    **示例**
    ```python
    loss = F.kl_div(F.softmax(student_logits, dim=1), F.softmax(teacher_logits, dim=1), reduction="batchmean")
    ```

    **改正**：第一个参数改用 `log_softmax`：
    `F.kl_div(F.log_softmax(student_logits, dim=1), F.softmax(teacher_logits, dim=1), reduction="batchmean")`。

    **自动修复**：安全：softmax 直接写在第一个参数里时，把它改成同样参数的 log_softmax
    （`F.softmax` → `F.log_softmax`、`x.softmax(1)` → `x.log_softmax(1)`、
    `nn.Softmax(...)(x)` → `nn.LogSoftmax(...)(x)`）。
    logits 和写在别处的 softmax 不提供修复。
    """

    code = "TL305"
    requires_text = ("kl_div", "KLDivLoss")
    name = "kl-div-input-not-log-probs"
    severity = Severity.ERROR
    kb_entry = "torch.nn.KLDivLoss"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind != "KLDivLoss" or loss.input_node is None:
            return
        x = loss.input(ctx)
        if x is None or x.provenance not in _WHAT or not reliable(loss.input_node, ctx):
            return
        fix = None
        if x.provenance == SOFTMAX:
            written = written_call(loss.input_node, ctx, "softmax")
            edit = softmax_to_log_softmax(written[0], ctx) if written is not None else None
            if edit is not None:
                fix = Fix("把 softmax 改为 log_softmax", (edit,))
        ctx.report(
            node,
            f"`{loss.label}` 的第一个参数是{_WHAT[x.provenance]}，而它要的是对数概率（`log_softmax` 的输出）",
            fix=fix,
            related=ctx.related(x.origin),
        )
