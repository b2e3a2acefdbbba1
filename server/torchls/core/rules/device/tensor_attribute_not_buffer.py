from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchls.core import control_flow
from torchls.core.facts import (
    DEFAULT_DEVICE_CREATION_FUNCTIONS,
    FUNCTIONAL_TENSOR_FUNCTIONS,
    TENSOR_FUNCTIONS,
    TENSOR_RETURNING_METHODS,
)
from torchls.core.findings import Fix, Related, Severity
from torchls.core.rules.base import Analysis, Context, Rule
from torchls.core.rules.device import common
from torchls.core.values import CPU, Literal, ModuleValue, TensorValue, TupleValue

if TYPE_CHECKING:
    from torchls.core.interpreter import ClassInfo

# Tensor methods that keep the receiver's device and at least one dim (what a mask or a table goes through).
_KEEPING_METHODS = frozenset(
    "float double half bfloat16 long int bool byte unsqueeze squeeze expand expand_as repeat t transpose permute "
    "contiguous clone detach view reshape flip".split()
)
_KEEPING_FUNCTIONS = frozenset("torch." + n for n in "tril triu flip cumsum roll logical_not".split())
# Methods that leave the device (or the tensor) behind: a result of them is not known to be where its input was.
_LEAVING_METHODS = frozenset({"to", "cuda", "cpu", "numpy", "tolist", "item", "type", "type_as"})
# Methods whose results (a tuple of tensors) stay on the receiver's device.
_SPLITTING_METHODS = frozenset({"chunk", "split", "unbind", "tensor_split"})
# A class that defines one of these moves (or may move) its tensors itself.
_DEVICE_HOOKS = frozenset({"_apply", "to", "cuda", "cpu", "type", "__setattr__", "__getattr__"})
_FUNCTIONS = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True, slots=True)
class _Assignment:
    node: ast.Assign
    klass: str
    name: str


@dataclass(frozen=True, slots=True)
class _Use:
    operation: ast.AST
    klass: str
    name: str
    layer_input: bool


