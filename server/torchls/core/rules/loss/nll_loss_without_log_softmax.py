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


class NllLossWithoutLogSoftmax(Rule):
    """传给 `NLLLoss` / `F.nll_loss` 的不是对数概率，而是 softmax 的概率或原始 logits。

    **为什么是问题**：`NLLLoss` 只做一件事：取出目标类别那一项再取负，`loss = -input[n, y_n]`。它不做任何归一化，
    所以输入必须已经是 `log_softmax` 的结果。传概率算的是 `-p` 而不是 `-log p`；传 logits 算的是“负的目标 logit”，
    模型会学着无限放大它。两种情况都不报错，损失还可能是负数。

    **示例**
    ```python
    probs = F.softmax(logits, dim=1)
    loss = F.nll_loss(probs, labels)
    ```

    **改正**：`F.nll_loss(F.log_softmax(logits, dim=1), labels)`，或者直接 `F.cross_entropy(logits, labels)`，
    两者完全等价。

    **自动修复**：安全：softmax 直接写在损失函数的参数里时，把它改成同样参数的 log_softmax
    （`F.softmax` → `F.log_softmax`、`x.softmax(1)` → `x.log_softmax(1)`、
    `nn.Softmax(...)(x)` → `nn.LogSoftmax(...)(x)`）。
    logits 和写在别处的 softmax 不提供修复：该在哪一维做 log_softmax 要由作者决定。
    """

    code = "TL304"
    requires_text = ("nll_loss", "NLLLoss")
    name = "nll-loss-without-log-softmax"
    severity = Severity.ERROR
    kb_entry = "torch.nn.NLLLoss"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind != "NLLLoss" or loss.input_node is None:
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
            f"`{loss.label}` 的输入是{_WHAT[x.provenance]}，而它要的是对数概率（`log_softmax` 的输出）",
            fix=fix,
            related=ctx.related(x.origin),
        )
