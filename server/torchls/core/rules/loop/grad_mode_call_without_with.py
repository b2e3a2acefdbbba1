from __future__ import annotations

import ast

from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow


class GradModeCallWithoutWith(Rule):
    """`torch.no_grad()`（或 `inference_mode()`、`enable_grad()`）单独写成一行，既不在 `with` 里也不是装饰器。

    **为什么是问题**：这几个都是上下文管理器：只有 `with torch.no_grad():` 块里（或被 `@torch.no_grad()`
    装饰的函数里）才会关闭梯度。单独调用一次只是创建了一个对象又丢掉，什么也不改变：后面的代码照样构建
    计算图，推理时显存照样上涨；写 `torch.enable_grad()` 想重新打开梯度也同样无效。注意
    `torch.set_grad_enabled(False)` 单独调用是有效的（会全局关闭梯度），本规则不报告它。

    **示例**
    ```python
    model.eval()
    torch.no_grad()
    preds = model(x_test)
    ```

    **改正**：
    ```python
    model.eval()
    with torch.no_grad():
        preds = model(x_test)
    ```

    **自动修复**：无：哪些代码该放进 `with` 块要由作者决定。
    """

    code = "TL411"
    requires_text = ("no_grad", "inference_mode", "enable_grad")
    name = "grad-mode-call-without-with"
    severity = Severity.WARNING
    kb_entry = "torch.no_grad"
    node_types = (ast.Expr,)

    def visit(self, node: ast.Expr, ctx: Context) -> None:
        call = node.value
        if not isinstance(call, ast.Call):
            return
        qualname = ctx.qualify(call.func)
        if qualname not in flow.GRAD_CONTEXTS:
            return
        text = ctx.text(call.func)
        ctx.report(call, f"单独调用 `{text}()` 不会生效：它只在 `with` 语句里或作为装饰器时才改变梯度模式")
