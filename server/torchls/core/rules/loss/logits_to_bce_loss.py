from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import editable_constructor, loss_call, reliable, rename_callee
from torchls.core.values import LOGITS


class LogitsToBceLoss(Rule):
    """把未经 sigmoid 的 logits（`Linear`/卷积层的原始输出）传给了 `BCELoss` / `F.binary_cross_entropy`。

    **为什么是问题**：`BCELoss` 要的是 `[0, 1]` 内的概率，它自己不做 sigmoid。logits 可以是任意实数：
    CPU 上报 `all elements of input should be between 0 and 1`，CUDA 上是难以定位的 device-side assert；
    侥幸都落在 `[0, 1]` 内时则静默算出错误的损失。

    **示例**
    ```python
    model = nn.Linear(16, 1)
    loss = F.binary_cross_entropy(model(x), y)
    ```

    **改正**：改用自带 sigmoid、数值也更稳定的 `F.binary_cross_entropy_with_logits(model(x), y)` /
    `nn.BCEWithLogitsLoss()`；或者先 `torch.sigmoid(...)` 再传给 `BCELoss`。

    **自动修复**：安全：`F.binary_cross_entropy(...)` 改为 `F.binary_cross_entropy_with_logits(...)`（参数顺序和含义
    相同）；`nn.BCELoss(...)` 写在调用处，或赋给的变量在整个文件里只用于这一次调用时，改为 `nn.BCEWithLogitsLoss(...)`。
    损失模块还被别处使用（那里可能传的是概率）时不提供修复。
    """

    code = "TL303"
    requires_text = ("binary_cross_entropy", "BCELoss")
    name = "logits-to-bce-loss"
    severity = Severity.ERROR
    kb_entry = "torch.nn.BCELoss"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind != "BCELoss" or loss.input_node is None:
            return
        x = loss.input(ctx)
        if x is None or x.provenance != LOGITS or not reliable(loss.input_node, ctx):
            return
        edit = None
        if loss.functional:
            edit = rename_callee(
                node, "binary_cross_entropy", "binary_cross_entropy_with_logits", ctx, "torch.nn.functional"
            )
        else:
            constructor = editable_constructor(loss, ctx)
            if constructor is not None:
                edit = rename_callee(constructor, "BCELoss", "BCEWithLogitsLoss", ctx, "torch.nn")
        replacement = "F.binary_cross_entropy_with_logits" if loss.functional else "BCEWithLogitsLoss"
        fix = Fix(f"改用 `{replacement}`", (edit,)) if edit is not None else None
        ctx.report(
            node,
            f"`{loss.label}` 的输入是未经 sigmoid 的 logits，而它要求 [0, 1] 内的概率；应改用 `{replacement}`",
            fix=fix,
            related=ctx.related(x.origin),
        )