class TensorAttributeNotBuffer(Rule):
    """模型在 `__init__` 里把普通张量存成属性（不是参数或缓冲区），`forward` 用它和输入运算，模型却会被移到 GPU。

    **为什么是问题**：`model.to(device)` / `model.cuda()` 只移动**参数**（`nn.Parameter`）、**缓冲区**
    （`register_buffer` 注册的张量）和子模块，普通的 `self.mask = torch.tril(torch.ones(n, n))`、
    `self.pe = torch.zeros(...)`、`self.weights = torch.tensor([...])` 不会跟着走，仍在 CPU 上。模型一到 GPU，
    `forward` 里这个张量和输入（或层的输出）相加、相乘、`masked_fill`，或者传给模型自己的层时，就会报
    `Expected all tensors to be on the same device`。用 `torch.device("cuda" if torch.cuda.is_available() else
    "cpu")` 的代码在 CPU 机器上一切正常，换到 GPU 机器才出错；它也不会出现在 `state_dict` 里。

    本规则只在能证明以下几点时报告：属性在 `__init__` 里只赋值这一次，值是确定在 CPU 上、至少 1 维的张量；
    类里没有对同名属性 `register_buffer`/`register_parameter`、`setattr`，也没有自己实现 `_apply`/`to`/`cuda`；
    `forward`（或 `forward` 调用的方法）把它（可以经过切片、`== 0`、`.float()`、`unsqueeze` 等）和输入、
    层的输出或参数一起运算，或传给模型自己带参数的层；并且同一文件里这个类的实例（或包含它的模型）被移到了
    可能是 GPU 的设备。`forward` 里先 `self.mask.to(x.device)` / `.type_as(x)` 再用的不报告；那一行如果
    能直接证明两边设备不同，TL207 还会在使用处另外报告。

    **示例**
    ```python
    class CausalSelfAttention(nn.Module):
        def __init__(self, dim, block_size):
            super().__init__()
            self.qkv = nn.Linear(dim, 3 * dim)
            self.mask = torch.tril(torch.ones(block_size, block_size))   # 普通属性

        def forward(self, x):
            att = self.scores(x)
            return att.masked_fill(self.mask[:T, :T] == 0, float("-inf"))

    model = CausalSelfAttention(64, 128).to(device)
    ```

    **改正**：注册成缓冲区：`self.register_buffer("mask", torch.tril(torch.ones(block_size, block_size)),
    persistent=False)`；需要训练的改成 `nn.Parameter(...)`；或者在 `forward` 里用 `self.mask.to(x.device)`。

    **自动修复**：安全：赋值写在 `super().__init__()` 之后、是单独一条 `self.<名字> = <张量>` 语句、类里没有同名的
    类属性，且文件里没有 `.half()`/`.double()`/`.bfloat16()` 这类会把浮点缓冲区一起转换精度的调用时，改为
    `self.register_buffer("<名字>", <张量>, persistent=False)`：它随模型移动，`persistent=False` 让
    `state_dict` 和已有的检查点保持不变；其他情况不提供修复。
    """

    code = "TL210"
    raises = True
    requires_text = (".to(", ".cuda(")
    name = "tensor-attribute-not-buffer"
    severity = Severity.ERROR
    kb_entry = "torch.nn.Module.register_buffer"
    node_types = (ast.Assign, ast.Call, ast.BinOp, ast.Compare)
    fixable = True

    def __init__(self) -> None:
        self._assignments = _Assignments()
        self._uses: dict[tuple[str, str], _Use] = {}  # (class, attribute): its first use next to a device tensor

    def visit(self, node: ast.AST, ctx: Context) -> None:
        function, klass = ctx.function, ctx.klass
        if function is None or klass is None or not klass.is_module or common.default_device_may_change(ctx):
            return
        if isinstance(node, ast.Assign):
            if function.name == "__init__":
                _record_assignment(node, function, klass.name, self._assignments, ctx)
            return
        if function.name != "forward" and function.name not in common.forward_helpers(klass, ctx):
            return
        if not _has_tensor_attributes(klass, ctx):
            return  # no plain tensor stored in this class's __init__ (nor its bases'): no use can matter
        uses = self._uses
        forward = _Forward(function, klass, ctx)
        if isinstance(node, ast.Call):
            layer_input = common.layer_input(node, ctx, torch_layers_only=True)
            attribute = forward.attribute(layer_input) if layer_input is not None else None
            if attribute is not None:
                uses.setdefault((klass.name, attribute), _Use(node, klass.name, attribute, True))
        for a, b in common.operand_pairs(node, ctx):
            for side, other in ((a, b), (b, a)):
                attribute = forward.attribute(side)
                if attribute is None or not forward.on_device(other):
                    continue
                uses.setdefault((klass.name, attribute), _Use(node, klass.name, attribute, False))

    def finish(self, ctx: Context) -> None:
        assignments, uses = self._assignments.cpu, self._uses
        if not assignments or not uses:
            return
        moved = common.moved_classes(ctx)
        elsewhere = self._assignments.elsewhere
        reported: set[ast.Assign] = set()
        for model, move in moved.items():
            chain = common.class_chain(model, ctx)
            names = {k.name for k in chain}
            if any(_DEVICE_HOOKS & set(k.methods) for k in chain):
                continue
            for (owner, attribute), assignment in assignments.items():
                if owner not in names or assignment.node in reported or assignment.node in elsewhere:
                    continue
                use = next((u for (k, a), u in uses.items() if a == attribute and k in names), None)
                if use is None or not _plain_attribute(attribute, assignment, chain, ctx):
                    continue
                reported.add(assignment.node)
                what = (
                    "在这里传给了模型自己的层（层的参数会在设备上）"
                    if use.layer_input
                    else "在这里和输入（或由它算出的张量、模型参数）一起运算"
                )
                ctx.report(
                    assignment.node.targets[0],
                    common.zh(
                        f"`self.{attribute}` 是普通的张量属性，`{model}` 被移到设备上时它不会跟着移动，仍在 CPU 上：",
                        "`forward` 里用到它时会报设备不一致",
                    ),
                    fix=_fix(assignment, chain, ctx),
                    related=(
                        Related(ctx.span(use.operation), what),
                        Related(ctx.span(move), common.zh("模型在这里被移到了设备上")),
                    ),
                )


# ---------------------------------------------------------------------------------------------- the attribute


@dataclass(slots=True)
class _Assignments:
    """What one file's ``__init__`` methods store in ``self.<name>``, as TL210 walks them."""

    cpu: dict[tuple[str, str], _Assignment] = field(default_factory=dict)  # (class, name): a plain CPU tensor
    elsewhere: set[ast.Assign] = field(default_factory=set)  # some instance gets something else there


