from __future__ import annotations

import ast
from dataclasses import dataclass, field

from torchls.core import control_flow
from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow, modules
from torchls.core.statements import nested_statements
from torchls.core.values import ModuleValue

# Names a ModuleDict key may not take: attributes every nn.Module (and ModuleDict) already has.
_MODULE_ATTRIBUTES = frozenset(
    """T_destination add_module apply bfloat16 buffers call_super_init children clear compile cpu cuda double
    dump_patches eval extra_repr float forward get_buffer get_extra_state get_parameter get_submodule half ipu items
    keys load_state_dict modules mtia named_buffers named_children named_modules named_parameters parameters pop
    register_backward_hook register_buffer register_forward_hook register_forward_pre_hook
    register_full_backward_hook register_full_backward_pre_hook register_load_state_dict_post_hook
    register_load_state_dict_pre_hook register_module register_parameter register_state_dict_post_hook
    register_state_dict_pre_hook requires_grad_ set_extra_state set_submodule share_memory state_dict to to_empty
    train type update values xpu zero_grad training""".split()
)
# What ModuleList / ModuleDict do exactly as list / dict do (uses that keep the fix safe).
_LIST_METHODS = frozenset({"append", "extend", "insert", "pop"})
_DICT_METHODS = frozenset({"items", "keys", "values", "pop", "update", "clear"})
_BUILTINS_THAT_ITERATE = frozenset({"len", "enumerate", "zip", "reversed", "iter", "list", "tuple"})
# A class that overrides these collects its parameters or moves its layers itself.
_REGISTRY_OVERRIDES = frozenset(
    {"parameters", "named_parameters", "children", "named_children", "modules", "named_modules", "_apply", "to"}
)
_REGISTERING_CALLS = frozenset({"add_module", "register_module", "register_parameter", "register_buffer"})


@dataclass
class _Container:
    attribute: str
    target: ast.Attribute
    value: ast.expr
    kind: str  # "list" or "dict"
    elements: list[ast.expr] = field(default_factory=list)  # every layer put in (a display item, an append)
    keys: list[ast.expr | None] = field(default_factory=list)  # dict keys (None: not a plain string)
    safe_uses: bool = True  # every use works the same on ModuleList / ModuleDict
    handed_over: bool = False  # passed somewhere that may register its layers


class LayersInPlainContainer(Rule):
    """`nn.Module` 里用普通 `list` / `dict` 保存子层，而不是 `nn.ModuleList` / `nn.ModuleDict`。

    **为什么是问题**：`nn.Module` 只会注册直接赋给属性的模块、`nn.ModuleList`/`nn.ModuleDict` 里的模块。
    放在普通 list / dict 里的层不会出现在 `model.parameters()` 里：优化器拿不到它们（训练时纹丝不动），
    `model.to(device)` 不会移动它们（常见报错是设备不一致），`state_dict()` 里也没有它们，`model.eval()`
    也管不到其中的 Dropout/BatchNorm。只在列表/字典里确实放进了有参数或有训练/评估差异的层、且这个
    容器没有交给别处（如 `nn.Sequential(*self.layers)`、`add_module`）时才报告。

    **示例**
    ```python
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(16, 16) for _ in range(3)]
    ```

    **改正**：`self.layers = nn.ModuleList([nn.Linear(16, 16) for _ in range(3)])`；字典用 `nn.ModuleDict({...})`。

    **自动修复**：安全：放进去的全都是模块、字典的键都是合法的字符串常量、这个属性只被迭代、取下标、
    `len()`、`append`/`extend`/`insert`（字典：`items`/`keys`/`values`/`update`）这样使用时，把容器包成
    `nn.ModuleList(...)` / `nn.ModuleDict(...)`（用文件自己的 `nn` 写法）；这些用法在两者上行为一致。
    """

    code = "TL404"
    name = "layers-in-plain-container"
    severity = Severity.ERROR
    kb_entry = "torch.nn.ModuleList"
    node_types = (ast.ClassDef,)
    fixable = True

    def visit(self, node: ast.ClassDef, ctx: Context) -> None:
        info = modules.classes(ctx).get(node.name)
        if info is None or info.node is not node or not modules.is_module_class(info, ctx):
            return
        methods = [m for m in node.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)]
        if any(m.name in _REGISTRY_OVERRIDES for m in methods):
            return
        containers = _containers(methods)  # first: most classes have none, and this is the cheaper walk
        if not containers or any(_registers_by_hand(m) for m in methods):
            return
        for method in methods:
            me = _self_name(method)
            if me is None:
                continue
            for inner in control_flow.scope_nodes(method):
                if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id == me:
                    container = containers.get(inner.attr)
                    if container is not None and inner is not container.target:
                        _use(container, inner, ctx)
        for container in containers.values():
            self._check(container, ctx)

    def _check(self, container: _Container, ctx: Context) -> None:
        if container.handed_over:
            return
        fresh = [e for e in container.elements if isinstance(e, ast.Call | ast.Name)]  # not self.conv1: registered
        layers = sorted((e for e in fresh if _needs_registration(ctx.value(e), ctx)), key=control_flow.position)
        if not layers or any(isinstance(e, ast.Name) and not _only_put_here(e, ctx) for e in layers):
            return
        alias = ctx.module_alias("torch.nn")
        wrapper = "ModuleList" if container.kind == "list" else "ModuleDict"
        fix = None
        if (
            container.safe_uses
            and _after_module_init(container.target, ctx)
            and all(isinstance(ctx.value(e), ModuleValue) for e in container.elements)
            and all(_valid_key(k) for k in container.keys)
        ):
            value = container.value
            inner = "" if _is_empty(value) else ctx.text(value)
            fix = Fix(f"改用 `{alias}.{wrapper}`", (ctx.replace(value, f"{alias}.{wrapper}({inner})"),))
        first = ctx.value(layers[0])
        shown = first.user_class or modules.short(first) if isinstance(first, ModuleValue) else "层"
        message = (
            f"`self.{container.attribute}` 是普通 {container.kind}，其中的 `{shown}` 不会注册为子模块："
            "参数不会被训练，也不会随 `.to()` 移动或存进 `state_dict`"
        )
        ctx.report(container.target, message, fix=fix)


