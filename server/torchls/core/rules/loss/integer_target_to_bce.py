from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import BCE_LOSSES, append_method, loss_call, typed_target
from torchls.core.values import INTEGER_DTYPES


class IntegerTargetToBce(Rule):
    """传给 `BCEWithLogitsLoss` / `BCELoss`（及对应的 `F.` 函数）的目标是整数或布尔张量。

    **为什么是问题**：二元交叉熵要求目标是与输入同 dtype 族的浮点张量（0/1 或软标签）。`torch.long` 的 0/1
    标签、`F.one_hot` 的输出、比较得到的布尔掩码都会在运行时报错：`result type Float can't be cast to the
    desired output type Long`、`Found dtype Long but expected Float` 之类。

    **示例**
    ```python
    labels = torch.randint(0, 2, (N, 1))
    loss = nn.BCEWithLogitsLoss()(logits, labels)
    ```

    **改正**：`nn.BCEWithLogitsLoss()(logits, labels.float())`。

    **自动修复**：安全：在目标后面加 `.float()`。`BCEWithLogitsLoss` 总是提供；`BCELoss` 要求目标与输入 dtype
    完全一致，只在输入已知是 `float32` 时提供。
    """

    code = "TL310"
    raises = True
    requires_text = ("binary_cross_entropy", "BCE")
    name = "integer-target-to-bce"
    severity = Severity.ERROR
    kb_entry = "torch.nn.BCEWithLogitsLoss"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind not in BCE_LOSSES or loss.target_node is None:
            return
        target = typed_target(loss, ctx)
        dtype = target.dtype if target is not None else None
        if target is None or (dtype not in INTEGER_DTYPES and dtype != "torch.bool"):
            return
        x = loss.input(ctx)
        fix = None
        if loss.kind == "BCEWithLogitsLoss" or (x is not None and x.dtype == "torch.float32"):
            fix = Fix("把目标转成 `.float()`", (append_method(loss.target_node, "float", ctx),))
        ctx.report(
            node,
            f"`{loss.label}` 的目标是 `{dtype}`，而它要求浮点目标，运行时会报错",
            fix=fix,
            related=ctx.related(target.origin),
        )
