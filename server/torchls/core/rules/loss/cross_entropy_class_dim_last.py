from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import (
    CLASSIFICATION_LOSSES,
    format_shape,
    is_atomic,
    loss_call,
    reliable,
    target_dtype,
)
from torchls.core.values import INTEGER_DTYPES


class CrossEntropyClassDimLast(Rule):
    """`CrossEntropyLoss` / `NLLLoss` 的输入把类别放在了最后一维，例如序列模型的 `(N, L, C)` 输出配 `(N, L)` 的标签。

    **为什么是问题**：这两个损失固定把**第 1 维**当作类别维：输入 `(N, C, d1, ...)`，目标 `(N, d1, ...)`。
    `nn.Linear` 作用在最后一维上，序列模型、逐像素分类头的输出常是 `(N, L, C)` 或 `(N, H, W, C)`，
    直接传进去会报 `Expected target size ...`；形状碰巧对上（`L == C`）时还会静默算错。

    **示例**
    ```python
    logits = torch.randn(4, 7, 10)          # (N, L, C)
    labels = torch.randint(0, 10, (4, 7))   # (N, L)
    loss = F.cross_entropy(logits, labels)
    ```

    **改正**：`F.cross_entropy(logits.permute(0, 2, 1), labels)`，或展平：
    `F.cross_entropy(logits.reshape(-1, 10), labels.reshape(-1))`。

    **自动修复**：安全：输入是 3 维时改为 `logits.transpose(1, 2)`，更高维时改为把最后一维移到第 1 维的 `permute(...)`；
    只在各维大小都已知、能证明目标正好是“去掉最后一维”的输入形状时报告。
    """

    code = "TL314"
    raises = True
    requires_text = ("cross_entropy", "CrossEntropyLoss", "nll_loss", "NLLLoss")
    name = "cross-entropy-class-dim-last"
    severity = Severity.ERROR
    kb_entry = "torch.nn.functional.cross_entropy"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind not in CLASSIFICATION_LOSSES or loss.input_node is None:
            return
        x, target = loss.input(ctx), loss.target(ctx)
        if not (reliable(loss.input_node, ctx, shape_only=True) and reliable(loss.target_node, ctx, shape_only=True)):
            return  # an in-place squeeze_/unsqueeze_ may have changed a shape the interpreter recorded
        if x is None or target is None or x.shape is None or target.shape is None:
            return
        if target_dtype(target, loss.target_node, ctx) not in INTEGER_DTYPES:
            return
        a, b = x.shape, target.shape
        # The batch dim may be unknown (a slice of a loader's batch): the other dims decide the layout.
        if len(a) < 3 or len(b) != len(a) - 1 or not all(isinstance(d, int) for d in (*a[1:], *b[1:])):
            return
        if None not in (a[0], b[0]) and b[0] != a[0]:
            return
        if tuple(b[1:]) == tuple(a[2:]) or tuple(b[1:]) != tuple(a[1:-1]):
            return  # the expected layout, or not the class-last layout either
        if len(a) == 3:
            moved = "transpose(1, 2)"
        else:
            moved = "permute(" + ", ".join(str(d) for d in (0, len(a) - 1, *range(1, len(a) - 1))) + ")"
        text = ctx.text(loss.input_node) if is_atomic(loss.input_node) else f"({ctx.text(loss.input_node)})"
        fix = Fix(f"把类别维移到第 1 维：`.{moved}`", (ctx.replace(loss.input_node, f"{text}.{moved}"),))
        ctx.report(
            node,
            f"`{loss.label}` 的输入 {format_shape(a)} 把类别放在了最后一维，而它把第 1 维当作类别维；"
            f"目标 {format_shape(b)} 对应的输入应是 {format_shape((a[0], a[-1], *a[1:-1]))}",
            fix=fix,
        )