def _self_name(method: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    if any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in method.decorator_list):
        return None
    arguments = [*method.args.posonlyargs, *method.args.args]
    return arguments[0].arg if arguments else None


def _registers_by_hand(method: ast.AST) -> bool:
    """``self.add_module(...)``, ``setattr(self, ...)``: the class registers layers itself."""
    for node in ast.walk(method):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in _REGISTERING_CALLS:
                return True
            if isinstance(node.func, ast.Name) and node.func.id == "setattr":
                return True
    return False


def _containers(methods: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> dict[str, _Container]:
    """Attributes assigned exactly once in the class, to a list or dict display (or ``list()`` / ``dict()``)."""
    assigned: dict[str, list[tuple[ast.Attribute, ast.expr | None]]] = {}
    for method in methods:
        me = _self_name(method)
        # Only statements assign attributes (a walrus binds names only); nested functions are their own scope.
        for node in nested_statements(method, into_definitions=False):
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign):
                targets, value = [node.target], node.value
            elif isinstance(node, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith | ast.NamedExpr):
                targets = [n for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)]
            for target in targets:
                for part in ast.walk(target):
                    if (
                        isinstance(part, ast.Attribute)
                        and isinstance(part.ctx, ast.Store)
                        and isinstance(part.value, ast.Name)
                        and part.value.id == me
                    ):
                        assigned.setdefault(part.attr, []).append((part, _part_value(part, target, value)))
    found = {}
    for attribute, places in assigned.items():
        if len(places) != 1:
            continue
        target, value = places[0]
        container = _container(attribute, target, value)
        if container is not None:
            found[attribute] = container
    return found


def _part_value(part: ast.Attribute, target: ast.expr, value: ast.expr | None) -> ast.expr | None:
    """What ``part`` of an assignment's target is given: the whole value, or the matching element of a tuple
    display (``self.down, self.up = [], []``)."""
    if part is target:
        return value
    if (
        isinstance(target, ast.Tuple | ast.List)
        and isinstance(value, ast.Tuple | ast.List)
        and len(target.elts) == len(value.elts)
        and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
    ):
        for element, given in zip(target.elts, value.elts, strict=True):
            if element is part:
                return given
    return None


def _container(attribute: str, target: ast.Attribute, value: ast.expr | None) -> _Container | None:
    if isinstance(value, ast.List):
        return _Container(attribute, target, value, "list", list(value.elts))
    if isinstance(value, ast.ListComp):
        return _Container(attribute, target, value, "list", [value.elt])
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        for side in (value.left, value.right):
            if isinstance(side, ast.List):
                return _Container(attribute, target, value, "list", list(side.elts))
        return None
    if isinstance(value, ast.Dict):
        if any(k is None for k in value.keys):
            return None  # {**other}
        return _Container(attribute, target, value, "dict", list(value.values), list(value.keys))
    if isinstance(value, ast.DictComp):
        return _Container(attribute, target, value, "dict", [value.value], [None])
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and not value.args and not value.keywords:
        if value.func.id == "list":
            return _Container(attribute, target, value, "list")
        if value.func.id == "dict":
            return _Container(attribute, target, value, "dict")
    return None


