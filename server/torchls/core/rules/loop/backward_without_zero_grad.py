from __future__ import annotations

import ast
from dataclasses import dataclass, field

from torchls.core.findings import Related, Severity
from torchls.core.rules.base import Analysis, Context, Rule
from torchls.core.rules.loop.flow import FileFunctions
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
    node_types = (ast.For, ast.While, ast.AsyncFor, ast.ListComp, ast.GeneratorExp)

    def visit(self, node: ast.AST, ctx: Context) -> None:
        if "backward" not in ctx.source.text:  # most files never train: skip their loops cheaply
            return
        if isinstance(node, ast.ListComp | ast.GeneratorExp) and not isinstance(node.elt, ast.Call):
            return  # a comprehension trains only by calling a step: `[self.step(b) for b in batches]`
        found = _trains_without_zeroing(list(_walk_body(node)), assigned_names(node), ctx)
        if found is not None:
            backward, helper_call = found
            where = helper_call if helper_call is not None else backward
            related = () if helper_call is None else (Related(ctx.source.span_from_ast(backward), "在这里反向传播"),)
            ctx.report(
                where, "循环里每步都 backward() 和 step()，但从不清零梯度：梯度会在各步之间累加", related=related
            )


def _trains_without_zeroing(
    body: list[ast.AST], rebound: set[str], ctx: Context, depth: int = 0
) -> tuple[ast.Call, ast.Call | None] | None:
    """The loop body's first ``backward()`` when the body also steps an optimizer and nothing clears gradients,
    and the call of the file's function or method that does it when it happens there (``self.train_step()``,
    ``[self.step() for _ in range(n)]``)."""
    backward: ast.Call | None = None
    helper_call: ast.Call | None = None
    steps = zeroes = False
    called: set[str] = set()
    for inner in body:
        helper = _file_function(inner, ctx) if isinstance(inner, ast.Call) else None
        if helper is not None and helper in ctx.analysis(ZeroingFunctions).functions:
            zeroes = True  # self.reset_grads(), a train_step that clears first
        elif helper is not None and depth == 0 and backward is None:
            inside = _helper_training(helper, ctx)
            if inside is not None:
                backward, helper_call = inside[0], inner
                steps = True
        if isinstance(inner, ast.Call):
            func = inner.func
            if isinstance(func, ast.Attribute):
                if func.attr == "backward" and backward is None:
                    backward = inner
                elif func.attr == "step" and _is_optimizer(func.value, ctx) and not _names(func.value) & rebound:
                    steps = True
                elif func.attr in ("zero_grad", "zero_"):
                    zeroes = True
                elif helper is None and func.attr in {f.name for f in ctx.analysis(ZeroingFunctions).functions}:
                    zeroes = True  # obj.clear_grads() of some other object: may well clear them
            elif isinstance(func, ast.Name) and helper is None:
                called.add(func.id)
        elif isinstance(inner, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in targets):
                zeroes = True  # p.grad = None
    if backward is None or not steps or zeroes or called & {f.name for f in ctx.analysis(ZeroingFunctions).functions}:
        return None
    return backward, helper_call


def _helper_training(
    helper: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context
) -> tuple[ast.Call, ast.Call | None] | None:
    """What a training step of the file does (once per function and file: every loop that calls it asks)."""
    cache = ctx.analysis(HelperSteps).by_function
    if helper not in cache:
        cache[helper] = _trains_without_zeroing(list(_walk_body(helper)), set(), ctx, 1)
    return cache[helper]


def _file_function(call: ast.Call, ctx: Context) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The file's function (``train_step(...)``) or the current class's method (``self.step()``) a call runs."""
    func = call.func
    if isinstance(func, ast.Name):
        found = [
            n for n in ctx.tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == func.id
        ]
        return found[0] if len(found) == 1 else None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return ctx.klass.method(func.attr) if ctx.klass is not None else None
    return None


def _walk_body(loop: ast.AST):
    """Every node in the loop body (a comprehension's element and conditions), not descending into nested
    function or class definitions."""
    if isinstance(loop, ast.ListComp | ast.GeneratorExp):
        stack: list[ast.AST] = [loop.elt, *(c for g in loop.generators for c in g.ifs)]
    else:
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


@dataclass(frozen=True, slots=True)
class ZeroingFunctions(Analysis):
    """The functions and methods of this file whose body clears gradients."""

    functions: frozenset[ast.FunctionDef | ast.AsyncFunctionDef]

    @classmethod
    def compute(cls, ctx: Context) -> ZeroingFunctions:
        return cls(
            frozenset(
                function
                for function in ctx.analysis(FileFunctions).definitions
                if any(
                    isinstance(inner, ast.Attribute)
                    and (inner.attr == "zero_grad" or (inner.attr == "grad" and isinstance(inner.ctx, ast.Store)))
                    for inner in ast.walk(function)
                )
            )
        )


@dataclass(slots=True)
class HelperSteps(Analysis):
    """What a training step in each of the file's helper functions does (``_helper_training``), once per
    function: every loop that calls the helper asks. It reads the values evaluated when it is first asked."""

    by_function: dict[ast.AST, tuple[ast.Call, ast.Call | None] | None] = field(default_factory=dict)