def _record_assignment(node: ast.Assign, function: ast.AST, klass: str, recorded: _Assignments, ctx: Context) -> None:
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Attribute):
        return
    target = node.targets[0]
    if not isinstance(target.value, ast.Name) or target.value.id != common.self_name(function):
        return
    if control_flow.enclosing_function(node, ctx.parents()) is not function:
        return
    tensor = ctx.tensor(node.value)
    if tensor is None or (tensor.device is None and not tensor.registered):
        return  # not known here (an evaluation for unknown constructor arguments)
    assignments = recorded.cpu
    key = (klass, target.attr)
    if tensor.registered or tensor.device != CPU or tensor.shape == ():
        recorded.elsewhere.add(node)  # some instance gets something else
        return
    if not _on_cpu(tensor, ctx) or not _has_dims(node.value, ctx):
        return
    if key not in assignments:
        assignments[key] = _Assignment(node, klass, target.attr)


def _on_cpu(tensor: TensorValue, ctx: Context) -> bool:
    """The tensor never left the CPU: also ``torch.tensor(mean)`` where ``mean`` is a list of numbers."""
    if common.on_cpu(tensor, ctx):
        return True
    if tensor.device != CPU or common.default_device_may_change(ctx) or tensor.origin is None:
        return False
    origin = tensor.origin.node
    if not isinstance(origin, ast.Call) or ctx.qualify(origin.func) not in ("torch.tensor", "torch.as_tensor"):
        return False
    data = ctx.value(origin.args[0]) if origin.args else None
    return _numbers(data)


def _numbers(value: object, depth: int = 0) -> bool:
    if isinstance(value, Literal):
        return isinstance(value.value, int | float) and not isinstance(value.value, bool)
    if isinstance(value, TupleValue) and depth < 4:
        return bool(value.items) and all(_numbers(item, depth + 1) for item in value.items)
    return False


def _has_dims(expr: ast.expr, ctx: Context, depth: int = 0) -> bool:
    """True when the tensor provably has at least one dim (a 0-dim CPU tensor may meet a GPU tensor)."""
    tensor = ctx.tensor(expr)
    if tensor is not None and tensor.shape is not None:
        return len(tensor.shape) > 0
    if tensor is not None and tensor.tail:
        return True
    if depth > 6:
        return False
    if isinstance(expr, ast.Subscript):
        parts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
        return any(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value is None) for p in parts)
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Attribute) and expr.func.attr == "unsqueeze":
            return True
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in ("float", "double", "half", "long", "bool"):
            return _has_dims(expr.func.value, ctx, depth + 1)
        if ctx.qualify(expr.func) in _KEEPING_FUNCTIONS and expr.args:
            return _has_dims(expr.args[0], ctx, depth + 1)
    return False


def _plain_attribute(attribute: str, assignment: _Assignment, chain: list, ctx: Context) -> bool:
    """The attribute stays a plain tensor: assigned once, never registered, never set another way."""
    if any(attribute in k.unstable for k in chain):
        return False
    for klass in chain:
        for node in ast.walk(klass.node):
            if isinstance(node, ast.Call):
                func = node.func
                callee = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if callee in ("register_buffer", "register_parameter", "setattr", "add_module"):
                    first = (
                        node.args[1 if callee == "setattr" else 0] if len(node.args) > (callee == "setattr") else None
                    )
                    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                        return False  # a name we cannot read: it may be this one
                    if first.value == attribute:
                        return False
    # set another way: model.mask = model.mask.to(device), or in a method of the class
    classes = {k.node for k in chain}
    names = {k.name for k in chain}
    table = ctx.parents()
    for node in ctx.analysis(AttributeStores).by_name.get(attribute, ()):
        if node is assignment.node.targets[0]:
            continue
        owner = next((a for a in control_flow.ancestors(node, ctx.parents()) if isinstance(a, ast.ClassDef)), None)
        on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
        if on_self and owner is not None and owner not in classes and table.get(node) is not None:
            continue  # another class's own attribute of the same name
        value = ctx.value(node.value)
        if not on_self and isinstance(value, ModuleValue) and value.user_class not in (None, *names):
            continue  # an instance of another class of the file
        return False
    return True


