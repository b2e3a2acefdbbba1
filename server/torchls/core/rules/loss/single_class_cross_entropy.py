from __future__ import annotations

import ast

from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import format_shape, loss_call, reliable
from torchls.core.values import FLOAT_DTYPES, INTEGER_DTYPES, LOGITS, TensorValue


class SingleClassCrossEntropy(Rule):
    """`CrossEntropyLoss` / `F.cross_entropy` 的输入在类别维上只有 1 个类别，例如 `nn.Linear(..., 1)` 的输出。

    **为什么是问题**：交叉熵在类别维（第 1 维）上做 softmax。只有一个类别时 softmax 恒等于 1，损失恒为 0，
    梯度也恒为 0，模型什么都学不到；目标里出现类别 1 时还会报越界（CUDA 上是 device-side assert）。
    常见于把二分类写成“输出 1 个数 + `CrossEntropyLoss`”，或分割模型输出单通道 `(N, 1, H, W)`。

    **示例**
    ```python
    head = nn.Linear(128, 1)
    loss = nn.CrossEntropyLoss()(head(features), labels)   # 恒为 0
    ```

    **改正**：二分类要么输出 2 个类别（`nn.Linear(128, 2)`）配 `CrossEntropyLoss`，要么保留 1 个输出、
    改用 `nn.BCEWithLogitsLoss()(head(features).squeeze(1), labels.float())`。

    **自动修复**：无：改输出维度还是改损失函数，要由作者决定。
    """

    code = "TL313"
    requires_text = ("cross_entropy", "CrossEntropyLoss")
    name = "single-class-cross-entropy"
    severity = Severity.ERROR
    kb_entry = "torch.nn.CrossEntropyLoss"
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind != "CrossEntropyLoss":
            return
        x = loss.input(ctx)
        if x is None or not (reliable(loss.input_node, ctx) and reliable(loss.target_node, ctx)):
            return
        if _classes(x, loss.target(ctx)) == 1:
            shown = f" {format_shape(x.shape)} " if x.shape is not None else ""
            message = f"`{loss.label}` 的输入{shown}在类别维上只有 1 个类别：softmax 恒为 1，损失和梯度恒为 0"
        elif x.shape is None and x.provenance == LOGITS and x.tail == (1,):
            message = (
                f"`{loss.label}` 的输入是只输出 1 个值的 `Linear` 层的结果：类别维上只有 1 个类别，"
                "softmax 恒为 1，损失和梯度恒为 0"
            )
        else:
            return
        ctx.report(node, message, related=ctx.related(x.origin))


def _classes(x: TensorValue, target: TensorValue | None) -> int | None:
    """The size of the class dim: dim 1, or dim 0 for an unbatched ``(C,)`` input."""
    if x.shape is not None:
        if len(x.shape) >= 2:
            return x.shape[1]
        return x.shape[0] if len(x.shape) == 1 else None
    if target is None or target.rank is None or x.tail is None:
        return None
    if target.dtype in INTEGER_DTYPES:
        rank = target.rank + 1  # class indices: the input has one more dim
    elif target.dtype in FLOAT_DTYPES:
        rank = target.rank  # class probabilities: the input's shape
    else:
        return None
    from_end = rank - 1 if rank >= 2 else 1  # dim 1 counted from the end (dim 0 when unbatched)
    return x.tail[-from_end] if len(x.tail) >= from_end and from_end >= 1 else None
