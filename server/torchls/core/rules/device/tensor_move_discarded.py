from __future__ import annotations

import ast

from torchls.core.facts import DTYPE_METHODS
from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule

_MOVES = frozenset({"to", "cuda", "cpu"}) | frozenset(DTYPE_METHODS)


class TensorMoveDiscarded(Rule):
    """`x.to(device)`、`x.cuda()`、`x.float()` 的结果被丢弃：张量不会原地改变。

    **为什么是问题**：对张量来说，`to`/`cuda`/`cpu` 和 `float`/`long` 等转换都返回一个**新张量**，原来的 `x`
    不变；只写 `x.to(device)` 而不赋值，`x` 仍在原来的设备上，后面会报设备不一致。模块不同：
    `model.to(device)` 会原地移动参数，所以不赋值也没问题，本规则不会对模块报告。

    **示例**
    ```python
    x = torch.randn(4, 3)
    x.to("cuda")      # x 仍在 CPU 上
    ```

    **改正**：`x = x.to("cuda")`。

    **自动修复**：安全：把结果赋值回原来的变量。
    """

    code = "TL201"
    requires_text = (
        ".to(",
        ".cuda(",
        ".cpu(",
        ".float(",
        ".double(",
        ".half(",
        ".long(",
        ".int(",
        ".bool(",
        ".short(",
        ".byte(",
        ".bfloat16(",
    )
    name = "tensor-move-discarded"
    severity = Severity.ERROR
    kb_entry = "torch.Tensor.to"
    node_types = (ast.Expr,)
    fixable = True

    def visit(self, node: ast.Expr, ctx: Context) -> None:
        call = node.value
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            return
        if call.func.attr not in _MOVES or ctx.tensor(call.func.value) is None:
            return
        receiver = call.func.value
        fix = None
        if _assignable(receiver):
            target = ctx.text(receiver)
            fix = Fix(f"改为 `{target} = {ctx.text(call)}`", (ctx.replace(call, f"{target} = {ctx.text(call)}"),))
        ctx.report(
            call,
            f"`{call.func.attr}()` 返回新张量，不会原地修改 `{ctx.text(receiver)}`；这行的结果被丢弃了",
            fix=fix,
        )


def _assignable(node: ast.expr) -> bool:
    """A plain name or attribute chain (``x``, ``self.buffer``) that ``= ...`` can rebind."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)