@dataclass(frozen=True, slots=True)
class AttributeStores(Analysis):
    """Every attribute the file assigns or deletes (``x.name = ...``, ``del x.name``), by attribute name."""

    by_name: dict[str, list[ast.Attribute]]

    @classmethod
    def compute(cls, ctx: Context) -> AttributeStores:
        by_name: dict[str, list[ast.Attribute]] = {}
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
                by_name.setdefault(node.attr, []).append(node)
        return cls(by_name)


def _has_tensor_attributes(klass, ctx: Context) -> bool:
    """Some ``__init__`` of ``klass``'s chain assigns ``self.<name> = <a call>``: a plain tensor attribute may be
    among them (read from the syntax, once per class; the values come later, with the constructor's arguments)."""
    cache = ctx.analysis(TensorAttributeClasses).by_class
    found = cache.get(klass)
    if found is None:
        found = False
        for info in klass.chain():
            init = info.method("__init__")
            if init is not None and any(
                isinstance(n, ast.Assign)
                and isinstance(n.value, ast.Call)
                and any(isinstance(t, ast.Attribute) for t in n.targets)
                for n in ast.walk(init)
            ):
                found = True
                break
        cache[klass] = found
    return found


@dataclass(slots=True)
class TensorAttributeClasses(Analysis):
    """For each model class asked about: whether it may store a plain tensor attribute (``_has_tensor_attributes``)."""

    by_class: dict[ClassInfo, bool] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- forward


@dataclass(slots=True)
class _ForwardFacts(Analysis):
    """What this rule reads from each model method it checks, once per function and file: the values of its local
    names, the class's parameters and buffers, and whether its input is surely a tensor."""

    by_function: dict[ast.AST, tuple[dict[str, list[ast.expr | None]], frozenset[str], bool]] = field(
        default_factory=dict
    )


