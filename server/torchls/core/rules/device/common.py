"""What the device rules share: which devices are accelerators, where a model was moved, what proves that a
tensor is on the CPU, and which device variable a fix may name.

Not a rule: the device rules import it (like ``loss/calls.py`` for the loss rules). Everything here answers
"proven" or "not known"; a rule reports only on the first.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchls.core import control_flow
from torchls.core.findings import Related
from torchls.core.rules.base import Analysis, CallInfo, Context, WalkAnalysis
from torchls.core.statements import nested_statements
from torchls.core.values import (
    ACCELERATOR,
    CPU,
    CUDA,
    MPS,
    Literal,
    ModuleValue,
    TensorValue,
    Value,
    parse_device,
)

if TYPE_CHECKING:
    from torchls.core.interpreter import ClassInfo

ACCELERATED = frozenset({CUDA, ACCELERATOR, MPS})

# Torch layers that own parameters or buffers: calling one that sits on a GPU with a CPU tensor fails.
PARAMETRIC_LAYERS = frozenset(
    """
    Linear Bilinear LazyLinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LazyConv1d
    LazyConv2d LazyConv3d BatchNorm1d BatchNorm2d BatchNorm3d SyncBatchNorm LayerNorm GroupNorm RMSNorm
    InstanceNorm1d InstanceNorm2d InstanceNorm3d Embedding EmbeddingBag LSTM GRU RNN LSTMCell GRUCell RNNCell
    MultiheadAttention Transformer TransformerEncoder TransformerDecoder TransformerEncoderLayer
    TransformerDecoderLayer PReLU
    """.split()
)


def accelerated(kind: str | None) -> bool:
    return kind in ACCELERATED


def describe(kind: str | None) -> str:
    """How a message names a device: ``GPU（cuda）``, ``加速设备（有 GPU 时是 cuda）``."""
    if kind == CUDA:
        return "GPU（cuda）"
    if kind == ACCELERATOR:
        return "加速设备（有 GPU 时是 cuda）"
    if kind == MPS:
        return "mps 设备"
    return "CPU"


def short(text: str) -> str:
    """Source text for a message: one line, at most 40 characters."""
    return text if len(text) <= 40 and "\n" not in text else text.split("\n", 1)[0][:37] + "..."


def _cjk(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff"


def zh(*parts: str) -> str:
    """Join message parts, with a space wherever Chinese text meets Latin text or an identifier."""
    text = ""
    for part in parts:
        if text and part:
            left, right = text[-1], part[0]
            latin_left = left.isascii() and (left.isalnum() or left in "`)")
            latin_right = right.isascii() and (right.isalnum() or right in "`(")
            if (_cjk(left) and latin_right) or (latin_left and _cjk(right)):
                text += " "
        text += part
    return text


def is_dtype(node: ast.expr, ctx: Context) -> bool:
    value = ctx.value(node)
    if isinstance(value, Literal) and isinstance(value.value, str) and value.value.startswith("torch."):
        return True
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return "dtype" in name.lower()


# Operations whose tensor operands must share a device.
_BINARY_FUNCTIONS = frozenset(
    "torch." + n
    for n in "add sub subtract mul multiply div divide true_divide matmul mm bmm maximum minimum fmax fmin eq ne lt "
    "le gt ge atan2 pow remainder fmod logical_and logical_or logical_xor bitwise_and bitwise_or".split()
)
_JOIN_FUNCTIONS = frozenset("torch." + n for n in "cat concat concatenate stack hstack vstack dstack".split())
_BINARY_METHODS = frozenset(
    "add sub mul div matmul mm bmm maximum minimum eq ne lt le gt ge add_ sub_ mul_ div_ masked_fill "
    "masked_fill_ logical_and logical_or pow remainder atan2".split()
)
_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_RECURRENT = frozenset({"LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"})


def operand_pairs(node: ast.AST, ctx: Context) -> list[tuple[ast.expr, ast.expr]]:
    """The pairs of expressions an operation combines, which must be tensors on one device (or Python scalars)."""
    if isinstance(node, ast.BinOp):
        return [(node.left, node.right)]
    if isinstance(node, ast.Compare):
        if len(node.comparators) != 1 or not isinstance(node.ops[0], _COMPARISONS):
            return []  # `is`, `in`: no tensor arithmetic
        return [(node.left, node.comparators[0])]
    if not isinstance(node, ast.Call):
        return []
    call = ctx.call(node)
    if call.qualname in _BINARY_FUNCTIONS and len(node.args) >= 2:
        return [(node.args[0], node.args[1])]
    if call.qualname == "torch.where" and len(node.args) == 3:
        return [(node.args[1], node.args[2])]
    if call.qualname in _JOIN_FUNCTIONS and node.args and isinstance(node.args[0], ast.List | ast.Tuple):
        items = [e for e in node.args[0].elts if not isinstance(e, ast.Starred)]
        return [(items[i], items[j]) for i in range(len(items)) for j in range(i + 1, len(items))]
    module = call.module
    if module is not None and module.user_class is None and module.qualname.rsplit(".", 1)[-1] in _RECURRENT:
        hidden = call.arg_node(1, "hx")
        if call.arg_node(0, "input") is None or hidden is None:
            return []
        states = hidden.elts if isinstance(hidden, ast.Tuple) else [hidden]
        return [(call.arg_node(0, "input"), state) for state in states]  # type: ignore[misc]
    if call.method in _BINARY_METHODS and isinstance(node.func, ast.Attribute) and node.args:
        return [(node.func.value, node.args[0])]
    return []


# ---------------------------------------------------------------------------------------------- moves


@dataclass(frozen=True, slots=True)
class Move:
    """``model.to(device)``/``model.cuda()`` seen during the walk, in walk order."""

    node: ast.Call
    device: str | None  # CPU, CUDA, ACCELERATOR, MPS; None: moved, but where is not known
    receiver: Value
    function: ast.AST | None  # the function it happens in (ctx.function), None at module level
    device_named: bool  # the device argument is a variable that names a device (``args.device``, ``dev``)


def move_device(call: CallInfo, ctx: Context) -> tuple[bool, str | None, bool]:
    """(is this a move, where to, does the argument name a device) for ``.to(...)``, ``.cuda()``, ``.cpu()``."""
    node = call.node
    if call.method == "cuda":
        return True, CUDA, True
    if call.method == "cpu":
        return True, CPU, True
    if call.method != "to":
        return False, None, False
    candidates = [a for a in node.args if not isinstance(a, ast.Starred)]
    candidates += [k.value for k in node.keywords if k.arg == "device"]
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return True, None, False
    for candidate in candidates:
        if is_dtype(candidate, ctx):
            continue
        value = ctx.value(candidate)
        if isinstance(value, TensorValue):
            return True, value.device, True
        device = parse_device(value)
        named = device is not None or _names_a_device(candidate)
        return True, device, named
    return False, None, False  # only a dtype: not a move


def _names_a_device(node: ast.expr) -> bool:
    for inner in ast.walk(node):
        name = inner.id if isinstance(inner, ast.Name) else inner.attr if isinstance(inner, ast.Attribute) else ""
        lowered = name.lower()
        if "device" in lowered or "cuda" in lowered or "gpu" in lowered or lowered in ("dev", "rank", "local_rank"):
            return True
    return False


@dataclass(slots=True)
class ModelMoves(WalkAnalysis):
    """Every move of a model (``model.to(device)``, ``.cuda()``, ``.cpu()``) in walk order, recorded as the
    interpreter evaluates the call, whichever rules are selected: at a call, :func:`module_device` sees the moves
    evaluated before it."""

    node_types = (ast.Call,)
    by_call: dict[ast.Call, Move] = field(default_factory=dict)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        if node in self.by_call:
            return  # the first evaluation that moves a model counts
        call = ctx.call(node)
        if not isinstance(call.receiver, ModuleValue):
            return
        is_move, device, named = move_device(call, ctx)
        if is_move:
            self.by_call[node] = Move(node, device, call.receiver, ctx.function, named)


def all_moves(ctx: Context) -> list[Move]:
    """The model moves evaluated so far, in walk order (all of them once the walk is done)."""
    return list(ctx.analysis(ModelMoves).by_call.values())


def module_device(module: ModuleValue, at: ast.AST, ctx: Context) -> tuple[str | None, ast.AST | None]:
    """Where a model is when it is called at ``at``, and the move that put it there.

    The interpreter's value says so when it knows; otherwise the last move of the same model (same constructor
    call) counts only if it happened in the same function, in a statement that runs before ``at`` on every path.
    """
    if module.device is not None:
        return module.device, _last_move_node(module, ctx)
    if module.origin is None:
        return None, None
    same = [m for m in all_moves(ctx) if _same_model(m.receiver, module)]
    if not same:
        return None, None
    last = same[-1]
    statement = control_flow.statement_of(last.node, ctx.parents())
    if statement is None:
        return None, None
    if last.function is ctx.function and control_flow.dominates_in_block(statement, at, ctx.parents()):
        return last.device, last.node
    if last.function is None and ctx.function is not None:
        # Moved at module level before the function (or class) that uses it is even defined.
        outermost = [
            a
            for a in control_flow.ancestors(at, ctx.parents())
            if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ]
        if outermost and control_flow.dominates_in_block(statement, outermost[-1], ctx.parents()):
            return last.device, last.node
    return None, None


def _same_model(receiver: Value, module: ModuleValue) -> bool:
    return (
        isinstance(receiver, ModuleValue)
        and receiver.origin is not None
        and module.origin is not None
        and receiver.origin.node is module.origin.node
    )


def _last_move_node(module: ModuleValue, ctx: Context) -> ast.AST | None:
    same = [m for m in all_moves(ctx) if _same_model(m.receiver, module) and m.device == module.device]
    return same[-1].node if same else None


def moved_classes(ctx: Context) -> dict[str, ast.AST]:
    """The file's model classes whose instances are moved to a possibly-GPU device (directly or inside a moved
    model: its layers, the layers its class stores, the file's classes its ``__init__`` builds as submodules),
    each with the move. Read once the walk is done (in a rule's ``finish``)."""
    moved: dict[str, ast.AST] = {}
    for move in all_moves(ctx):
        if not (accelerated(move.device) or (move.device is None and move.device_named)):
            continue
        if isinstance(move.receiver, ModuleValue):
            _mark_moved(move.receiver, move.node, moved, ctx, 0)
    return moved


def _mark_moved(module: ModuleValue, node: ast.AST, moved: dict[str, ast.AST], ctx: Context, depth: int) -> None:
    if depth > 8:
        return
    for child in module.children:
        if child is not None:
            _mark_moved(child, node, moved, ctx, depth + 1)
    if module.user_class is None or module.user_class in moved:
        return
    moved[module.user_class] = node
    for klass in class_chain(module.user_class, ctx):
        for value in klass.attributes.values():
            if isinstance(value, ModuleValue):
                _mark_moved(value, node, moved, ctx, depth + 1)
        for name in _submodule_classes(klass, ctx):
            _mark_moved(ModuleValue("torch.nn.Module", user_class=name), node, moved, ctx, depth + 1)


_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})


