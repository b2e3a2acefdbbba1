from __future__ import annotations

import ast
import re

from torchls.core.facts import MAY_REQUIRE_GRAD_PREFIXES
from torchls.core.findings import Related, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow
from torchls.core.values import ModuleValue, TensorValue

_LOSS_NAME = re.compile(r"criterion|loss", re.IGNORECASE)


class BackwardUnderNoGrad(Rule):
    """对在 `torch.no_grad()` / `inference_mode()` 里算出来的损失调用 `backward()`。

    **为什么是问题**：无梯度模式下的运算不记录计算图，得到的张量 `requires_grad=False`、没有 `grad_fn`，
    `backward()` 会直接报 `RuntimeError: element 0 of tensors does not require grad and does not have a
    grad_fn`。常见于把训练步骤误写进了 `with torch.no_grad():` 块，或给训练函数加了 `@torch.no_grad()`。
    在两种情况下报告：损失是在无梯度模式下由运算（损失函数、torch 函数、torch 层的调用、张量方法、算术）
    算出、再一路传到 `backward()` 的（例如训练步骤调用了一个带 `@torch.no_grad()` 的公共辅助方法，损失由它
    返回）；或者 `backward()` 本身在无梯度模式下，而且损失的每一次赋值也都在无梯度模式下由运算算出。之后
    改过 `requires_grad` 的、可能原样返回张量本身的方法（`.to()`、`.float()`、原地方法）和本文件模型的
    调用结果不算。

    **示例**
    ```python
    with torch.no_grad():
        loss = criterion(model(x), y)
        loss.backward()
    ```

    **改正**：把前向和 `backward()` 移出 `no_grad` 块，只把评估代码留在里面。

    **自动修复**：无：哪些代码该留在 `no_grad` 里要由作者决定。
    """

    code = "TL409"
    raises = True
    requires_text = ("backward",)
    name = "backward-under-no-grad"
    severity = Severity.ERROR
    kb_entry = "torch.no_grad"
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "backward"):
            return
        receiver = func.value
        value = ctx.value(receiver)
        related: list[Related] = []
        if isinstance(value, TensorValue) and value.no_graph is not None and value.requires_grad is False:
            # made without a graph wherever that was: a helper decorated with @torch.no_grad(), a no_grad block
            related.append(Related(ctx.span(value.no_graph.node), "这里是在无梯度模式下算出来的"))
        elif (
            ctx.grad_enabled
            or flow.grad_mode(node, ctx) != flow.DISABLED
            or not _computed_without_grad(receiver, node, ctx, 0)
        ):
            return
        shown = ctx.text(receiver) if len(ctx.text(receiver)) <= 40 else "损失"
        message = f"`{shown}` 是在无梯度模式下算出来的，不需要梯度，对它调用 `backward()` 会报 RuntimeError"
        ctx.report(node, message, related=related)


def _computed_without_grad(expr: ast.expr, use: ast.AST, ctx: Context, depth: int) -> bool:
    """The tensor ``expr`` gives provably has no graph: every way it was made ran under no_grad."""
    if depth > 3:
        return False
    if isinstance(expr, ast.BinOp | ast.UnaryOp):
        return True  # an operation under no_grad: no graph, whatever its operands
    if isinstance(expr, ast.Name):
        return _name_without_grad(expr.id, use, ctx, depth)
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    qualname = ctx.qualify(func)
    if qualname is not None:
        if not qualname.startswith("torch.") or qualname.startswith(MAY_REQUIRE_GRAD_PREFIXES):
            return False
        return not any(k.arg in ("requires_grad", None) for k in expr.keywords)
    call = ctx.call(expr)
    if isinstance(call.module, ModuleValue):
        return call.module.user_class is None and call.module.qualname.startswith("torch.nn.")
    if isinstance(func, ast.Name | ast.Attribute) and _LOSS_NAME.search(
        func.id if isinstance(func, ast.Name) else func.attr
    ):
        return True  # criterion(out, y), self.loss_fn(out, y): a loss function computes, it does not enable grad
    if isinstance(func, ast.Attribute):
        if func.attr in ("requires_grad_", "detach_", "backward"):
            return False
        if func.attr == "scale" and len(expr.args) == 1:  # scaler.scale(loss): loss times a number
            return _computed_without_grad(expr.args[0], use, ctx, depth + 1)
        return isinstance(ctx.value(func.value), TensorValue)  # a tensor method run under no_grad
    return False


def _name_without_grad(name: str, use: ast.AST, ctx: Context, depth: int) -> bool:
    """Every value of ``name`` that can reach ``use`` was computed under no_grad."""
    reaching = flow.reaching_bindings(name, use, ctx)
    if not reaching:
        return False
    for store in reaching:
        statement = flow.parent(store, ctx)
        if flow.grad_mode(store, ctx) != flow.DISABLED:
            return False
        value = flow.simple_assignment(store, ctx)
        if value is None or not _computed_without_grad(value, statement or use, ctx, depth + 1):
            return False
    return True
