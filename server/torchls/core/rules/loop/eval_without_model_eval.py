from __future__ import annotations

import ast

from torchls.core import control_flow
from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow, modules
from torchls.core.values import ModuleValue, Origin

# Methods that return the model itself: ``model = model.to(device)`` keeps what the model is.
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train", "requires_grad_"})
# Calls that may receive the model without touching its mode.
_HARMLESS_CALLEES = frozenset({"print", "len", "str", "repr", "isinstance", "id", "type", "sum", "hasattr", "getattr"})
# Uses of a model's output that only look at its shape: a smoke test, not an evaluation.
_SHAPE_ONLY = frozenset({"shape", "size", "dtype", "device", "ndim", "dim", "numel"})
# Methods whose result's shape follows from their input's: ``model(x).flatten(1).shape[1]`` is still a shape probe.
_RESHAPING = frozenset(
    "flatten view reshape squeeze unsqueeze permute transpose contiguous detach cpu float to".split()
)


class EvalWithoutModelEval(Rule):
    """在 `torch.no_grad()` / `inference_mode()` 里评估含 Dropout 或 BatchNorm 的模型，却从没调用 `model.eval()`。

    **为什么是问题**：`no_grad` 只关闭梯度记录，不会切换层的行为。模型仍处于训练模式时，Dropout 继续随机
    丢弃激活，BatchNorm 用当前 batch 的统计量并更新滑动均值：同一个输入两次预测结果不同，验证指标偏低，
    batch 为 1 时还可能直接报错。只在模型是在同一个函数（或脚本）里创建、确实含有 Dropout/BatchNorm
    （`nn.Sequential` 的内容、本文件里模型类的 `__init__`、torchvision 的分类/分割模型）、训练过或加载了
    权重（`load_state_dict`、优化器、`backward()`、预训练权重），且这里从没有对它调用 `.eval()` /
    `.train(False)`、也没有把它交给别的函数时才报告；作为参数传进来的模型可能已由调用方切换过，只看输出
    形状的冒烟测试也不算评估，都不报告。

    **示例**
    ```python
    model = nn.Sequential(nn.Linear(16, 32), nn.Dropout(0.5), nn.Linear(32, 2))
    ...  # 训练
    with torch.no_grad():
        preds = model(x_val).argmax(dim=1)
    ```

    **改正**：评估前调用 `model.eval()`，回到训练前再调用 `model.train()`。

    **自动修复**：无：切回训练模式的位置要由作者决定。
    """

    code = "TL403"
    requires_text = ("no_grad", "inference_mode")
    name = "eval-without-model-eval"
    severity = Severity.WARNING
    kb_entry = "torch.nn.Module.eval"
    node_types = (ast.Call,)

    def __init__(self) -> None:
        self._reported: set[tuple[int, str]] = set()  # (id of the scope, model name): reported once per scope

    def visit(self, node: ast.Call, ctx: Context) -> None:
        if not isinstance(node.func, ast.Name) or ctx.grad_enabled:
            return
        # Under no_grad here, or in a method evaluated for a call made under no_grad (a Lightning-style
        # ``validation_step`` that calls ``self(x)``, run by a loop inside ``with torch.no_grad()``).
        if flow.grad_mode(node, ctx) != flow.DISABLED and ctx.call_site is None:
            return
        if not flow.file_mentions(ctx, "no_grad", "inference_mode", "set_grad_enabled"):
            return
        if not isinstance(ctx.value(node.func), ModuleValue) and not flow.file_mentions(ctx, "torchvision"):
            return
        name = node.func.id
        scope = flow.scope_of(node, ctx)
        reported = self._reported
        if (id(scope), name) in reported or _only_shape_used(node, ctx) or _part_of_training_step(node, ctx):
            return
        if flow.is_parameter(scope, name):
            layers = _given_in_train_mode(node, ctx)
            trained = flow.file_mentions(ctx, "backward")  # the file trains the model it hands to this function
        else:
            layers = _model_layers(scope, name, node, ctx)
            trained = bool(layers) and _has_weights(scope, name, ctx)
        if not layers or _mode_may_change(scope, name, ctx) or not trained:
            return
        reported.add((id(scope), name))
        kinds = sorted({kind for kind, _ in layers})
        shown = "、".join(f"`{k}`" for k in kinds[:3])
        message = f"在无梯度模式下调用 `{name}` 做推理，但从没调用 `{name}.eval()`：其中的 {shown} 仍按训练模式工作"
        if name == "self":
            message = (
                f"这个方法在无梯度模式下被调用来推理，模型（`self`）却还在训练模式：调用方没有先调用 `.eval()`，"
                f"其中的 {shown} 仍按训练模式工作"
            )
        elif flow.is_parameter(scope, name):
            message = (
                f"传进来的 `{name}` 还在训练模式（调用方没有把它切换到 eval 模式），这里在无梯度模式下用它推理，"
                f"却没有先 `{name}.eval()`：其中的 {shown} 仍按训练模式工作"
            )
        origin = next((o for _, o in layers if o is not None), None)
        ctx.report(node, message, related=ctx.related(origin))