def _submodule_classes(klass, ctx: Context) -> list[str]:
    """The file's model classes whose instances ``__init__`` stores in ``self.<name>`` as submodules, directly or
    inside ``nn.Sequential``/``nn.ModuleList``/``nn.ModuleDict`` (``nn.Sequential(*[Block(d) for _ in
    range(n)])``): read from the syntax, since the values may not say which layers a container holds."""
    init = klass.method("__init__")
    if init is None:
        return []
    owner = self_name(init)
    found: list[str] = []
    for node in ast.walk(init):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == owner:
            _constructed(node.value, ctx, found, in_container=False, depth=0)
    return found


def _constructed(expr: ast.expr, ctx: Context, found: list[str], in_container: bool, depth: int) -> None:
    if depth > 6:
        return
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Name) and func.id not in ctx.imports:
            info = ctx.classes.get(func.id)
            if info is not None and info.is_module:
                found.append(func.id)
            return
        if ctx.qualify(func) in _CONTAINERS:
            for arg in [*expr.args, *(k.value for k in expr.keywords if k.arg is None)]:
                _constructed(arg, ctx, found, in_container=True, depth=depth + 1)
        return
    if not in_container:
        return  # a plain list of layers is not registered: not moved with the model
    if isinstance(expr, ast.Starred):
        _constructed(expr.value, ctx, found, in_container, depth + 1)
    elif isinstance(expr, ast.List | ast.Tuple):
        for element in expr.elts:
            _constructed(element, ctx, found, in_container, depth + 1)
    elif isinstance(expr, ast.ListComp | ast.GeneratorExp):
        _constructed(expr.elt, ctx, found, in_container, depth + 1)
    elif isinstance(expr, ast.Dict):
        for value in expr.values:
            _constructed(value, ctx, found, in_container, depth + 1)
    elif isinstance(expr, ast.DictComp):
        _constructed(expr.value, ctx, found, in_container, depth + 1)


