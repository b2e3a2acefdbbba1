from __future__ import annotations

import ast

from torchls.core import control_flow
from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow, modules
from torchls.core.values import InstanceValue, ModuleValue, TensorValue

# In-place tensor methods that autograd allows on a leaf that requires grad.
_ALLOWED_INPLACE = frozenset({"requires_grad_", "detach_", "share_memory_", "retain_grad", "register_hook"})
_OPERATORS = {
    ast.Add: "+=",
    ast.Sub: "-=",
    ast.Mult: "*=",
    ast.Div: "/=",
    ast.FloorDiv: "//=",
    ast.Mod: "%=",
    ast.Pow: "**=",
    ast.MatMult: "@=",
    ast.BitAnd: "&=",
    ast.BitOr: "|=",
    ast.BitXor: "^=",
    ast.LShift: "<<=",
    ast.RShift: ">>=",
}


class InplaceOnLeafRequiringGrad(Rule):
    """在梯度开启时对需要梯度的叶子张量（参数、`requires_grad=True` 创建的张量）做原地操作。

    **为什么是问题**：autograd 不允许原地修改需要梯度的叶子张量：`w += 1`、`w.add_(1)`、`w.zero_()`、
    `w[0] = 0`，以及手写参数更新 `for p in model.parameters(): p -= lr * p.grad`，都会直接报
    `RuntimeError: a leaf Variable that requires grad is being used in an in-place operation`。
    只在张量确实是叶子且需要梯度（`torch.randn(..., requires_grad=True)`、`nn.Parameter(...)`、
    本作用域里创建的模型的 `parameters()`）、并且这行代码在梯度开启时运行（不在 `torch.no_grad()` 里，
    也没有被本文件在 `no_grad` 下调用的函数里）时才报告。

    **示例**
    ```python
    w = torch.randn(3, requires_grad=True)
    loss = (w * x).sum()
    loss.backward()
    w -= 0.1 * w.grad
    ```

    **改正**：把更新放进 `with torch.no_grad():` 里（或交给优化器 `optimizer.step()`）：
    ```python
    with torch.no_grad():
        w -= 0.1 * w.grad
    ```

    **自动修复**：无：包进 `no_grad` 还是改成非原地写法（`w = w - ...`，保留计算图）要由作者决定。
    """

    code = "TL405"
    raises = True
    requires_text = ("requires_grad", "parameters", "Parameter")
    name = "inplace-on-leaf-requiring-grad"
    severity = Severity.ERROR
    kb_entry = "torch.Tensor"
    node_types = (ast.AugAssign, ast.Call, ast.Assign)

    def visit(self, node: ast.AugAssign | ast.Call | ast.Assign, ctx: Context) -> None:
        if not flow.file_mentions(ctx, "requires_grad", "Parameter", "parameters("):
            return
        found = _inplace_target(node)
        if found is None:
            self._layer_parameter(node, ctx)
            return
        name, operation, where = found
        value = ctx.value(name)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            value = ctx.value(node.target)
        kind = _leaf_kind(value)
        if kind is None or not ctx.grad_enabled or flow.grad_mode(node, ctx) not in (flow.ENABLED, flow.CALLER):
            return
        scope = flow.scope_of(node, ctx)
        if not _local_leaf(name.id, kind, scope, node, ctx) or _gradient_switched_off(name.id, kind, scope, node, ctx):
            return
        if flow.grad_mode(node, ctx) == flow.CALLER and _called_without_grad(scope, ctx):
            return
        what = "模型参数" if kind == "parameter" else "需要梯度的叶子张量"
        message = f"`{name.id}` 是{what}，梯度开启时对它做原地操作 `{operation}` 会报 RuntimeError"
        ctx.report(where, message)

    def _layer_parameter(self, node: ast.AST, ctx: Context) -> None:
        """``self.logvar.bias.fill_(-3.0)`` in ``__init__``, ``fc.weight += x``: an in-place change of a torch
        layer's own ``weight``/``bias`` (leaf parameters that require grad) while grad is on. Only where nothing
        in the scope touches ``requires_grad`` (freezing the layer first would make it legal)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver, method = node.func.value, node.func.attr
            if not method.endswith("_") or method.startswith("_") or method in _ALLOWED_INPLACE:
                return
            operation, where = f"{method}()", node
        elif isinstance(node, ast.AugAssign):
            receiver, operation, where = node.target, _OPERATORS.get(type(node.op), "+="), node.target
        else:
            return
        if not (isinstance(receiver, ast.Attribute) and receiver.attr in ("weight", "bias")):
            return
        layer = ctx.value(receiver.value)
        if not (isinstance(layer, ModuleValue) and layer.user_class is None and layer.qualname.startswith("torch.nn.")):
            return
        if _leaf_kind(ctx.value(receiver)) is None or not ctx.grad_enabled:
            return
        if flow.grad_mode(node, ctx) not in (flow.ENABLED, flow.CALLER):
            return
        scope = flow.scope_of(node, ctx)
        if any(
            isinstance(n, ast.Attribute | ast.keyword)
            and "requires_grad" in ((getattr(n, "attr", None) or getattr(n, "arg", None)) or "")
            for n in control_flow.scope_nodes(scope)
        ):
            return
        if flow.grad_mode(node, ctx) == flow.CALLER and _called_without_grad(scope, ctx):
            return
        text = ctx.text(receiver)
        ctx.report(where, f"`{text}` 是模型参数，梯度开启时对它做原地操作 `{operation}` 会报 RuntimeError")


def _inplace_target(node: ast.AST) -> tuple[ast.Name, str, ast.AST] | None:
    """(the tensor's name, the operation, where to report) for ``w += x``, ``w[i] = x``, ``w.add_(x)``."""
    if isinstance(node, ast.AugAssign):
        target = node.target
        operation = _OPERATORS.get(type(node.op), "+=")
        if isinstance(target, ast.Name):
            return target, operation, target
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            return target.value, f"[...] {operation}", target
        return None
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                return target.value, "[...] =", target
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        method = node.func.attr
        if method.endswith("_") and not method.startswith("_") and method not in _ALLOWED_INPLACE:
            return node.func.value, f"{method}()", node
    return None


def _leaf_kind(value: object) -> str | None:
    """ "tensor" or "parameter" when the value is a leaf that requires grad; None when that is not proven."""
    if isinstance(value, TensorValue) and value.requires_grad is True and value.is_leaf is True:
        return "tensor" if value.origin is not None else "parameter"
    if isinstance(value, ModuleValue) and value.qualname == "torch.nn.Parameter" and value.origin is not None:
        given, requires_grad = modules.literal_argument(value.origin.node, 1, "requires_grad")
        return "tensor" if not given or requires_grad is True else None
    return None


def _local_leaf(name: str, kind: str, scope: control_flow.Scope, node: ast.AST, ctx: Context) -> bool:
    """The leaf is made in this scope: a tensor created here, or the parameters of a model built here."""
    if flow.is_parameter(scope, name):
        return False
    stores = [
        s
        for s in flow.bindings(scope, name, ctx)
        if control_flow.position(s) <= control_flow.position(node)
        and not isinstance(flow.parent(s, ctx), ast.AugAssign)
    ]
    if not stores:
        return False
    if kind == "tensor":
        return True
    for store in stores:
        loop = flow.parent(store, ctx)
        if not isinstance(loop, ast.For | ast.comprehension) or loop.target is not store:
            return False
        owner = _parameters_owner(loop.iter)
        if owner is None or flow.is_parameter(scope, owner) or not flow.bindings(scope, owner, ctx):
            return False
        if not isinstance(ctx.value(loop.iter), InstanceValue):
            return False
    return True


def _parameters_owner(expr: ast.expr) -> str | None:
    """``model`` for ``model.parameters()``."""
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "parameters"
        and isinstance(expr.func.value, ast.Name)
    ):
        return expr.func.value.id
    return None


