from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import loss_call, reliable, remove_call, written_call
from torchls.core.values import SOFTMAX


class SoftmaxBeforeCrossEntropy(Rule):
    """传给 `CrossEntropyLoss` / `F.cross_entropy` 的输入已经做过 softmax。

    **为什么是问题**：交叉熵内部会先做 `log_softmax`，它要的是 logits（模型最后一层的原始输出）。
    先 softmax 再交叉熵等于做了两次 softmax：概率被压到很窄的范围，梯度变得很小，训练几乎不动，而且不报错。
    模型最后一层是 `nn.Softmax`、`forward` 里 `return F.softmax(...)` 时同样会被发现。

    **示例**
    ```python
    probs = F.softmax(logits, dim=1)
    loss = nn.CrossEntropyLoss()(probs, labels)
    ```

    **改正**：`loss = nn.CrossEntropyLoss()(logits, labels)`；需要概率时（如计算准确率）另外做 softmax。

    **自动修复**：安全：softmax 直接写在损失函数的参数里时（包括后面跟着 `.view(-1, C)`、`.float()` 这类只改形状或
    类型的方法），去掉这层 softmax；写在别处的 softmax 不动，不提供修复。
    """

    code = "TL301"
    requires_text = ("cross_entropy", "CrossEntropyLoss")
    name = "softmax-before-cross-entropy"
    severity = Severity.ERROR
    kb_entry = "torch.nn.CrossEntropyLoss"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind != "CrossEntropyLoss" or loss.input_node is None:
            return
        x = loss.input(ctx)
        if x is None or x.provenance != SOFTMAX or not reliable(loss.input_node, ctx):
            return
        fix = None
        written = written_call(loss.input_node, ctx, "softmax")
        if written is not None:
            edit = remove_call(loss.input_node, written[0], written[1], ctx)
            if edit is not None:
                fix = Fix("去掉损失函数参数里的 softmax，直接传 logits", (edit,))
        ctx.report(
            node,
            f"`{loss.label}` 的输入已经过 softmax；它内部会再做 log_softmax，应直接传 logits",
            fix=fix,
            related=ctx.related(x.origin),
        )