# ---------------------------------------------------------------------------------------------- modules


def has_parameters(module: ModuleValue, ctx: Context, _seen: frozenset[str] = frozenset()) -> bool:
    """True when the model provably owns parameters or buffers (so its device matters to its inputs)."""
    short = module.qualname.rsplit(".", 1)[-1]
    if module.user_class is None:
        if short == "Sequential":
            return any(child is not None and has_parameters(child, ctx, _seen) for child in module.children)
        if short not in PARAMETRIC_LAYERS or not module.qualname.startswith("torch.nn."):
            return False
        if short in ("LayerNorm", "RMSNorm") and module.arg("elementwise_affine", True) is False:
            return False
        if short == "GroupNorm" and module.arg("affine", True) is False:
            return False
        if short.startswith("BatchNorm") and module.arg("affine", True) is False:
            return module.arg("track_running_stats", True) is not False
        if short.startswith("InstanceNorm"):
            return module.arg("affine") is True or module.arg("track_running_stats") is True
        return True
    if module.user_class in _seen:
        return False
    seen = _seen | {module.user_class}
    for klass in class_chain(module.user_class, ctx):
        if klass.torch_base and klass.torch_base.rsplit(".", 1)[-1] in PARAMETRIC_LAYERS:
            return True
        for value in klass.attributes.values():
            if isinstance(value, ModuleValue) and has_parameters(value, ctx, seen):
                return True
        for node in ast.walk(klass.node):
            if isinstance(node, ast.Attribute | ast.Name):
                name = node.attr if isinstance(node, ast.Attribute) else node.id
                if name in ("Parameter", "register_buffer", "register_parameter"):
                    return True
    return False


