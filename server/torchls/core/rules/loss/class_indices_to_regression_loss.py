from __future__ import annotations

import ast

from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import REGRESSION_LOSSES, format_shape, loss_call, reliable, target_dtype
from torchls.core.values import INTEGER_DTYPES, ONE_HOT


class ClassIndicesToRegressionLoss(Rule):
    """把整数类别索引（比输入少一个类别维）当作目标传给了 `MSELoss` / `L1Loss` / `SmoothL1Loss` / `HuberLoss`。

    **为什么是问题**：回归损失逐元素比较 `input` 和 `target`，要求两者形状相同。模型输出 `(N, C)` 的类别分数、
    目标却是 `(N,)` 的整数类别索引时，损失会把类别编号当成数值（类别 3 比类别 1 “大”），而且 `(N, C)` 与
    `(N,)` 会按最后一维广播：`N != C` 时运行报错，`N == C` 时静默算出毫无意义的损失。

    **示例**
    ```python
    logits = model(x)                        # (N, 10)
    labels = torch.randint(0, 10, (N,))      # 类别索引
    loss = nn.MSELoss()(logits, labels)
    ```

    **改正**：分类任务用 `nn.CrossEntropyLoss()(logits, labels)`；确实要用回归损失时，先把目标变成与输入同形状的
    浮点张量，例如 `F.one_hot(labels, 10).float()`。

    **自动修复**：无：该换损失函数还是换目标编码，要由作者决定。
    """

    code = "TL307"
    raises = True
    requires_text = ("mse_loss", "MSELoss", "l1_loss", "L1Loss", "huber", "Huber")
    name = "class-indices-to-regression-loss"
    severity = Severity.ERROR
    kb_entry = "torch.nn.functional.mse_loss"
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind not in REGRESSION_LOSSES:
            return
        x, target = loss.input(ctx), loss.target(ctx)
        if not (reliable(loss.input_node, ctx, shape_only=True) and reliable(loss.target_node, ctx, shape_only=True)):
            return  # an in-place squeeze_/unsqueeze_ may have changed a shape the interpreter recorded
        if x is None or target is None or target.provenance == ONE_HOT:
            return
        if target_dtype(target, loss.target_node, ctx) not in INTEGER_DTYPES:
            return
        if target.rank is None or target.rank < 1:
            return
        if x.rank is not None:
            if x.rank != target.rank + 1 or x.shape[-1] == 1:  # type: ignore[index]
                return  # same rank: a regression target; a trailing 1 is the broadcast pitfall (TL309)
        else:
            last = x.trailing(1)
            target_last = target.shape[-1]  # type: ignore[index]
            if last is None or last[0] is None or last[0] <= 1 or target_last is None or target_last == last[0]:
                return
        shown = f" {format_shape(x.shape)} " if x.shape is not None else ""
        ctx.report(
            node,
            f"`{loss.label}` 的目标 {format_shape(target.shape)} 是整数类别索引，比输入{shown}少一个类别维："  # type: ignore[arg-type]
            "回归损失会把类别编号当数值，还会错误广播；分类请用 `CrossEntropyLoss`",
            related=ctx.related(target.origin),
        )
