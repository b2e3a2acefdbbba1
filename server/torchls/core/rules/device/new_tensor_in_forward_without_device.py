from __future__ import annotations

import ast
from dataclasses import dataclass, field

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
from torchls.core.values import CPU, ModuleValue, TupleValue

# Methods that keep a tensor's device and keep at least one dim.
_KEEPING_METHODS = frozenset(
    "float double half bfloat16 long int bool byte unsqueeze expand repeat t transpose permute contiguous clone "
    "detach fill_ tril triu cumsum flip float_ requires_grad_".split()
)
_KEEPING_FUNCTIONS = frozenset("torch." + n for n in "tril triu flip cumsum roll logical_not".split())
# Tensor methods whose result is not on the receiver's device, or not a tensor.
_LEAVING_METHODS = frozenset({"cpu", "to", "numpy", "tolist", "item", "type"})


@dataclass(frozen=True, slots=True)
class _Candidate:
    creation: ast.Call
    operation: ast.AST
    what: str  # what happens at ``operation``, for the related information
    klass: str
    fix: Fix | None


class NewTensorInForwardWithoutDevice(Rule):
    """`forward` 里新建张量时没有写 `device=`，张量总在 CPU 上，却要和移到 GPU 上的输入或参数一起用。

    **为什么是问题**：`torch.zeros`、`torch.ones`、`torch.arange`、`torch.tensor` 等函数不写 `device=` 时，
    张量建在默认设备 CPU 上；`model.to(device)` 只移动 `__init__` 里注册的参数和缓冲区，`forward` 里临时新建的
    张量不会跟着走。模型一放到 GPU 上，这个张量和输入（或由输入算出的张量、模型参数）相加、拼接、比较，或者
    作为输入传给模型自己的层（`self.pos_emb(torch.arange(T))`、LSTM 的初始隐状态 `h0`）时，就会报
    `Expected all tensors to be on the same device`。在 CPU 上调试时一切正常，换到 GPU 才出错。
    本规则只在同一文件里能看到这个模型的实例（或包含它的模型）被移到设备上时报告；0 维张量
    （如 `torch.tensor(2.0)`）可以和 GPU 张量做逐元素运算，不报告；`*_like` 函数和 `x.new_zeros(...)`
    跟随已有张量的设备，也不报告。

    **示例**
    ```python
    class PositionalAdd(nn.Module):
        def forward(self, x):
            pos = torch.arange(x.size(1))        # 在 CPU 上
            return x + pos

    model = PositionalAdd().to(device)
    ```

    **改正**：按输入的设备新建：`torch.arange(x.size(1), device=x.device)`；或者用 `torch.zeros_like(x)`、
    `x.new_zeros(...)` 这类跟随输入设备的写法；固定不变的张量可以在 `__init__` 里用 `register_buffer` 注册。

    **自动修复**：安全：`forward` 的输入参数在整个 `forward` 里都是张量时，给新建张量的调用加上
    `device=<输入>.device`；否则不提供修复。
    """

    code = "TL203"
    raises = True
    requires_text = ("cuda", "mps")
    name = "new-tensor-in-forward-without-device"
    severity = Severity.ERROR
    kb_entry = "torch.zeros"
    node_types = (ast.Call, ast.BinOp, ast.Compare)
    fixable = True

    def __init__(self) -> None:
        self._candidates: dict[ast.Call, _Candidate] = {}  # CPU creations that meet the input or a parameter

    def visit(self, node: ast.AST, ctx: Context) -> None:
        function, klass = ctx.function, ctx.klass
        if function is None or klass is None or not klass.is_module:
            return
        if function.name != "forward" and function.name not in common.forward_helpers(klass, ctx):
            return
        forward = _Forward(function, klass, ctx)
        candidates = self._candidates
        layer_input = common.layer_input(node, ctx) if isinstance(node, ast.Call) else None
        if layer_input is not None:
            creation = forward.cpu_created(layer_input)
            if creation is not None and creation not in candidates:
                what = "在这里传给了模型自己的层（层的参数会在设备上）"
                candidates[creation] = _Candidate(creation, node, what, klass.name, forward.fix(creation))
        for a, b in common.operand_pairs(node, ctx):
            for created_side, other in ((a, b), (b, a)):
                creation = forward.cpu_created(created_side)
                if creation is None or not forward.on_device(other):
                    continue
                if creation not in candidates:
                    what = "在这里和输入（或由它算出的张量、模型参数）一起运算"
                    candidates[creation] = _Candidate(creation, node, what, klass.name, forward.fix(creation))

    def finish(self, ctx: Context) -> None:
        candidates = self._candidates
        if not candidates:
            return
        moved = _moved_classes(ctx)
        for candidate in candidates.values():
            move = moved.get(candidate.klass)
            if move is None:
                continue
            name = ctx.text(candidate.creation.func)
            helper = _enclosing_function(candidate.creation, ctx)
            where = (
                "`forward` 里" if helper is None or helper.name == "forward" else f"`forward` 调用的 `{helper.name}` 里"
            )
            ctx.report(
                candidate.creation,
                f"{where}的 `{name}(...)` 没有指定 `device`，张量总建在 CPU 上，"
                f"而 `{candidate.klass}` 会被移到设备上：它遇到输入或模型参数时会报设备不一致",
                fix=candidate.fix,
                related=(
                    Related(ctx.span(candidate.operation), candidate.what),
                    Related(ctx.span(move), common.zh("模型在这里被移到了设备上")),
                ),
            )