def class_chain(name: str, ctx: Context) -> list:
    """The file's class ``name`` and its bases defined in the same file (``ClassInfo.chain``)."""
    info = ctx.classes.get(name)
    return info.chain() if info is not None else []


_DEVICE_ATTRIBUTES = frozenset({"to", "cuda", "cpu", "type", "type_as", "device", "numpy", "tolist", "item"})


def handles_devices(class_name: str, ctx: Context) -> bool:
    """True when the class's code moves tensors or mentions devices itself (then its inputs may be moved)."""
    for klass in class_chain(class_name, ctx):
        for node in ast.walk(klass.node):
            if isinstance(node, ast.Attribute) and node.attr in _DEVICE_ATTRIBUTES:
                return True
            if isinstance(node, ast.keyword) and node.arg == "device":
                return True
            if isinstance(node, ast.Name | ast.arg | ast.Attribute):
                name = node.id if isinstance(node, ast.Name) else node.arg if isinstance(node, ast.arg) else node.attr
                if "device" in name.lower():
                    return True
    return False


# ---------------------------------------------------------------------------------------------- CPU proofs


def default_device_may_change(ctx: Context) -> bool:
    """True when this file can make new tensors land somewhere else than the CPU."""
    return ctx.analysis(DefaultDeviceChange).possible