def _gradient_switched_off(name: str, kind: str, scope: control_flow.Scope, node: ast.AST, ctx: Context) -> bool:
    """The code may turn ``requires_grad`` off: on this tensor, or (for parameters) on anything in this scope or
    in what the model is handed to."""
    owners = {name}
    if kind == "parameter":
        for store in flow.bindings(scope, name, ctx):
            loop = flow.parent(store, ctx)
            if isinstance(loop, ast.For | ast.comprehension):
                owners.add(_parameters_owner(loop.iter) or name)
    for shared in flow.scopes_sharing(scope, name):
        for inner in control_flow.scope_nodes(shared):
            if kind == "parameter" and _switches_off(inner, ctx):
                return True
            if kind == "tensor" and _switches_off(inner, ctx) and flow.root_name(inner) == name:
                return True
            if (
                kind == "parameter"
                and isinstance(inner, ast.Call)
                and any(
                    isinstance(a, ast.Name) and a.id in owners
                    for a in [*inner.args, *(k.value for k in inner.keywords)]
                )
            ):
                return True  # the model goes somewhere that may freeze it
    return False


def _switches_off(node: ast.AST, ctx: Context) -> bool:
    """``x.requires_grad = False`` (anything but True), ``x.requires_grad_(False)``, ``x.detach_()``."""
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr == "requires_grad" and isinstance(node.ctx, ast.Store):
        statement = flow.parent(node, ctx)
        value = getattr(statement, "value", None)
        return not (isinstance(value, ast.Constant) and value.value is True)
    call = flow.parent(node, ctx)
    if not (isinstance(call, ast.Call) and call.func is node):
        return False
    if node.attr == "detach_":
        return True
    if node.attr == "requires_grad_":
        values = [*call.args, *(k.value for k in call.keywords)]
        return bool(values) and not (isinstance(values[0], ast.Constant) and values[0].value is True)
    return False


def _called_without_grad(function: control_flow.Scope, ctx: Context) -> bool:
    """The file uses this function (calls it, or hands it on) where grad may be off: its body may run without grad."""
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        return True
    for node in ast.walk(ctx.tree):
        used = (isinstance(node, ast.Name) and node.id == function.name and isinstance(node.ctx, ast.Load)) or (
            isinstance(node, ast.Attribute) and node.attr == function.name and isinstance(node.ctx, ast.Load)
        )
        if used and flow.grad_mode(node, ctx) not in (flow.ENABLED, flow.CALLER):
            return True
    return False
