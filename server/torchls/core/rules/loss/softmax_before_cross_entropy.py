from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import loss_call
from torchls.core.values import SOFTMAX

_SOFTMAX_CALLS = frozenset({"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"})


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

    **自动修复**：安全：softmax 直接写在损失函数的参数里时，去掉这层 softmax（其他地方的 softmax 不动）。
    """

    code = "TL301"
    name = "softmax-before-cross-entropy"
    severity = Severity.ERROR
    kb_entry = "torch.nn.CrossEntropyLoss"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind != "CrossEntropyLoss":
            return
        x = loss.input(ctx)
        if x is None or x.provenance != SOFTMAX:
            return
        fix = None
        inner = _softmax_input(loss.input_node, ctx)
        if inner is not None:
            fix = Fix("去掉损失函数参数里的 softmax，直接传 logits", (ctx.replace(loss.input_node, ctx.text(inner)),))
        ctx.report(
            node,
            f"`{loss.label}` 的输入已经过 softmax；它内部会再做 log_softmax，应直接传 logits",
            fix=fix,
            related=ctx.related(x.origin),
        )


def _softmax_input(node: ast.expr | None, ctx: Context) -> ast.expr | None:
    """``x`` when ``node`` is itself ``F.softmax(x, ...)``, ``x.softmax(...)`` or ``nn.Softmax(...)(x)``."""
    if not isinstance(node, ast.Call):
        return None
    call = ctx.call(node)
    if call.qualname in _SOFTMAX_CALLS:
        return call.arg_node(0, "input")
    if call.method == "softmax" and isinstance(node.func, ast.Attribute):
        return node.func.value
    if call.module is not None and call.module.qualname == "torch.nn.Softmax":
        return call.arg_node(0, "input")
    return None
