from __future__ import annotations

import ast
from collections.abc import Iterator

from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow
from torchls.core.values import InstanceValue

# Calls that may sit between zero_grad() and step() without producing gradients.
_HARMLESS_FUNCTIONS = frozenset({"print", "len", "str", "float", "int", "round", "isinstance", "range"})
_HARMLESS_METHODS = frozenset(
    {"info", "debug", "warning", "log", "add_scalar", "set_postfix", "set_description", "item", "append", "update"}
)


class ZeroGradBetweenBackwardAndStep(Rule):
    """`optimizer.zero_grad()` 写在了 `loss.backward()` 和 `optimizer.step()` 之间。

    **为什么是问题**：`zero_grad()` 会把刚由 `backward()` 算出的梯度清零（默认设成 `None`），紧接着的
    `step()` 就没有梯度可用：参数不更新（或只被动量、权重衰减推着走），损失纹丝不动，而且不报错。
    只在三者按顺序出现在同一段直线代码里（中间没有分支、循环，也没有别的 `backward()` 或可能重新算梯度的
    调用）时才报告。

    **示例**
    ```python
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    ```

    **改正**：把 `zero_grad()` 放到前向之前（或 `step()` 之后）：
    ```python
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    ```

    **自动修复**：无：清零的新位置要由作者决定。
    """

    code = "TL408"
    requires_text = ("backward",)
    name = "zero-grad-between-backward-and-step"
    severity = Severity.ERROR
    kb_entry = "torch.optim.Optimizer.zero_grad"
    node_types = (ast.Expr,)

    def visit(self, node: ast.Expr, ctx: Context) -> None:
        call = node.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "zero_grad"
            and isinstance(call.func.value, ast.Name | ast.Attribute)
        ):
            return
        if not flow.file_mentions(ctx, "backward"):
            return
        zeroed = ctx.text(call.func.value)
        block = _block_of(node, ctx)
        if block is None:
            return
        index = next(i for i, s in enumerate(block) if s is node)
        optimizer = _next_step(block[index + 1 :], ctx)
        if optimizer is None or not _same_parameters(zeroed, optimizer, ctx):
            return
        if not _backward_before(reversed(block[:index]), optimizer, zeroed):
            return
        message = f"`{zeroed}.zero_grad()` 在 `backward()` 之后、`{optimizer}.step()` 之前：刚算出的梯度被清掉了"
        ctx.report(call, message)


def _block_of(statement: ast.stmt, ctx: Context) -> list[ast.stmt] | None:
    holder = flow.parent(statement, ctx)
    if holder is None:
        return None
    for value in vars(holder).values():
        if isinstance(value, list) and any(s is statement for s in value):
            return value
    return None


def _straight(statements: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements in order, with ``with`` blocks opened (they always run)."""
    for statement in statements:
        if isinstance(statement, ast.With | ast.AsyncWith):
            yield from _straight(statement.body)
        else:
            yield statement


def _next_step(statements: list[ast.stmt], ctx: Context) -> str | None:
    """The optimizer stepped by the next statements (``optimizer.step()`` or ``scaler.step(optimizer)``), when
    nothing before that step can produce gradients."""
    for statement in _straight(statements):
        if not isinstance(statement, ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign):
            return None
        value = statement.value
        if (
            isinstance(statement, ast.Expr)
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "step"
        ):
            if not value.args and not value.keywords and isinstance(value.func.value, ast.Name | ast.Attribute):
                return ctx.text(value.func.value)
            if len(value.args) == 1 and not value.keywords and isinstance(value.args[0], ast.Name | ast.Attribute):
                return ctx.text(value.args[0])  # scaler.step(optimizer)
            return None  # step(closure): the closure computes the gradients
        if not _cannot_make_gradients(statement, ctx):
            return None
    return None


def _cannot_make_gradients(statement: ast.stmt, ctx: Context) -> bool:
    for node in ast.walk(statement):
        if isinstance(node, ast.Attribute) and (
            node.attr in ("backward", "manual_backward", "step", "zero_grad")
            or (node.attr == "grad" and isinstance(node.ctx, ast.Store))
        ):
            return False
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _HARMLESS_FUNCTIONS:
                continue
            if isinstance(func, ast.Attribute) and func.attr in _HARMLESS_METHODS:
                continue
            qualname = ctx.qualify(func) or ""
            if qualname.startswith("torch.") and not qualname.startswith("torch.autograd"):
                continue
            return False
    return True


def _backward_before(statements: Iterator[ast.stmt], optimizer: str, zeroed: str) -> bool:
    """Going back from ``zero_grad()``: a ``backward()`` comes before any other step or zero_grad."""
    for statement in statements:
        if isinstance(statement, ast.With | ast.AsyncWith):
            if _backward_before(reversed(list(_straight(statement.body))), optimizer, zeroed):
                return True
            if _mentions_step_or_zero(statement):
                return False
            continue
        simple = isinstance(statement, ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign)
        if _mentions_step_or_zero(statement):
            return False
        if _has_backward(statement):
            return simple
    return False


def _mentions_step_or_zero(statement: ast.stmt) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in ("step", "zero_grad") for n in ast.walk(statement))


def _has_backward(statement: ast.stmt) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in ("backward", "manual_backward") for n in ast.walk(statement))


def _same_parameters(zeroed: str, optimizer: str, ctx: Context) -> bool:
    """``optimizer.zero_grad()`` before ``optimizer.step()``, or ``model.zero_grad()`` when the optimizer was
    built on ``model.parameters()``."""
    if zeroed == optimizer:
        return True
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Name | ast.Attribute) and ctx.text(node) == optimizer:
            value = ctx.value(node)
            if isinstance(value, InstanceValue) and value.origin is not None:
                call = value.origin.node
                params = call.args[0] if isinstance(call, ast.Call) and call.args else None
                return (
                    isinstance(params, ast.Call)
                    and isinstance(params.func, ast.Attribute)
                    and params.func.attr == "parameters"
                    and ctx.text(params.func.value) == zeroed
                )
    return False