class _Forward:
    """What one method of the model proves about its tensors: the plain attribute, and what is on the device."""

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef, klass, ctx: Context) -> None:
        self.function = function
        self.klass = klass
        self.ctx = ctx
        self.self_name = common.self_name(function)
        params = [*function.args.posonlyargs, *function.args.args][1:]
        self.input = params[0].arg if params and function.name == "forward" else None
        cache = ctx.analysis(_ForwardFacts).by_function
        if function not in cache:
            cache[function] = (_stores(function), _registered(klass, ctx), _input_is_tensor(function, self.input, ctx))
        self.stores, self.registered, self.input_tensor = cache[function]

    def attribute(self, expr: ast.expr | None, depth: int = 0) -> str | None:
        """The name of ``self.<name>`` when ``expr`` is that plain CPU tensor attribute, maybe sliced or cast."""
        if expr is None or depth > 6:
            return None
        if isinstance(expr, ast.Attribute):
            if not isinstance(expr.value, ast.Name) or expr.value.id != self.self_name:
                return None
            tensor = self.ctx.tensor(expr)
            if tensor is None or tensor.registered or tensor.device != CPU or expr.attr in self.registered:
                return None
            return expr.attr
        if isinstance(expr, ast.Subscript):
            return self.attribute(expr.value, depth + 1)
        if isinstance(expr, ast.Compare):
            if len(expr.comparators) == 1 and common.is_number(expr.comparators[0]):
                return self.attribute(expr.left, depth + 1)
            return None
        if isinstance(expr, ast.UnaryOp):
            return self.attribute(expr.operand, depth + 1)
        if isinstance(expr, ast.BinOp):
            if common.is_number(expr.right):
                return self.attribute(expr.left, depth + 1)
            if common.is_number(expr.left):
                return self.attribute(expr.right, depth + 1)
            return None
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in _KEEPING_METHODS:
                return self.attribute(expr.func.value, depth + 1)
            if self.ctx.qualify(expr.func) in _KEEPING_FUNCTIONS and expr.args:
                return self.attribute(expr.args[0], depth + 1)
            return None
        if isinstance(expr, ast.Name):
            value = self._single_value(expr.id)
            return self.attribute(value, depth + 1) if value is not None else None
        return None

    def _single_value(self, name: str) -> ast.expr | None:
        values = self.stores.get(name, [])
        return values[0] if len(values) == 1 else None

    def _name_on_device(self, name: str, depth: int) -> bool:
        """Every value the name is given is on the device, or the name itself updated (``h = h * 2``)."""
        values = self.stores.get(name, [])
        if name == self.input:
            if not self.input_tensor:
                return False
        elif not values:
            return False
        based = name == self.input
        for value in values:
            if value is None:
                return False
            mentions = any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value))
            if not mentions and not self.on_device(value, depth + 1):
                return False
            if mentions and not self._updates(value, name):
                return False
            based = based or not mentions
        return based

    def _updates(self, value: ast.expr, name: str) -> bool:
        """``att.masked_fill(...)``, ``h * 2``, ``x + self.pe``: a new value of ``name`` computed from it."""
        if isinstance(value, ast.Name):
            return value.id == name
        if isinstance(value, ast.BinOp):
            return self._updates(value.left, name) or self._updates(value.right, name)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            method = value.func.attr
            keeps = method in TENSOR_RETURNING_METHODS and method not in _LEAVING_METHODS
            return keeps and self._updates(value.func.value, name)
        if isinstance(value, ast.Call) and value.args:
            qualname = self.ctx.qualify(value.func)
            if qualname in TENSOR_FUNCTIONS or qualname in FUNCTIONAL_TENSOR_FUNCTIONS:
                return self._updates(value.args[0], name)
            call = self.ctx.call(value)
            if call.module is not None and isinstance(value.func, ast.Attribute):
                return _layer_output_on_device(call.module, self.ctx)
        return False

    def on_device(self, expr: ast.expr | None, depth: int = 0) -> bool:
        """True when ``expr`` is on the model's device: the input, a parameter or buffer, a layer's output, or a
        tensor computed from them."""
        if expr is None or depth > 8:
            return False
        tensor = self.ctx.tensor(expr)
        if tensor is not None and tensor.device is not None:
            if tensor.device == CPU:
                return False
            if common.accelerated(tensor.device):
                return True
        if isinstance(expr, ast.Name):
            return self._name_on_device(expr.id, depth)
        if isinstance(expr, ast.Attribute):
            return isinstance(expr.value, ast.Name) and expr.value.id == self.self_name and expr.attr in self.registered
        if isinstance(expr, ast.UnaryOp):
            return self.on_device(expr.operand, depth + 1)
        if isinstance(expr, ast.BinOp):
            return self.on_device(expr.left, depth + 1) or self.on_device(expr.right, depth + 1)
        if isinstance(expr, ast.Subscript):
            return self.on_device(expr.value, depth + 1) and self.ctx.tensor(expr) is not None
        if not isinstance(expr, ast.Call):
            return False
        call = self.ctx.call(expr)
        if call.module is not None:
            func = expr.func
            own = (
                isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == self.self_name
            )
            return own and _layer_output_on_device(call.module, self.ctx)
        if call.qualname is not None:
            if call.qualname in DEFAULT_DEVICE_CREATION_FUNCTIONS:
                return False
            if call.qualname in TENSOR_FUNCTIONS or call.qualname in FUNCTIONAL_TENSOR_FUNCTIONS:
                first = expr.args[0] if expr.args and not isinstance(expr.args[0], ast.Starred) else None
                return self.on_device(first, depth + 1)
            return False
        if isinstance(expr.func, ast.Attribute):
            method = expr.func.attr
            if (method in TENSOR_RETURNING_METHODS or method in _SPLITTING_METHODS) and method not in _LEAVING_METHODS:
                return self.on_device(expr.func.value, depth + 1)
        return False


def _layer_output_on_device(module: ModuleValue, ctx: Context) -> bool:
    """A layer of the model that owns parameters (and does not move tensors itself) computes on their device."""
    if not common.has_parameters(module, ctx):
        return False
    if module.user_class is None:
        return module.qualname.rsplit(".", 1)[-1] not in ("LSTM", "GRU", "RNN", "MultiheadAttention", "Transformer")
    return not common.handles_devices(module.user_class, ctx)


