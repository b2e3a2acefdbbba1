from __future__ import annotations

import ast

from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.shapes import fmt


class LinearInFeaturesMismatch(Rule):
    """`nn.Linear` 的 `in_features` 与输入张量的最后一维不一致。

    **为什么是问题**：`Linear` 只变换输入的最后一维，要求它等于 `in_features`，否则运行时报
    `mat1 and mat2 shapes cannot be multiplied`。最常见的原因是卷积输出展平后的长度算错了，或者前一层的
    `out_features` 与这一层的 `in_features` 没有对上。

    **示例**
    ```python
    fc = nn.Linear(512, 10)
    x = torch.randn(32, 500)
    fc(x)  # 最后一维是 500，不是 512
    ```

    **改正**：让 `in_features` 等于实际的最后一维（这里是 `nn.Linear(500, 10)`），或者检查前面的展平和池化。

    **自动修复**：无，正确的数值只有作者知道。
    """

    code = "TL101"
    name = "linear-in-features-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.nn.Linear"
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        call = ctx.call(node)
        layer = call.module
        if layer is None or layer.qualname != "torch.nn.Linear":
            return
        expected = layer.arg("in_features")
        x = ctx.tensor(call.arg_node(0, "input"))
        last = x.trailing(1) if x is not None else None
        if not isinstance(expected, int) or not last or last[0] is None or last[0] == expected:
            return
        shape = fmt(x.shape) if x.shape is not None else f"(..., {last[0]})"
        ctx.report(
            node,
            f"`Linear` 的 in_features 是 {expected}，但输入的最后一维是 {last[0]}（输入形状 {shape}）",
            related=ctx.related(layer.origin) + ctx.related(x.origin),
        )