@dataclass(frozen=True, slots=True)
class DefaultDeviceChange(Analysis):
    """Whether the file may change the default device (``set_default_device``, ``with torch.device(...)``)."""

    possible: bool

    @classmethod
    def compute(cls, ctx: Context) -> DefaultDeviceChange:
        text = ctx.source.text
        if "set_default_tensor_type" in text or "set_default_device" in text:
            return cls(True)
        for node in nested_statements(ctx.tree):  # `with` is a statement: no need to visit every expression
            if isinstance(node, ast.With | ast.AsyncWith):
                for item in node.items:
                    expr = item.context_expr
                    target = expr.func if isinstance(expr, ast.Call) else expr
                    if ctx.qualify(target) == "torch.device" or _names_a_device(target):
                        return cls(True)
        return cls(False)


def on_cpu(tensor: TensorValue | None, ctx: Context) -> bool:
    """True when the tensor provably never left the CPU."""
    if tensor is None or tensor.device != CPU or default_device_may_change(ctx):
        return False
    origin = tensor.origin
    if origin is not None and "DataLoader" in origin.what:
        return _loader_on_cpu(origin.node, ctx)
    if origin is not None and isinstance(origin.node, ast.Call) and ctx.qualify(origin.node.func) == "torch.tensor":
        return _plain_data(origin.node.args[0] if origin.node.args else None, ctx)
    return True


def _plain_data(node: ast.expr | None, ctx: Context) -> bool:
    """True for data ``torch.tensor`` copies onto the CPU: numbers, lists of them, NumPy arrays, CPU tensors.

    ``torch.tensor(t)`` of a tensor ``t`` keeps ``t``'s device, so an unknown argument proves nothing.
    """
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.List | ast.Tuple):
        return all(_plain_data(e, ctx) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _plain_data(node.operand, ctx)
    value = ctx.value(node)
    if isinstance(value, TensorValue):
        return value.device == CPU
    if isinstance(node, ast.Call):
        qualname = ctx.qualify(node.func) or ""
        return qualname.startswith("numpy.")
    return False


def _loader_on_cpu(iterable: ast.AST, ctx: Context) -> bool:
    """A DataLoader batch is on the CPU when nothing handed to its dataset is on (or moved to) a device."""
    loader = ctx.value(iterable)
    dataset = getattr(loader, "arg", lambda _name: None)("dataset")
    origin = getattr(dataset, "origin", None)
    if origin is None:
        return False
    for node in ast.walk(origin.node):
        value = ctx.value(node)
        if isinstance(value, TensorValue) and value.device != CPU:
            return False
        if isinstance(node, ast.Attribute) and node.attr in ("cuda", "to"):
            return False
        if isinstance(node, ast.Name | ast.Attribute) and _names_a_device(node):
            return False
    return not ctx.analysis(MovingTransform).found


@dataclass(frozen=True, slots=True)
class MovingTransform(Analysis):
    """Whether the file has a transform that may move samples to a device: a lambda, a ``__call__`` method or a
    function handed to ``transforms.Lambda`` that calls ``.cuda()``/``.to(...)``."""

    found: bool

    @classmethod
    def compute(cls, ctx: Context) -> MovingTransform:
        functions = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        wrapped = {
            arg.id
            for n in ast.walk(ctx.tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute | ast.Name)
            for arg in n.args
            if isinstance(arg, ast.Name) and (getattr(n.func, "attr", None) or getattr(n.func, "id", "")) == "Lambda"
        }
        candidates = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Lambda)]
        candidates += [f for f in functions if f.name == "__call__" or f.name in wrapped]
        return cls(
            any(isinstance(n, ast.Attribute) and n.attr in ("cuda", "to") for c in candidates for n in ast.walk(c))
        )


