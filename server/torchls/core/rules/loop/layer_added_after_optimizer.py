from __future__ import annotations

import ast
from dataclasses import dataclass, field

from torchls.core import control_flow
from torchls.core.findings import Related, Severity
from torchls.core.rules.base import Analysis, Context, Rule
from torchls.core.rules.loop import flow, optimizers
from torchls.core.rules.loop.modules import LAYERS_WITH_STATE, _self_attributes_read, classes, is_module_class, short
from torchls.core.values import ModuleValue

# The head attribute of torchvision's model families: what fine-tuning code replaces.
_TORCHVISION_HEADS = (
    (("resnet", "resnext", "wide_resnet", "googlenet", "inception", "shufflenet", "regnet"), "fc"),
    (
        ("vgg", "alexnet", "densenet", "mobilenet", "efficientnet", "squeezenet", "mnasnet", "convnext"),
        "classifier",
    ),
    (("deeplabv3", "fcn_", "lraspp"), "classifier"),
    (("vit_",), "heads"),
    (("swin_", "maxvit"), "head"),
)


class LayerAddedAfterOptimizer(Rule):
    """优化器已经用 `model.parameters()` 建好之后，才给模型换上（或加上）新层：新层的参数不在优化器里。

    **为什么是问题**：优化器在创建时就把当时的参数列表存了下来。之后再写 `model.fc = nn.Linear(...)`，新层的
    参数是新建的张量，优化器并不知道它们：`optimizer.step()` 只更新原来那些参数（被换下的旧层已经不在模型里），
    新层一直停在随机初始化，微调时最常见的表现是准确率停在随机水平，且不报错。只在同一个函数里先创建优化器、
    后把一个新建的带参数的层赋给模型里确实被使用的属性（自定义模型 `forward` 里用到的层、torchvision 模型的
    分类头、`nn.Sequential` 的某一层；也包括调用模型类里无条件换层的方法，如 `model.reset_classifier(3)`），
    之后还用同一个优化器训练（`step()`，或交给本文件里会 `step()` 的函数），
    其间没有重建优化器、没有 `add_param_group`、也没有改 `requires_grad` 时才报告。优化器也可以由本文件里
    返回 `torch.optim.X(...)` 的函数（如 `make_optimizer(model)`）创建。

    **示例**
    ```python
    model = torchvision.models.resnet18(weights="DEFAULT")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    model.fc = nn.Linear(model.fc.in_features, 10)
    train(model, loader, optimizer)
    ```

    **改正**：先换层，再创建优化器：
    ```python
    model = torchvision.models.resnet18(weights="DEFAULT")
    model.fc = nn.Linear(model.fc.in_features, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    train(model, loader, optimizer)
    ```

    **自动修复**：不提供：要把优化器的创建挪到换层之后，位置由作者决定。
    """

    code = "TL415"
    requires_text = ("optim",)
    name = "layer-added-after-optimizer"
    severity = Severity.ERROR
    kb_entry = "torch.nn.Module.parameters"
    node_types = (ast.Assign, ast.Call)

    def visit(self, node: ast.Assign | ast.Call, ctx: Context) -> None:
        if isinstance(node, ast.Call):
            self._method_call(node, ctx)
            return
        if len(node.targets) != 1 or not isinstance(node.value, ast.Call):
            return
        target = node.targets[0]
        if not isinstance(target, ast.Attribute | ast.Subscript):
            return
        path = _path(target)
        if path is None:
            return
        root, steps = path
        if not _fresh_layer(node.value, ctx):
            return
        found = self._untrained(node, root, steps, ctx.text(target), ctx)
        if found is None:
            return
        name, built = found
        target_text = ctx.text(target)
        message = (
            f"`{target_text}` 在优化器 `{name}` 创建之后才换成新层：新层的参数不在 `{name}` 里，训练时永远不会被更新"
        )
        related = [Related(ctx.span(built), f"`{name}` 在这里用当时的参数创建")]
        ctx.report(target, message, related=related)

    def _method_call(self, node: ast.Call, ctx: Context) -> None:
        """``model.reset_classifier(3)``: a method of the model's class that puts a new layer on ``self``."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id != "self"):
            return
        replaced = _replaced_by_method(func.value, func.attr, ctx)
        if replaced is None:
            return
        assignment, attribute = replaced
        target_text = f"{func.value.id}.{attribute}"
        found = self._untrained(node, func.value, [attribute], target_text, ctx)
        if found is None:
            return
        name, built = found
        message = (
            f"`{ctx.text(func)}(...)` 在优化器 `{name}` 创建之后才把 `{target_text}` 换成新层：新层的参数不在 "
            f"`{name}` 里，训练时永远不会被更新"
        )
        related = [
            Related(ctx.span(built), f"`{name}` 在这里用当时的参数创建"),
            Related(ctx.span(assignment), f"`{func.attr}` 在这里换上新层"),
        ]
        ctx.report(node, message, related=related)

    def _untrained(
        self, node: ast.AST, root: ast.Name, steps: list[str | int], target_text: str, ctx: Context
    ) -> tuple[str, ast.Call] | None:
        """The optimizer built before ``node`` from parameters that cover the replaced layer, and still used to
        train after it with nothing in between that rebuilds it or edits its groups."""
        scope = flow.scope_of(node, ctx)
        if not _used_by_model(root, steps, node, scope, ctx):
            return None
        found = _optimizer_before(node, scope, ctx)
        if found is None:
            return None
        name, built = found
        if flow.file_mentions(ctx, "add_param_group") and _hands_to_group_adder(scope, name, ctx):
            return None
        sources = optimizers.parameter_sources(built, ctx)
        if not sources or not any(_covers(ctx.text(s), target_text) and flow.root_name(s) == root.id for s in sources):
            return None
        if any(
            control_flow.position(built) < control_flow.position(b) < control_flow.position(node)
            for b in flow.bindings(scope, root.id, ctx)
        ):
            return None  # the model was rebound in between: the optimizer holds another object's parameters
        later = [
            n for n in control_flow.scope_nodes(scope) if control_flow.position(n) > control_flow.end_position(node)
        ]
        if any(_touches_trainability(n) for n in later):
            return None
        if not any(isinstance(n, ast.Call) and _trains_with(n, name, ctx) for n in later):
            return None
        return name, built


def _fresh_layer(value: ast.Call, ctx: Context) -> bool:
    """``value`` builds a new layer that owns trainable parameters."""
    layer = ctx.value(value)
    return (
        isinstance(layer, ModuleValue)
        and layer.origin is not None
        and layer.origin.node is value
        and _has_parameters(layer, ctx)
    )


def _replaced_by_method(model: ast.Name, method: str, ctx: Context) -> tuple[ast.Assign, str] | None:
    """The statement of the model class's ``method`` that surely puts a new layer with parameters on
    ``self.<attribute>`` (a statement of the method's own body, not under a branch), and that attribute; None
    when the method also freezes or unfreezes parameters or edits an optimizer."""
    value = ctx.value(model)
    if not isinstance(value, ModuleValue) or value.user_class is None:
        return None
    info = classes(ctx).get(value.user_class)
    if info is None:
        return None
    definition = next((k.methods[method] for k in info.chain() if method in k.methods), None)
    if definition is None or method == "__init__":
        return None
    if any(_touches_trainability(n) for n in ast.walk(definition)):
        return None
    for statement in definition.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        target = statement.targets[0]
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and isinstance(statement.value, ast.Call)
            and _fresh_layer(statement.value, ctx)
        ):
            return statement, target.attr
    return None


def _path(target: ast.expr) -> tuple[ast.Name, list[str | int]] | None:
    """``model``, ["classifier", 6] for ``model.classifier[6]``; None for anything but names, attributes and
    constant integer indexes."""
    steps: list[str | int] = []
    current: ast.expr = target
    while True:
        if isinstance(current, ast.Attribute):
            steps.append(current.attr)
            current = current.value
        elif isinstance(current, ast.Subscript):
            index = current.slice
            if not (isinstance(index, ast.Constant) and isinstance(index.value, int)):
                if not (
                    isinstance(index, ast.UnaryOp)
                    and isinstance(index.op, ast.USub)
                    and isinstance(index.operand, ast.Constant)
                    and isinstance(index.operand.value, int)
                ):
                    return None
                steps.append(-index.operand.value)
            else:
                steps.append(index.value)
            current = current.value
        elif isinstance(current, ast.Name):
            if current.id == "self":
                return None  # building a model in its own methods: layers are added on purpose
            return current, steps[::-1]
        else:
            return None


def _has_parameters(module: ModuleValue, ctx: Context, depth: int = 0) -> bool:
    """A layer that owns trainable parameters: a torch layer with weights, a Sequential holding one, or the
    file's own module class whose ``__init__`` builds one."""
    if depth > 3:
        return False
    if module.user_class is not None:
        info = classes(ctx).get(module.user_class)
        if info is None or not is_module_class(info, ctx):
            return False
        for klass in info.chain():
            for value in klass.attributes.values():
                if isinstance(value, ModuleValue) and _has_parameters(value, ctx, depth + 1):
                    return True
        return False
    if not module.qualname.startswith("torch.nn."):
        return False
    name = short(module)
    if name in ("Sequential", "ModuleList"):
        return any(isinstance(c, ModuleValue) and _has_parameters(c, ctx, depth + 1) for c in module.children)
    if name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm"):
        affine = module.arg("affine", True) if name != "LayerNorm" else module.arg("elementwise_affine", True)
        return affine is not False
    return name in LAYERS_WITH_STATE


def _used_by_model(
    root: ast.Name, steps: list[str | int], node: ast.AST, scope: control_flow.Scope, ctx: Context
) -> bool:
    """The assignment replaces a layer the model really runs: an attribute its ``forward`` reads, a layer of an
    ``nn.Sequential``, or the head of a torchvision model."""
    if not steps:
        return False
    model = ctx.value(root)
    first = steps[0]
    if isinstance(model, ModuleValue):
        if model.user_class is not None and isinstance(first, str) and len(steps) == 1:
            info = classes(ctx).get(model.user_class)
            if info is None or not is_module_class(info, ctx):
                return False
            family = info.chain()
            methods = [m for k in family for m in k.node.body if isinstance(m, ast.FunctionDef)]
            built = any(isinstance(k.attributes.get(first), ModuleValue) for k in family)  # by __init__
            return built and first in _self_attributes_read(methods)
        if short(model) == "Sequential" and model.qualname.startswith("torch.nn.") and len(steps) == 1:
            count = len(model.children)
            return isinstance(first, int) and -count <= first < count
        return False
    builder = _torchvision_model(root, node, scope, ctx)
    if builder is None or not isinstance(first, str):
        return False
    return any(builder.startswith(prefixes) and first == head for prefixes, head in _TORCHVISION_HEADS)


def _torchvision_model(root: ast.Name, node: ast.AST, scope: control_flow.Scope, ctx: Context) -> str | None:
    """The torchvision builder (``resnet18``) whose result ``root`` holds at ``node``, when that is certain."""
    reaching = flow.reaching_bindings(root.id, node, ctx)
    if reaching is None or len(reaching) != 1:
        return None
    value = flow.simple_assignment(reaching[0], ctx)
    if not isinstance(value, ast.Call):
        return None
    qualname = ctx.qualify(value.func) or ""
    if not qualname.startswith("torchvision.models."):
        return None
    return qualname.rsplit(".", 1)[-1]


def _optimizer_before(node: ast.Assign, scope: control_flow.Scope, ctx: Context) -> tuple[str, ast.Call] | None:
    """The optimizer built (``name = torch.optim.X(...)``) in this scope before ``node``, surely run before it,
    and never rebound afterwards."""
    candidates = []
    for statement in control_flow.scope_nodes(scope):
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, ast.Call)
            and control_flow.position(statement) < control_flow.position(node)
            and optimizers.is_optimizer(ctx.value(statement.value))
        ):
            candidates.append(statement)
    for statement in sorted(candidates, key=control_flow.position, reverse=True):
        name = statement.targets[0].id  # type: ignore[attr-defined]
        if not control_flow.dominates(statement, node, ctx.parents()) or flow.is_parameter(scope, name):
            continue
        others = [b for b in flow.bindings(scope, name, ctx) if b is not statement.targets[0]]
        if any(control_flow.position(b) > control_flow.position(statement) for b in others):
            continue
        if flow.enclosing_loop(statement, ctx) is not None and flow.enclosing_loop(
            node, ctx
        ) is not flow.enclosing_loop(statement, ctx):
            continue
        return name, statement.value  # type: ignore[return-value]
    return None


