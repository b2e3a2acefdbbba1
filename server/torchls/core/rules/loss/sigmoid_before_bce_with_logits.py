from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import loss_call, reliable, remove_call, written_call
from torchls.core.values import SIGMOID


class SigmoidBeforeBceWithLogits(Rule):
    """传给 `BCEWithLogitsLoss` / `F.binary_cross_entropy_with_logits` 的输入已经做过 sigmoid。

    **为什么是问题**：`BCEWithLogitsLoss` 内部自带 sigmoid，要的是 logits（最后一层的原始输出）。
    先 sigmoid 再传进去等于做了两次 sigmoid：输入被压在 `(0.5, 0.73)` 附近，损失降不下去、梯度很小，
    训练几乎不动，而且不报错。模型最后一层是 `nn.Sigmoid`、`forward` 里 `return torch.sigmoid(...)` 时同样会被发现。

    **示例**
    ```python
    probs = torch.sigmoid(model(x))
    loss = nn.BCEWithLogitsLoss()(probs, y)
    ```

    **改正**：`loss = nn.BCEWithLogitsLoss()(model(x), y)`；推理时需要概率再另外 `torch.sigmoid(logits)`。
    想保留模型里的 sigmoid，就改用 `nn.BCELoss`（数值稳定性较差，不推荐）。

    **自动修复**：安全：sigmoid 直接写在损失函数的参数里时（包括后面跟着 `.squeeze(1)`、`.float()` 这类只改形状或
    类型的方法），去掉这层 sigmoid；写在别处的 sigmoid 不动，不提供修复。
    """

    code = "TL302"
    requires_text = ("with_logits", "WithLogits")
    name = "sigmoid-before-bce-with-logits"
    severity = Severity.ERROR
    kb_entry = "torch.nn.BCEWithLogitsLoss"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind != "BCEWithLogitsLoss" or loss.input_node is None:
            return
        x = loss.input(ctx)
        if x is None or x.provenance != SIGMOID or not reliable(loss.input_node, ctx):
            return
        fix = None
        written = written_call(loss.input_node, ctx, "sigmoid")
        if written is not None:
            edit = remove_call(loss.input_node, written[0], written[1], ctx)
            if edit is not None:
                fix = Fix("去掉损失函数参数里的 sigmoid，直接传 logits", (edit,))
        ctx.report(
            node,
            f"`{loss.label}` 的输入已经过 sigmoid；它内部会再做一次 sigmoid，应直接传 logits",
            fix=fix,
            related=ctx.related(x.origin),
        )