@dataclass(slots=True)
class _ForwardFacts(Analysis):
    """What this rule reads from each ``forward`` (or helper it calls), once per function and file: the values of
    its local names with the class's parameter attributes, and whether its input is surely a tensor."""

    by_function: dict[ast.AST, tuple[dict[str, list[ast.expr | None]], dict[str, list[ast.Name]], frozenset[str]]] = (
        field(default_factory=dict)
    )
    input_tensor: dict[ast.AST, bool] = field(default_factory=dict)


class _Forward:
    """What a ``forward`` method's code proves about its tensors."""

    def __init__(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, klass, ctx: Context, owns_input: bool = True
    ) -> None:
        """``owns_input=False`` reads a helper ``forward`` calls: its parameters are not the model's input."""
        self.function = function
        self.klass = klass
        self.ctx = ctx
        params = [a for a in [*function.args.posonlyargs, *function.args.args]][1:]
        self.input = params[0].arg if params and owns_input else None
        self.input_annotation = params[0].annotation if params else None
        cache = ctx.analysis(_ForwardFacts).by_function
        if function not in cache:
            cache[function] = (*_stores(function), _parameter_attributes(klass, ctx))
        self.stores, self.targets, self.parameters = cache[function]

    # ---- tensors created here on the CPU

    def cpu_created(self, expr: ast.expr, visiting: frozenset[str] = frozenset()) -> ast.Call | None:
        """The creation call when ``expr`` is a tensor created in this ``forward`` without a device (rank >= 1)."""
        tensor = self.ctx.tensor(expr)
        if (tensor is not None and tensor.device != CPU) or common.default_device_may_change(self.ctx):
            return None
        return self._created(expr, visiting)

    def _created(self, expr: ast.expr, visiting: frozenset[str]) -> ast.Call | None:
        if isinstance(expr, ast.Call):
            qualname = self.ctx.qualify(expr.func)
            if qualname in DEFAULT_DEVICE_CREATION_FUNCTIONS:
                if any(k.arg in ("device", None) for k in expr.keywords) or not self._has_dims(expr, qualname):
                    return None
                return expr
            if qualname in _KEEPING_FUNCTIONS and expr.args:
                return self._created(expr.args[0], visiting)
            if isinstance(expr.func, ast.Attribute) and qualname is None:
                method = expr.func.attr
                if method in _KEEPING_METHODS or (method in ("view", "reshape") and _reshape_keeps_dims(expr)):
                    return self._created(expr.func.value, visiting)
            if qualname is None:
                return self._created_by_helper(expr, visiting)
            return None
        if isinstance(expr, ast.Compare) and len(expr.comparators) == 1 and common.is_number(expr.comparators[0]):
            return self._created(expr.left, visiting)
        if isinstance(expr, ast.Subscript) and _slice_keeps_dims(expr.slice):
            return self._created(expr.value, visiting)
        if isinstance(expr, ast.BinOp):
            if common.is_number(expr.right):
                return self._created(expr.left, visiting)
            if common.is_number(expr.left):
                return self._created(expr.right, visiting)
            return None
        if isinstance(expr, ast.Name) and expr.id not in visiting:
            assignments = self.stores.get(expr.id)
            if not assignments or expr.id == self.input:
                return None
            found = None
            parents = self.ctx.parents()
            for target, value in zip(self.targets[expr.id], assignments, strict=True):
                if control_flow.later_iteration_only(target, expr, parents):
                    continue  # `h = self.cell(x, h)` in a loop: the first step reads the `h` from before the loop
                if value is None:
                    return None
                if isinstance(value, ast.Name) and value.id in visiting | {expr.id}:
                    continue
                created = self._created(value, visiting | {expr.id})
                if created is None and not _refers_only_to(value, visiting | {expr.id}):
                    return None
                found = found or created
            return found
        return None

    def _created_by_helper(self, call: ast.Call, visiting: frozenset[str]) -> ast.Call | None:
        """``self.init_state(b)`` or ``causal_mask(t)``: a method of the class or a function of the file whose
        every ``return`` gives a tensor it created without a device."""
        helper = self._helper(call)
        if helper is None or f"def {helper.name}" in visiting:
            return None
        inner = _Forward(helper, self.klass, self.ctx, owns_input=False)
        returns = [n.value for n in ast.walk(helper) if isinstance(n, ast.Return)]
        if not returns or any(r is None for r in returns):
            return None
        found = [inner._created(r, visiting | {f"def {helper.name}"}) for r in returns]  # type: ignore[arg-type]
        return found[0] if all(found) else None

    def _helper(self, call: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            return self.klass.method(func.attr)
        if isinstance(func, ast.Name):
            return next(
                (
                    s
                    for s in self.ctx.tree.body
                    if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == func.id
                ),
                None,
            )
        return None

    def _has_dims(self, call: ast.Call, qualname: str) -> bool:
        """True when the created tensor provably has at least one dim (0-dim tensors may meet GPU tensors)."""
        short = qualname.rsplit(".", 1)[-1]
        tensor = self.ctx.tensor(call)
        if tensor is not None and tensor.shape is not None:
            return len(tensor.shape) > 0
        if short in ("arange", "linspace", "logspace", "randperm", "eye"):
            return True
        if short == "tensor":
            return bool(call.args) and isinstance(call.args[0], ast.List | ast.Tuple) and bool(call.args[0].elts)
        if short == "randint":
            size = next((k.value for k in call.keywords if k.arg == "size"), call.args[-1] if call.args else None)
            return isinstance(size, ast.Tuple | ast.List) and bool(size.elts)
        sizes = call.args[:1] if short == "full" else call.args
        if not sizes or any(isinstance(a, ast.Starred) for a in sizes):
            return False
        if len(sizes) >= 2:
            return True
        return self._size_has_dims(sizes[0])

    def _size_has_dims(self, size: ast.expr) -> bool:
        if isinstance(size, ast.Constant):
            return isinstance(size.value, int) and not isinstance(size.value, bool)
        if isinstance(size, ast.Tuple | ast.List):
            return bool(size.elts)
        if isinstance(size, ast.BinOp):
            return True  # sizes multiplied or added: an int, or a joined non-empty shape
        if isinstance(size, ast.Subscript):
            return not isinstance(size.slice, ast.Slice)  # shape[-1] is an int
        if isinstance(size, ast.Call):
            if isinstance(size.func, ast.Name) and size.func.id in ("len", "int", "max", "min", "round"):
                return True
            if isinstance(size.func, ast.Attribute) and size.func.attr in ("size", "numel", "dim"):
                return bool(size.args) or size.func.attr != "size" or self.on_device(size.func.value)
            return False
        if isinstance(size, ast.Attribute) and size.attr == "shape":
            return self.on_device(size.value)  # the shape of the model's input has dims
        value = self.ctx.value(size)
        if isinstance(value, TupleValue):
            return bool(value.items)
        literal = getattr(value, "value", None)
        return isinstance(literal, int) and not isinstance(literal, bool)

    # ---- tensors on the model's device

    def on_device(self, expr: ast.expr, visiting: frozenset[str] = frozenset()) -> bool:
        """True when ``expr`` is the model's input, a parameter or buffer, or a tensor computed from them."""
        tensor = self.ctx.tensor(expr)
        if tensor is not None and tensor.device == CPU:
            return False
        if tensor is not None and common.accelerated(tensor.device):
            return True  # this call's value is on the model's device (a helper's argument, for one)
        return self._derived(expr, visiting)

    def _derived(self, expr: ast.expr, visiting: frozenset[str]) -> bool:
        ctx = self.ctx
        if isinstance(expr, ast.Name):
            if expr.id in visiting:
                return True  # `x = f(x)`: as derived as `x` already is, which its other assignments decide
            is_input = expr.id == self.input
            if is_input and not self.input_is_tensor():
                return False
            assignments = self.stores.get(expr.id, [])
            if not is_input and not assignments:
                return False
            inner = visiting | {expr.id}
            for value in assignments:
                if value is None or not (self._derived(value, inner) or _refers_only_to(value, inner)):
                    return False
            return is_input or any(
                not _mentions(value, expr.id) and self._derived(value, inner)
                for value in assignments
                if value is not None
            )
        if isinstance(expr, ast.Attribute):
            return isinstance(expr.value, ast.Name) and expr.value.id == "self" and expr.attr in self.parameters
        if isinstance(expr, ast.UnaryOp):
            return self._derived(expr.operand, visiting)
        if isinstance(expr, ast.BinOp):
            return self._derived(expr.left, visiting) or self._derived(expr.right, visiting)
        if isinstance(expr, ast.Subscript):
            return self._derived(expr.value, visiting) and self.input_is_tensor()
        if not isinstance(expr, ast.Call):
            return False
        call = ctx.call(expr)
        if call.module is not None and isinstance(expr.func, ast.Attribute):
            if isinstance(expr.func.value, ast.Name) and expr.func.value.id == "self":
                if common.has_parameters(call.module, ctx):
                    return True
                first = call.arg_node(0, "input")
                return first is not None and self._derived(first, visiting)
            return False
        if call.qualname is not None:
            if call.qualname in DEFAULT_DEVICE_CREATION_FUNCTIONS:
                return False
            if call.qualname in TENSOR_FUNCTIONS or call.qualname in FUNCTIONAL_TENSOR_FUNCTIONS:
                return bool(expr.args) and self._derived(expr.args[0], visiting)
            return False
        if isinstance(expr.func, ast.Attribute):
            method = expr.func.attr
            if method in TENSOR_RETURNING_METHODS and method not in _LEAVING_METHODS:
                return self._derived(expr.func.value, visiting)
        return False

    def input_is_tensor(self) -> bool:
        """True when ``forward``'s first argument is certainly a tensor (not a list, a dict or a tuple of them)."""
        if self.input is None:
            return False
        cache = self.ctx.analysis(_ForwardFacts).input_tensor
        if self.function in cache:
            return cache[self.function]
        result = False
        if self.input_annotation is not None and self.ctx.qualify(self.input_annotation) in (
            "torch.Tensor",
            "torch.FloatTensor",
        ):
            result = True
        for node in ast.walk(self.function):
            if result:
                break
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == self.input:
                result = node.attr in TENSOR_RETURNING_METHODS or node.attr in ("shape", "size", "dim", "device")
                result = result and node.attr not in ("t", "float", "int", "bool", "long", "sum", "any", "all")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                callee = self.ctx.call(node).module
                first = node.args[0] if node.args else None
                if (
                    isinstance(callee, ModuleValue)
                    and callee.user_class is None
                    and callee.qualname.rsplit(".", 1)[-1] in common.PARAMETRIC_LAYERS
                    and isinstance(first, ast.Name)
                    and first.id == self.input
                ):
                    result = True
        cache[self.function] = result
        return result

    # ---- the fix

    def fix(self, creation: ast.Call) -> Fix | None:
        """``device=x.device`` when the input ``x`` holds a tensor on the model's device throughout ``forward``."""
        if (
            self.input is None
            or not self.input_is_tensor()
            or _enclosing_function(creation, self.ctx) is not self.function
        ):
            return None  # made in a helper: `x` is not a name there
        if any(
            value is None or not self._derived(value, frozenset({self.input}))
            for value in self.stores.get(self.input, [])
        ):
            return None
        arguments: list[ast.AST] = [*creation.args, *(k.value for k in creation.keywords)]
        if not arguments:
            return None
        last = max(arguments, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))
        text = f", device={self.input}.device"
        return Fix(f"按输入的设备新建：加上 `device={self.input}.device`", (self.ctx.insert_after(last, text),))