def _use(container: _Container, node: ast.Attribute, ctx: Context) -> None:
    """Record one use of ``self.<container>``: a layer put in, a harmless read, or a hand-over."""
    up = flow.parent(node, ctx)
    methods = _LIST_METHODS if container.kind == "list" else _DICT_METHODS
    if isinstance(up, ast.Attribute) and up.value is node:
        call = flow.parent(up, ctx)
        if not (isinstance(call, ast.Call) and call.func is up):
            container.safe_uses = False
            return
        if up.attr == "append" and len(call.args) == 1 and container.kind == "list":
            container.elements.append(call.args[0])
        elif up.attr == "insert" and len(call.args) == 2 and container.kind == "list":
            container.elements.append(call.args[1])
        elif up.attr in ("extend", "update"):
            _put_many(container, call.args[0] if len(call.args) == 1 and not call.keywords else None)
        if up.attr not in methods:
            container.safe_uses = False
        return
    if isinstance(up, ast.Subscript) and up.value is node:
        holder = flow.parent(up, ctx)
        if isinstance(up.ctx, ast.Store) and isinstance(holder, ast.Assign):
            container.elements.append(holder.value)
            key = up.slice
            container.keys.append(key if container.kind == "dict" else None)
            if container.kind == "list":
                container.safe_uses = False
        elif isinstance(up.ctx, ast.Store | ast.Del):
            container.safe_uses = False
        return
    if isinstance(up, ast.AugAssign) and up.target is node:
        _put_many(container, up.value)
        return
    if isinstance(up, ast.For | ast.AsyncFor | ast.comprehension) and up.iter is node:
        return
    if isinstance(up, ast.Compare) and any(c is node for c in up.comparators):
        return
    if isinstance(up, ast.Call) and any(a is node for a in up.args):
        if isinstance(up.func, ast.Name) and up.func.id in _BUILTINS_THAT_ITERATE:
            return
        container.handed_over = True
        return
    if isinstance(up, ast.Starred | ast.keyword | ast.Return | ast.Assign | ast.Yield | ast.List | ast.Tuple):
        container.handed_over = True
        return
    container.safe_uses = False


def _put_many(container: _Container, value: ast.expr | None) -> None:
    if isinstance(value, ast.List | ast.Tuple) and container.kind == "list":
        container.elements.extend(value.elts)
    elif isinstance(value, ast.ListComp) and container.kind == "list":
        container.elements.append(value.elt)
    elif isinstance(value, ast.Dict) and container.kind == "dict" and all(k is not None for k in value.keys):
        container.elements.extend(value.values)
        container.keys.extend(value.keys)
    else:
        container.handed_over = True  # layers from elsewhere: not ours to judge


def _needs_registration(value: object, ctx: Context, seen: frozenset[str] = frozenset()) -> bool:
    """A layer with parameters, buffers or a train/eval difference: leaving it unregistered breaks training."""
    if not isinstance(value, ModuleValue):
        return False
    if value.user_class is not None:
        if value.user_class in seen:
            return False
        info = modules.classes(ctx).get(value.user_class)
        if info is None or not modules.is_module_class(info, ctx):
            return False
        seen = seen | {value.user_class}
        return any(_needs_registration(v, ctx, seen) for v in info.attributes.values()) or any(
            isinstance(v, ModuleValue) and v.qualname == "torch.nn.Parameter" for v in info.attributes.values()
        )
    if not value.qualname.startswith("torch.nn.") or value.qualname.count(".") != 2:
        return False
    name = modules.short(value)
    if name == "Sequential":
        return any(_needs_registration(child, ctx, seen) for child in value.children)
    return name in modules.LAYERS_WITH_STATE or bool(modules.mode_dependent_layers(value, ctx))


def _only_put_here(name: ast.Name, ctx: Context) -> bool:
    """``layer = nn.Linear(...)`` then ``self.layers.append(layer)``: ``layer`` is not kept anywhere else."""
    scope = flow.scope_of(name, ctx)
    uses = [
        n
        for n in control_flow.scope_nodes(scope)
        if isinstance(n, ast.Name) and n.id == name.id and isinstance(n.ctx, ast.Load) and n is not name
    ]
    for use in uses:
        up = flow.parent(use, ctx)
        if isinstance(up, ast.Call) and up.func is use:
            continue  # calling the layer
        if isinstance(up, ast.Attribute) and up.value is use and up.attr in ("weight", "bias"):
            continue
        return False
    return True


def _after_module_init(target: ast.Attribute, ctx: Context) -> bool:
    """``super().__init__()`` (or ``Base.__init__(self)``) runs before the assignment: only then can a module be
    assigned to an attribute."""
    method = control_flow.scope_function(target, ctx.parents())
    if method is None:
        return False
    for node in control_flow.scope_nodes(method):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "__init__"
            and control_flow.dominates(node, target, ctx.parents())
        ):
            return True
    return False


def _valid_key(key: ast.expr | None) -> bool:
    return (
        isinstance(key, ast.Constant)
        and isinstance(key.value, str)
        and key.value != ""
        and "." not in key.value
        and key.value not in _MODULE_ATTRIBUTES
        and not key.value.startswith("_")
    )


def _is_empty(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Dict):
        return not (value.elts if isinstance(value, ast.List) else value.keys)
    return isinstance(value, ast.Call)
