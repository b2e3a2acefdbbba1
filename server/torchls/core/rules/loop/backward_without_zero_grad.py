from __future__ import annotations

import ast

from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.statements import assigned_names
from torchls.core.values import InstanceValue


class BackwardWithoutZeroGrad(Rule):
    """训练循环里每步都 `backward()` 和 `optimizer.step()`，却从不清零梯度。

    **为什么是问题**：PyTorch 的梯度默认**累加**。循环里不调用 `optimizer.zero_grad()`（或
    `model.zero_grad()`），每一步的梯度都叠加在之前所有步上，更新方向越来越错，loss 发散或不降，且不报错。
    只在循环外清零一次同样不够。

    **示例**
    ```python
    optimizer.zero_grad()
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    **改正**：在循环体里、`backward()` 之前调用 `optimizer.zero_grad()`。有意做梯度累积时，在执行
    `optimizer.step()` 的分支里同时清零即可，本规则不会报告。

    **自动修复**：无，清零的位置要由作者决定。
    """

    code = "TL401"
    requires_text = ("backward",)
    name = "backward-without-zero-grad"
    severity = Severity.ERROR
    kb_entry = "torch.optim.Optimizer.zero_grad"
    node_types = (ast.For, ast.While, ast.AsyncFor)

    def visit(self, node: ast.For | ast.While | ast.AsyncFor, ctx: Context) -> None:
        if "backward" not in ctx.source.text:  # most files never train: skip their loops cheaply
            return
        backward: ast.Call | None = None
        steps = zeroes = False
        rebound = assigned_names(node)  # an optimizer built inside the loop starts from fresh parameters
        called: set[str] = set()
        for inner in _walk_body(node):
            if isinstance(inner, ast.Call):
                func = inner.func
                if isinstance(func, ast.Attribute):
                    if func.attr == "backward" and backward is None:
                        backward = inner
                    elif func.attr == "step" and _is_optimizer(func.value, ctx) and not _names(func.value) & rebound:
                        steps = True
                    elif func.attr in ("zero_grad", "zero_"):
                        zeroes = True
                    called.add(func.attr)
                elif isinstance(func, ast.Name):
                    called.add(func.id)
            elif isinstance(inner, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                if any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in targets):
                    zeroes = True  # p.grad = None
        if backward is None or not steps or zeroes or called & _functions_that_zero_grad(ctx):
            return
        ctx.report(backward, "循环里每步都 backward() 和 step()，但从不清零梯度：梯度会在各步之间累加")


def _walk_body(loop: ast.AST):
    """Every node in the loop body, not descending into nested function or class definitions."""
    stack = list(getattr(loop, "body", [])) + list(getattr(loop, "orelse", []))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _names(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_optimizer(node: ast.expr, ctx: Context) -> bool:
    value = ctx.value(node)
    if isinstance(value, InstanceValue):
        return value.qualname.startswith("torch.optim.") and ".lr_scheduler." not in value.qualname
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name.lower().endswith(("optimizer", "optim"))


def _functions_that_zero_grad(ctx: Context) -> set[str]:
    """Names of functions and methods in this file whose body clears gradients (computed once per file)."""
    cached = ctx.file_facts.get("zero_grad_helpers")
    if cached is None:
        cached = set()
        functions = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        for function in functions:
            for inner in ast.walk(function):
                if (
                    isinstance(inner, ast.Attribute)
                    and inner.attr in ("zero_grad", "grad")
                    and isinstance(inner.ctx, ast.Load | ast.Store)
                ) and (inner.attr == "zero_grad" or isinstance(inner.ctx, ast.Store)):
                    cached.add(function.name)
                    break
        ctx.file_facts["zero_grad_helpers"] = cached
    return cached
