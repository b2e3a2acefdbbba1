from __future__ import annotations

import ast

from torchls.core import shapes
from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.shape.common import recorded_problem
from torchls.core.values import Literal


class SqueezeNonSingletonDim(Rule):
    """`squeeze(dim)` 指定的维度大小不是 1：调用什么也不做。

    **为什么是问题**：`squeeze(d)` 只删除大小为 1 的第 `d` 维；那一维不是 1 时直接返回原形状，不报错。
    通常意味着维度编号写错了，后面的形状都会和预期不一样，直到很远的地方才报错。

    **示例**
    ```python
    x = torch.randn(8, 1, 16)
    y = x.squeeze(0)      # 第 0 维是 8，不会被删除
    ```

    **改正**：写对要删除的维度：`x.squeeze(1)` 得到 `(8, 16)`。

    **自动修复**：无，正确的维度只有作者知道。
    """

    code = "TL106"
    requires_text = ("squeeze",)
    name = "squeeze-non-singleton-dim"
    severity = Severity.WARNING
    kb_entry = "torch.Tensor.squeeze"
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        call = ctx.call(node)
        if call.method == "squeeze" and isinstance(node.func, ast.Attribute):
            tensor = ctx.tensor(node.func.value)
            dim = call.arg(0, "dim")
        elif call.qualname == "torch.squeeze":
            tensor = ctx.tensor(call.arg_node(0, "input"))
            dim = call.arg(1, "dim")
        else:
            return
        batch_problem = recorded_problem(node, ctx, "squeeze")  # the dim is a loader's batch that is never 1
        if batch_problem is not None:
            ctx.report(node, batch_problem, related=ctx.related(tensor.origin) if tensor is not None else ())
            return
        if tensor is None or tensor.shape is None or not isinstance(dim, Literal) or not isinstance(dim.value, int):
            return
        index = shapes.normalize_dim(dim.value, len(tensor.shape))
        if index is None or tensor.shape[index] in (None, 1):
            return
        ctx.report(
            node,
            f"第 {dim.value} 维的大小是 {tensor.shape[index]}，不是 1：`squeeze({dim.value})` 不会改变形状 "
            f"{shapes.fmt(tensor.shape)}",
            related=ctx.related(tensor.origin),
        )