# ---------------------------------------------------------------------------------------------- names for fixes


def bound_names(function: ast.AST) -> set[str]:
    """Names a function binds locally: parameters, assignments, imports, loop targets, ``global`` declarations."""
    names: set[str] = set()
    if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        arguments = function.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
            if arg is not None:
                names.add(arg.arg)
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
        stack.extend(ast.iter_child_nodes(node))
    return names


def device_variables(kinds: frozenset[str], at: ast.AST, ctx: Context) -> list[str]:
    """Plain names that hold a device of one of ``kinds`` wherever ``at`` runs, for a fix to use.

    A name assigned once, unconditionally, before ``at``: at the top of the enclosing function, or at module
    level (then no enclosing function may bind the same name).
    """
    statement = control_flow.statement_of(at, ctx.parents())
    if statement is None:
        return []
    found: list[str] = []
    function = control_flow.enclosing_function(at, ctx.parents())
    if function is not None and not isinstance(function, ast.Lambda):
        found += _assigned_devices(function.body, kinds, statement, ctx)
    enclosing = [
        f
        for f in control_flow.ancestors(at, ctx.parents())
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
    ]
    if any(isinstance(a, ast.ClassDef) for a in control_flow.ancestors(at, ctx.parents())) and not enclosing:
        return found  # a class body: module names are visible, but keep it simple
    shadowed: set[str] = set()
    for inner in enclosing:
        shadowed |= bound_names(inner)
    module_names = ctx.analysis(ModuleBindingCounts).counts
    for name in _assigned_device_names(ctx.tree.body, kinds, statement, ctx):
        if name not in shadowed and module_names.get(name) == 1:
            found.append(name)
    return found


def _assigned_devices(body: list[ast.stmt], kinds: frozenset[str], before: ast.stmt, ctx: Context) -> list[str]:
    counts: dict[str, int] = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
    return [name for name in _assigned_device_names(body, kinds, before, ctx) if counts.get(name) == 1]


def _assigned_device_names(body: list[ast.stmt], kinds: frozenset[str], before: ast.stmt, ctx: Context):
    for statement in body:
        if statement is before or not control_flow.dominates_in_block(statement, before, ctx.parents()):
            continue
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and parse_device(ctx.value(statement.value)) in kinds
        ):
            yield statement.targets[0].id


