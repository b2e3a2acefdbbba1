from __future__ import annotations

import ast

from torchls.core.findings import Edit, Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.device import common
from torchls.core.text import Span

_NUMPY_CONVERTERS = frozenset({"numpy.array", "numpy.asarray", "numpy.asanyarray"})


class NumpyOnGpuTensor(Rule):
    """对可能在 GPU 上的张量直接调用 `.numpy()`（或 `np.array(...)`），没有先 `.cpu()`。

    **为什么是问题**：`.numpy()` 返回与张量共享内存的 NumPy 数组，只能用于 CPU 上的张量；对 GPU 张量调用会报
    `can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first`。
    `np.array(t)`、`np.asarray(t)` 内部同样走这条路。用 `torch.device("cuda" if torch.cuda.is_available() else "cpu")`
    的代码在 CPU 机器上不会出错，换到 GPU 机器上才报错。需要梯度的张量还要先 `.detach()`，否则报
    `Can't call numpy() on Tensor that requires grad`。`.numpy(force=True)` 会自动拷到 CPU，不报告。

    **示例**
    ```python
    pred = model(x.to(device)).argmax(dim=1)
    labels = pred.numpy()
    ```

    **改正**：`labels = pred.cpu().numpy()`；需要梯度的张量写 `t.detach().cpu().numpy()`。

    **自动修复**：安全：在 `.numpy()` 前（或 `np.array(...)` 的参数后）插入 `.cpu()`，张量能证明需要梯度时插入
    `.detach().cpu()`。在 CPU 上 `.cpu()` 直接返回原张量，结果不变。
    """

    code = "TL204"
    raises = True
    requires_text = ("cuda", "mps")
    name = "numpy-on-gpu-tensor"
    severity = Severity.ERROR
    kb_entry = "torch.Tensor.numpy"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        method = isinstance(func, ast.Attribute) and func.attr == "numpy" and ctx.qualify(func) is None
        if method:
            if any(k.arg in ("force", None) for k in node.keywords) or node.args:
                return
            tensor_node = func.value  # type: ignore[union-attr]
            label = f"`{common.short(ctx.text(node))}`"
        elif ctx.qualify(func) in _NUMPY_CONVERTERS and node.args and not isinstance(node.args[0], ast.Starred):
            tensor_node = node.args[0]
            label = f"`{ctx.text(func)}(...)`"
        else:
            return
        device = common.device_of(tensor_node, ctx)
        if not common.accelerated(device):
            return
        tensor = ctx.tensor(tensor_node)
        insert = ".detach().cpu()" if tensor is not None and tensor.requires_grad else ".cpu()"
        if method:
            # Before the attribute name: `(a + b).numpy()` becomes `(a + b).cpu().numpy()`.
            start = ctx.name_span(func).start
            edits = (Edit(Span(start, start), insert[1:] + "."),)
        elif common.postfix_ready(tensor_node):
            edits = (ctx.insert_after(tensor_node, insert),)
        else:
            start = ctx.span(tensor_node).start
            edits = (Edit(Span(start, start), "("), ctx.insert_after(tensor_node, ")" + insert))
        ctx.report(
            node,
            common.zh(f"{label} 的张量可能在", common.describe(device), "上：NumPy 只能读 CPU 上的张量，应先 `.cpu()`"),
            fix=Fix(f"先拷回 CPU：插入 `{insert}`", edits),
            related=ctx.related(tensor.origin if tensor is not None else None),
        )