def _input_is_tensor(function: ast.AST, name: str | None, ctx: Context) -> bool:
    """``forward``'s input is certainly a tensor: annotated so, or handed to a layer with parameters, or asked
    for its shape or device."""
    if name is None or not isinstance(function, _FUNCTIONS):
        return False
    params = [*function.args.posonlyargs, *function.args.args]
    annotation = next((p.annotation for p in params if p.arg == name), None)
    if annotation is not None and ctx.qualify(annotation) in ("torch.Tensor", "torch.FloatTensor"):
        return True
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == name
            and node.attr in ("shape", "device", "size", "dim", "view", "reshape", "transpose", "permute", "unsqueeze")
        ):
            return True
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == name:
            module = ctx.call(node).module
            if (
                isinstance(module, ModuleValue)
                and module.user_class is None
                and module.qualname.rsplit(".", 1)[-1] in common.PARAMETRIC_LAYERS
            ):
                return True
    return False


def _registered(klass, ctx: Context) -> frozenset[str]:
    """``self.<name>`` attributes that are parameters or buffers (they move with the model)."""
    names: set[str] = set()
    for info in common.class_chain(klass.name, ctx):
        for name in info.attributes:
            value = info.attributes[name]
            if isinstance(value, TensorValue) and value.registered:
                names.add(name)
        names.update(name for node in ast.walk(info.node) if (name := common.registered_name(node)) is not None)
    return frozenset(names)


def _stores(function: ast.AST) -> dict[str, list[ast.expr | None]]:
    """Every value assigned to each local name (None for bindings other than a plain ``name = value``)."""
    plain: dict[int, ast.expr | None] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            plain[id(node.targets[0])] = node.value
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr in _SPLITTING_METHODS
        ):
            for element in node.targets[0].elts:
                if isinstance(element, ast.Name):
                    plain[id(element)] = node.value  # q, k, v = self.qkv(x).chunk(3, dim=-1)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple)
            and isinstance(node.value, ast.GeneratorExp | ast.ListComp)
        ):
            sources = _mapped_sources(node.value, len(node.targets[0].elts))
            for element, source in zip(node.targets[0].elts, sources or (), strict=False):
                if isinstance(element, ast.Name):
                    plain[id(element)] = source  # q, k = (t.transpose(1, 2) for t in (q, k)): each keeps its device
    found: dict[str, list[ast.expr | None]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            found.setdefault(node.id, []).append(plain.get(id(node)))
    return found


def _mapped_sources(comprehension: ast.GeneratorExp | ast.ListComp, count: int) -> list[ast.expr] | None:
    """``(t.view(...) for t in (q, k, v))``: the items it maps, when each result stays on its item's device."""
    if len(comprehension.generators) != 1:
        return None
    generator = comprehension.generators[0]
    if generator.ifs or generator.is_async or not isinstance(generator.target, ast.Name):
        return None
    if not isinstance(generator.iter, ast.Tuple | ast.List) or len(generator.iter.elts) != count:
        return None
    node = comprehension.elt
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr not in TENSOR_RETURNING_METHODS or node.func.attr in _LEAVING_METHODS:
            return None
        node = node.func.value
    if not (isinstance(node, ast.Name) and node.id == generator.target.id):
        return None
    return list(generator.iter.elts)


# ---------------------------------------------------------------------------------------------- the fix

_CASTS = (".half(", ".double(", ".bfloat16(")


def _fix(assignment: _Assignment, chain: list, ctx: Context) -> Fix | None:
    """``self.mask = t`` -> ``self.register_buffer("mask", t, persistent=False)`` when that is the same program."""
    node = assignment.node
    if any(cast in ctx.source.text for cast in _CASTS):
        return None  # model.half() would now convert a floating buffer too
    if any(assignment.name in k.class_attributes for k in chain):
        return None  # register_buffer refuses a name the class already has
    function = control_flow.enclosing_function(node, ctx.parents())
    if not isinstance(function, _FUNCTIONS) or node not in function.body:
        return None
    index = function.body.index(node)
    if not any(_calls_base_init(s) for s in function.body[:index]):
        return None  # register_buffer needs Module.__init__ to have run
    target = node.targets[0]
    assert isinstance(target, ast.Attribute)
    owner = ctx.text(target.value)
    text = f'{owner}.register_buffer("{assignment.name}", {ctx.text(node.value)}, persistent=False)'
    title = f'改为注册缓冲区：`{owner}.register_buffer("{assignment.name}", ..., persistent=False)`'
    return Fix(title, (ctx.replace(node, text),))


def _calls_base_init(statement: ast.stmt) -> bool:
    """``super().__init__(...)`` (or ``nn.Module.__init__(self)``) as a statement."""
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and statement.value.func.attr == "__init__"
    )