def _given_in_train_mode(node: ast.Call, ctx: Context) -> list[tuple[str, Origin | None]]:
    """A model passed in as a parameter, evaluated for one call (``validate(model, loader)``) whose caller
    provably left it in train mode: its mode-dependent layers."""
    model = ctx.value(node.func)
    if ctx.call_site is None or not isinstance(model, ModuleValue) or model.training is not True:
        return []
    return [(modules.short(layer), layer.origin) for layer in modules.mode_dependent_layers(model, ctx)]


def _model_layers(
    scope: control_flow.Scope, name: str, node: ast.Call, ctx: Context
) -> list[tuple[str, Origin | None]]:
    """(kind, where it was built) for the mode-dependent layers of the model ``name`` holds, when every binding
    of ``name`` in ``scope`` builds such a model."""
    if flow.is_parameter(scope, name):
        return []
    stores = flow.bindings(scope, name, ctx)
    if not stores or any(control_flow.position(s) > control_flow.position(node) for s in stores):
        return []
    found: list[tuple[str, Origin | None]] = []
    for store in stores:
        value = flow.simple_assignment(store, ctx)
        if value is None:
            return []
        while (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in _SELF_RETURNING
            and ctx.qualify(value.func) is None
        ):
            if isinstance(value.func.value, ast.Name) and value.func.value.id == name:
                value = None  # model = model.to(device)
                break
            value = value.func.value
        if value is None:
            continue
        builder = modules.torchvision_builder(value, ctx)
        if builder is not None:
            found.append(("Dropout/BatchNorm", Origin(value, f"`{builder}` 含有 Dropout 或 BatchNorm")))
            continue
        layers = modules.mode_dependent_layers(ctx.value(value), ctx)
        if not layers:
            return []
        found.extend((modules.short(layer), layer.origin) for layer in layers)
    return found


def _mode_may_change(scope: control_flow.Scope, name: str, ctx: Context) -> bool:
    """True when any code that sees this model may put it into eval mode, or the scope hands it elsewhere."""
    for node in (n for shared in flow.scopes_sharing(scope, name, ctx) for n in control_flow.scope_nodes(shared)):
        if isinstance(node, ast.Attribute) and flow.root_name(node) == name:
            if node.attr in ("eval", "apply", "modules", "children", "named_modules", "named_children"):
                return True
            if node.attr == "train":
                call = flow.parent(node, ctx)
                if not (isinstance(call, ast.Call) and call.func is node and _sets_training(call)):
                    return True
    for node in control_flow.scope_nodes(scope):
        if (
            isinstance(node, ast.Call)
            and any(_is_name(a, name) for a in _arguments(node))
            and not _harmless_callee(node, ctx)
        ):
            return True
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            holder = flow.parent(node, ctx)
            if isinstance(holder, ast.List | ast.Tuple | ast.Dict | ast.Set | ast.Return | ast.Yield):
                return True
            if isinstance(holder, ast.Assign) and holder.value is node:
                return True  # an alias: whatever happens to it happens to the model
    return False