def _enclosing_function(node: ast.AST, ctx: Context) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    parents = ctx.parents()
    current = parents.get(node)
    while current is not None and not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
        current = parents.get(current)
    return current


def _mentions(value: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value))


def _refers_only_to(value: ast.expr, names: frozenset[str]) -> bool:
    """``t.float()``/``t * 2`` style re-assignments of a name in ``names`` (they keep what ``t`` already was)."""
    node = value
    while True:
        if isinstance(node, ast.Name):
            return node.id in names
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _KEEPING_METHODS:
            node = node.func.value
        elif isinstance(node, ast.BinOp) and isinstance(node.right, ast.Constant):
            node = node.left
        else:
            return False


def _stores(function: ast.AST) -> tuple[dict[str, list[ast.expr | None]], dict[str, list[ast.Name]]]:
    """Every value assigned to each local name (None for bindings other than a plain ``name = value``), and the
    names bound, in the same order."""
    plain: dict[int, ast.expr | None] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    plain[id(target)] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            plain[id(node.target)] = node.value
    found: dict[str, list[ast.expr | None]] = {}
    targets: dict[str, list[ast.Name]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            found.setdefault(node.id, []).append(plain.get(id(node)))
            targets.setdefault(node.id, []).append(node)
    return found, targets


def _parameter_attributes(klass, ctx: Context) -> frozenset[str]:
    """``self.<name>`` attributes that are parameters or buffers (they move with the model)."""
    names: set[str] = set()
    for info in common.class_chain(klass.name, ctx):
        for node in ast.walk(info.node):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                callee = ctx.qualify(node.value.func) or ""
                if callee.endswith(".Parameter") or callee.endswith(".Buffer"):
                    for target in node.targets:
                        if (
                            isinstance(target, ast.Attribute)
                            and isinstance(target.value, ast.Name)
                            and target.value.id == "self"
                        ):
                            names.add(target.attr)
            registered = common.registered_name(node)
            if registered is not None:
                names.add(registered)
    return frozenset(names)


def _reshape_keeps_dims(call: ast.Call) -> bool:
    args = call.args
    if not args or any(isinstance(a, ast.Starred) for a in args):
        return False
    if len(args) == 1 and isinstance(args[0], ast.Tuple | ast.List):
        return bool(args[0].elts)
    return True


def _slice_keeps_dims(index: ast.expr) -> bool:
    """Indexing with a slice or ``None`` keeps (or adds) a dim: the result is not 0-dim."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value is None) for p in parts)


def _moved_classes(ctx: Context) -> dict[str, ast.AST]:
    """User model classes whose instances this file moves to a device (directly or inside a moved model), and
    the file's classes they inherit ``forward`` code from."""
    moved = common.moved_classes(ctx)
    for name in list(ctx.classes):
        for base in common.class_chain(name, ctx)[1:]:
            if name in moved and base.name not in moved:
                moved[base.name] = moved[name]
    return moved