@dataclass(frozen=True, slots=True)
class ModuleBindingCounts(Analysis):
    """How many times module-level code binds each name (assignments, imports, definitions)."""

    counts: dict[str, int]

    @classmethod
    def compute(cls, ctx: Context) -> ModuleBindingCounts:
        counts: dict[str, int] = {}
        stack: list[ast.AST] = list(ctx.tree.body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                counts[node.name] = counts.get(node.name, 0) + 1
                continue  # their bodies bind their own names
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                counts[node.id] = counts.get(node.id, 0) + 1
            elif isinstance(node, ast.alias):
                name = (node.asname or node.name).split(".")[0]
                counts[name] = counts.get(name, 0) + 1
            stack.extend(ast.iter_child_nodes(node))
        return cls(counts)


def postfix_ready(node: ast.expr) -> bool:
    """True when ``.cpu()`` can be appended to the text of ``node`` without parentheses."""
    return isinstance(node, ast.Name | ast.Attribute | ast.Call | ast.Subscript)


# ---------------------------------------------------------------------------------------------- devices of results

# Tensor methods whose result stays on the receiver's device.
_DEVICE_KEEPING_METHODS = frozenset(
    """
    view view_as reshape reshape_as permute transpose t contiguous squeeze unsqueeze flatten unflatten expand
    expand_as repeat float double half bfloat16 long int bool byte detach clone sum mean prod std var norm abs exp
    log sqrt pow sigmoid tanh relu softmax log_softmax argmax argmin max min clamp round floor ceil neg
    """.split()
)


_DEVICE_KEEPING_FUNCTIONS = frozenset(
    [f"torch.{n}" for n in (_DEVICE_KEEPING_METHODS - {"view", "view_as", "reshape_as", "expand_as", "t"})]
    + [
        f"torch.nn.functional.{n}"
        for n in "softmax log_softmax sigmoid tanh relu gelu silu normalize dropout one_hot interpolate pad".split()
    ]
)


def device_of(node: ast.expr | None, ctx: Context, depth: int = 0) -> str | None:
    """The device of a tensor expression: the interpreter's answer, or what a model call proves about its output.

    A model (a torch layer with parameters, or a user model that returns a tensor and never moves tensors itself)
    that sits on a device returns its output on that device. Names are followed to the one assignment that
    reaches them on every path.
    """
    if node is None or depth > 8:
        return None
    tensor = ctx.tensor(node)
    if tensor is not None and tensor.device is not None:
        return tensor.device
    if isinstance(node, ast.Name):
        return device_of(reaching_value(node, ctx), ctx, depth + 1)
    if isinstance(node, ast.Subscript):
        return device_of(node.value, ctx, depth + 1) if tensor is not None else None
    if not isinstance(node, ast.Call):
        return None
    call = ctx.call(node)
    if call.module is not None:
        return _model_output_device(call.module, node, ctx)
    if call.method in _DEVICE_KEEPING_METHODS and isinstance(node.func, ast.Attribute):
        return device_of(node.func.value, ctx, depth + 1)
    if call.qualname in _DEVICE_KEEPING_FUNCTIONS and node.args and not isinstance(node.args[0], ast.Starred):
        return device_of(node.args[0], ctx, depth + 1)
    return None


def _model_output_device(module: ModuleValue, node: ast.Call, ctx: Context) -> str | None:
    device, _move = module_device(module, node, ctx)
    if not accelerated(device) or not has_parameters(module, ctx):
        return None
    first = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else None
    if on_cpu(ctx.tensor(first), ctx):
        return None  # the call itself fails (TL202): nothing comes out of it
    if module.user_class is None:
        short = module.qualname.rsplit(".", 1)[-1]
        return device if short not in ("LSTM", "GRU", "RNN", "MultiheadAttention", "Transformer") else None
    if handles_devices(module.user_class, ctx):
        return None
    for klass in class_chain(module.user_class, ctx):
        if any(isinstance(s, ast.FunctionDef) and s.name == "forward" for s in klass.node.body):
            return device
    return None


def reaching_value(name: ast.Name, ctx: Context) -> ast.expr | None:
    """The value of the one ``name = value`` that every path to this use of ``name`` passes last; None if unsure."""
    binding = _reaching(name, ctx)
    return binding if isinstance(binding, ast.expr) else None


def _reaching(name: ast.Name, ctx: Context) -> ast.expr | ast.For | None:
    table = ctx.parents()
    current: ast.AST | None = control_flow.statement_of(name, ctx.parents())
    while current is not None:
        parent = table.get(current)
        if parent is None or isinstance(parent, ast.ExceptHandler):
            return None
        if isinstance(parent, ast.Try) and current not in parent.body:
            return None
        block = next(
            (
                getattr(parent, f)
                for f in ("body", "orelse", "finalbody")
                if isinstance(getattr(parent, f, None), list) and current in getattr(parent, f)
            ),
            None,
        )
        if block is None:
            return None
        for previous in reversed(block[: block.index(current)]):
            if _stores(previous, name.id):
                if (
                    isinstance(previous, ast.Assign)
                    and len(previous.targets) == 1
                    and isinstance(previous.targets[0], ast.Name)
                ):
                    return previous.value
                return None
        if isinstance(parent, ast.For) and block is parent.body and _stores(parent.target, name.id):
            return parent  # each iteration binds it afresh; nothing before this use rebinds it
        if isinstance(parent, ast.For | ast.AsyncFor | ast.While) and _stores(parent, name.id):
            return None  # an earlier iteration may have rebound it
        if isinstance(parent, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            return None
        current = parent
    return None


def cpu_origin(node: ast.expr, ctx: Context) -> tuple[Related, ...]:
    """Related information for a CPU tensor: where it was created, or the DataLoader its batch comes from."""
    tensor = ctx.tensor(node)
    return ctx.related(tensor.origin) if tensor is not None else ()


def node_on_cpu(node: ast.expr | None, ctx: Context) -> bool:
    """True when the expression's tensor provably never left the CPU (its value, or a DataLoader batch)."""
    return on_cpu(ctx.tensor(node), ctx)  # the interpreter follows loaders through enumerate() and tqdm()


def _stores(node: ast.AST, name: str) -> bool:
    for inner in [node, *control_flow.walk_pruned(node)]:
        if isinstance(inner, ast.Name) and inner.id == name and isinstance(inner.ctx, ast.Store | ast.Del):
            return True
        if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and inner.name == name:
            return True
    return False


def is_number(node: ast.expr) -> bool:
    """A literal int or float, possibly negated: ``x > 0``, ``scale * 2``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool)


def layer_input(node: ast.Call, ctx: Context, torch_layers_only: bool = False) -> ast.expr | None:
    """``pos`` in ``self.embed(pos)``: the input of one of the model's own layers that has parameters
    (``torch_layers_only``: a torch layer, not a block of the file's own)."""
    call = ctx.call(node)
    func = node.func
    if (
        call.module is None
        or not isinstance(func, ast.Attribute)
        or not isinstance(func.value, ast.Name)
        or func.value.id != "self"
        or (torch_layers_only and call.module.user_class is not None)
        or not has_parameters(call.module, ctx)
    ):
        return None
    return call.arg_node(0, "input")


def move_suffix(move: ast.AST | None, anchor: ast.AST, ctx: Context) -> str | None:
    """``.cuda()`` or ``.to(device)``: the way ``move`` moved a model, spelled so it can be appended to another
    expression at ``anchor`` (a string device, or a device variable that holds the same device there)."""
    if not isinstance(move, ast.Call) or not isinstance(move.func, ast.Attribute):
        return None
    if move.func.attr == "cuda" and not move.args and not move.keywords:
        return ".cuda()"
    if move.func.attr != "to" or len(move.args) != 1 or move.keywords:
        return None
    arg = move.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return f".to({ctx.text(arg)})"
    if isinstance(arg, ast.Name):
        kind = parse_device(ctx.value(arg))
        if kind in (CUDA, ACCELERATOR, MPS) and arg.id in device_variables(frozenset({kind}), anchor, ctx):
            return f".to({arg.id})"
    return None


def self_name(function: ast.AST) -> str | None:
    """The name a method calls its instance (``self`` nearly always)."""
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    params = [*function.args.posonlyargs, *function.args.args]
    return params[0].arg if params else None


def forward_helpers(klass, ctx: Context) -> frozenset[str]:
    """Methods ``forward`` calls on its instance (``self.add_positions(h)``): they compute on its inputs too.
    Computed once per class and file: rules ask at every node they visit."""
    cache = ctx.analysis(ForwardHelpers).by_class
    found = cache.get(klass)
    if found is None:
        found = cache[klass] = _forward_helpers(klass)
    return found


@dataclass(slots=True)
class ForwardHelpers(Analysis):
    """The methods each class's ``forward`` calls on its instance (:func:`forward_helpers`), found on demand."""

    by_class: dict[ClassInfo, frozenset[str]] = field(default_factory=dict)


def _forward_helpers(klass) -> frozenset[str]:
    forward = klass.method("forward")
    if forward is None:
        return frozenset()
    instance = self_name(forward)
    return frozenset(
        node.func.attr
        for node in ast.walk(forward)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == instance
        and klass.method(node.func.attr) is not None
    )


def registered_name(node: ast.AST) -> str | None:
    """``"mask"`` for ``self.register_buffer("mask", ...)`` (or ``register_parameter``): the attribute it makes."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("register_buffer", "register_parameter")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value
    return None