def _has_weights(scope: control_flow.Scope, name: str, ctx: Context) -> bool:
    """The model is trained or loaded here (so the no_grad call evaluates it), not a fresh model in a smoke test:
    ``load_state_dict``, an optimizer over its parameters, a ``backward()``, or pretrained torchvision weights."""
    for shared in flow.scopes_sharing(scope, name):
        for node in control_flow.scope_nodes(shared):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("backward", "manual_backward") and shared is scope:
                return True
            if isinstance(func, ast.Attribute) and func.attr == "load_state_dict" and flow.root_name(func) == name:
                return True
            qualname = ctx.qualify(func) or ""
            if qualname.startswith("torch.optim.") and any(flow.root_name(a) == name for a in _arguments(node)):
                return True
    for store in flow.bindings(scope, name, ctx):
        value = flow.simple_assignment(store, ctx)
        while (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _SELF_RETURNING
        ):
            value = value.func.value
        if (
            isinstance(value, ast.Call)
            and modules.torchvision_builder(value, ctx) is not None
            and any(
                k.arg in ("weights", "pretrained")
                and not (isinstance(k.value, ast.Constant) and k.value.value in (None, False))
                for k in value.keywords
            )
        ):
            return True  # pretrained weights
    return False


def _part_of_training_step(node: ast.Call, ctx: Context) -> bool:
    """The loop around the call also back-propagates in the same step: a no-grad forward inside training
    (pseudo-labels, targets), where train mode may well be intended, not an evaluation."""
    loop = flow.enclosing_loop(node, ctx)
    if loop is None:
        return False
    for inner in control_flow.walk_scope(loop):
        if (
            isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Attribute)
            and inner.func.attr in ("backward", "manual_backward")
            and flow.enclosing_loop(inner, ctx) is loop
        ):
            return True
    return False


def _sets_training(call: ast.Call) -> bool:
    """``model.train()`` or ``model.train(True)``: switches to training mode, not away from it."""
    if not call.args and not call.keywords:
        return True
    values = [*call.args, *(k.value for k in call.keywords)]
    return len(values) == 1 and isinstance(values[0], ast.Constant) and values[0].value is True


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [a.value if isinstance(a, ast.Starred) else a for a in call.args] + [k.value for k in call.keywords]


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _harmless_callee(call: ast.Call, ctx: Context) -> bool:
    if isinstance(call.func, ast.Name) and call.func.id in _HARMLESS_CALLEES:
        return True
    qualname = ctx.qualify(call.func) or ""
    return qualname.startswith("torch.") and not qualname.startswith("torch.nn.")


def _only_shape_used(node: ast.Call, ctx: Context) -> bool:
    """The output is thrown away or only its shape is looked at: a smoke test or a warm-up, not an evaluation."""
    node = _after_reshapes(node, ctx)
    up = flow.parent(node, ctx)
    if isinstance(up, ast.Expr):
        return True
    if isinstance(up, ast.Attribute):
        return up.attr in _SHAPE_ONLY
    if isinstance(up, ast.Assign) and up.value is node and len(up.targets) == 1:
        target = up.targets[0]
        if isinstance(target, ast.Name):
            loads = flow.name_loads(flow.scope_of(node, ctx), ctx).get(target.id, ())
            return all(_shape_use(n, ctx) for n in loads)
    return False


def _after_reshapes(node: ast.expr, ctx: Context) -> ast.expr:
    """The outermost of ``node.flatten(1).view(...)``-style calls that only rearrange ``node``."""
    while True:
        up = flow.parent(node, ctx)
        call = flow.parent(up, ctx) if isinstance(up, ast.Attribute) and up.attr in _RESHAPING else None
        if not (isinstance(call, ast.Call) and call.func is up):
            return node
        node = call


def _shape_use(node: ast.Name, ctx: Context) -> bool:
    node = _after_reshapes(node, ctx)
    up = flow.parent(node, ctx)
    if isinstance(up, ast.Attribute) and up.attr in _SHAPE_ONLY:
        return True
    return isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id == "len"
