from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context
from torchls.core.rules.shape.common import RecordedProblemRule, recorded_problem


class ViewOnNonContiguous(RecordedProblemRule):
    """对 `transpose`/`permute`/`.t()`/`.T` 之后在内存中不连续的张量调用 `view`，而新形状无法按原内存布局得到。

    **为什么是问题**：`view` 只改元信息、不复制数据，因此要求新形状与现有的内存布局（步长）兼容。交换维度后
    张量通常不再连续，此时把被交换的维度合并或拆分就会报 `view size is not compatible with input tensor's size
    and stride`。本规则在各维大小都已知时，用与 PyTorch 相同的算法判断能否 `view`，只报告一定会失败的调用。

    **示例**
    ```python
    x = torch.randn(2, 3, 4)
    y = x.transpose(1, 2).view(2, 12)   # 交换后不连续，合并 (4, 3) 失败
    ```

    **改正**：`x.transpose(1, 2).reshape(2, 12)`（必要时自动复制），或 `.contiguous().view(2, 12)`。

    **自动修复**：安全：把 `view` 改为 `reshape`。原来的 `view` 一定报错，所以不存在依赖它共享内存的代码。
    """

    code = "TL104"
    raises = True
    requires_text = ("view",)
    name = "view-on-non-contiguous"
    severity = Severity.ERROR
    kb_entry = "torch.Tensor.contiguous"
    problem_kind = "view_stride"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        message = recorded_problem(node, ctx, self.problem_kind)
        if message is None or not isinstance(node.func, ast.Attribute) or node.func.attr != "view":
            return
        fix = Fix("改为 reshape", (ctx.replace_name(node.func, "reshape"),))
        tensor = ctx.tensor(node.func.value)
        related = ctx.related(tensor.origin) if tensor is not None else ()
        ctx.report(node, f"{message}：先 `.contiguous()` 再 `view`，或改用 `reshape`", fix=fix, related=related)