def _hands_to_group_adder(scope: control_flow.Scope, optimizer: str, ctx: Context) -> bool:
    """The optimizer goes to a function of this file that calls ``add_param_group`` (it may add the new layer)."""
    adders = ctx.analysis(_GroupAdders).names
    return any(
        optimizers.called_name(n) in adders and optimizers.passes(n, {optimizer}) for n in flow.scope_calls(scope, ctx)
    )


@dataclass(slots=True)
class _GroupAdders(Analysis):
    """The file's functions that call ``add_param_group``."""

    names: set[str] = field(default_factory=set)

    @classmethod
    def compute(cls, ctx: Context) -> _GroupAdders:
        return cls(
            {
                f.name
                for f in ast.walk(ctx.tree)
                if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                and any(isinstance(n, ast.Attribute) and n.attr == "add_param_group" for n in ast.walk(f))
            }
        )


def _covers(source: str, target: str) -> bool:
    """The layer at ``target`` lies inside the module ``source`` the optimizer took parameters from."""
    return target == source or target.startswith((source + ".", source + "["))


def _touches_trainability(node: ast.AST) -> bool:
    """Later code that freezes or unfreezes parameters, or edits the optimizer's parameter groups."""
    if isinstance(node, ast.Attribute) and node.attr in ("requires_grad", "requires_grad_", "param_groups"):
        return True
    return isinstance(node, ast.Attribute) and node.attr == "add_param_group"


def _trains_with(call: ast.Call, optimizer: str, ctx: Context) -> bool:
    """``optimizer.step()``, ``scaler.step(optimizer)``, or the optimizer handed to a function of this file that
    steps it."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "step":
        if isinstance(func.value, ast.Name) and func.value.id == optimizer:
            return True
        if len(call.args) == 1 and isinstance(call.args[0], ast.Name) and call.args[0].id == optimizer:
            return True
    stepping, _ = optimizers.stepping_and_zeroing_functions(ctx)
    name = optimizers.called_name(call)
    arguments = [*call.args, *(k.value for k in call.keywords)]
    return (
        name in stepping
        and not (ctx.qualify(func) or "").startswith("torch.")
        and any(isinstance(a, ast.Name) and a.id == optimizer for a in arguments)
    )
