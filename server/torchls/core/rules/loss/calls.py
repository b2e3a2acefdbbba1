"""Recognising a loss computation, whichever way it is written: ``criterion(out, y)`` with
``criterion = nn.CrossEntropyLoss()``, ``nn.CrossEntropyLoss()(out, y)`` or ``F.cross_entropy(out, y)``.

Also the small helpers the loss rules share: finding the softmax/sigmoid/one_hot a loss argument was written
with (for fixes that edit it in place), the loss module's own constructor arguments, and shape formatting.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from torchls.core.facts import DTYPE_METHODS
from torchls.core.findings import Edit
from torchls.core.rules.base import Analysis, CallInfo, Context
from torchls.core.values import (
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    ONE_HOT,
    DeviceValue,
    Literal,
    ModuleValue,
    TensorValue,
    normalize_dtype,
)

# Functional loss -> the module class that computes the same thing.
FUNCTIONAL_LOSSES = {
    "torch.nn.functional.cross_entropy": "CrossEntropyLoss",
    "torch.nn.functional.nll_loss": "NLLLoss",
    "torch.nn.functional.binary_cross_entropy": "BCELoss",
    "torch.nn.functional.binary_cross_entropy_with_logits": "BCEWithLogitsLoss",
    "torch.nn.functional.mse_loss": "MSELoss",
    "torch.nn.functional.l1_loss": "L1Loss",
    "torch.nn.functional.smooth_l1_loss": "SmoothL1Loss",
    "torch.nn.functional.huber_loss": "HuberLoss",
    "torch.nn.functional.kl_div": "KLDivLoss",
}

# Losses that compare input and target element by element (a regression target of the input's shape).
REGRESSION_LOSSES = frozenset({"MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss"})
BCE_LOSSES = frozenset({"BCELoss", "BCEWithLogitsLoss"})
CLASSIFICATION_LOSSES = frozenset({"CrossEntropyLoss", "NLLLoss"})

# Keyword-or-position of each functional loss's parameters after (input, target), for reading ``reduction``...
_FUNCTIONAL_PARAMETERS = {
    "KLDivLoss": ("input", "target", "size_average", "reduce", "reduction", "log_target"),
    "BCELoss": ("input", "target", "weight", "size_average", "reduce", "reduction"),
    "BCEWithLogitsLoss": ("input", "target", "weight", "size_average", "reduce", "reduction", "pos_weight"),
}

SOFTMAX_FUNCTIONS = frozenset({"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"})
SIGMOID_FUNCTIONS = frozenset({"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"})

# Tensor methods that keep the kind of values a tensor holds (the interpreter keeps provenance through them):
# a softmax followed by ``.view(-1, C)`` or ``.float()`` is still a softmax written in the loss call.
TRANSPARENT_METHODS = frozenset(
    "view reshape squeeze unsqueeze flatten contiguous to cuda cpu float double half bfloat16 detach clone".split()
)


@dataclass(frozen=True, slots=True)
class LossCall:
    kind: str  # the module class name: CrossEntropyLoss, BCELoss...
    call: CallInfo
    input_node: ast.expr | None
    target_node: ast.expr | None
    module: ModuleValue | None  # the loss module, when called through one (its constructor arguments)
    functional: bool

    def input(self, ctx: Context) -> TensorValue | None:
        return ctx.tensor(self.input_node)

    def target(self, ctx: Context) -> TensorValue | None:
        return ctx.tensor(self.target_node)

    @property
    def label(self) -> str:
        """How the message names the loss: ``CrossEntropyLoss`` or ``F.cross_entropy``."""
        if self.functional and self.call.qualname:
            return "F." + self.call.qualname.rsplit(".", 1)[-1]
        return self.kind

    def option(self, name: str, ctx: Context) -> tuple[bool, Any]:
        """``(known, value)`` of a loss option such as ``reduction`` or ``log_target``.

        ``known`` is False when the value cannot be read (a variable, ``**kwargs``, a legacy positional); a missing
        option is known and has the value ``None`` (the caller knows the default).
        """
        if self.functional:
            node = self.call.node
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                return False, None
            parameters = _FUNCTIONAL_PARAMETERS.get(self.kind, ("input", "target"))
            if name not in parameters:
                return False, None
            value = self.call.arg(parameters.index(name), name)
            present = self.call.has_keyword(name) or len(node.args) > parameters.index(name)
            if not present:
                return True, None
            return (True, value.value) if isinstance(value, Literal) else (False, None)
        module = self.module
        if module is None:
            return False, None
        constructor = module.origin.node if module.origin is not None else None
        if not isinstance(constructor, ast.Call) or any(k.arg is None for k in constructor.keywords):
            return False, None
        if any(isinstance(a, ast.Starred) for a in constructor.args):
            return False, None
        if not module.has_arg(name):
            mentioned = any(k.arg == name for k in constructor.keywords)
            return (False, None) if mentioned else (True, None)
        value = module.arg(name)
        return (value is not None, value)


def loss_call(node: ast.Call, ctx: Context) -> LossCall | None:
    """The loss this call computes, or None when it is not a loss call we recognise."""
    call = ctx.call(node)
    module = call.module
    if module is None and call.method == "forward" and isinstance(call.receiver, ModuleValue):
        module = call.receiver  # criterion.forward(out, y)
    if (
        module is not None
        and module.qualname.startswith("torch.nn.")
        and module.qualname.endswith("Loss")
        and module.qualname.count(".") == 2
        and not _overrides_forward(module, ctx)
    ):
        kind = module.qualname.rsplit(".", 1)[-1]
        return LossCall(kind, call, call.arg_node(0, "input"), call.arg_node(1, "target"), module, False)
    if call.qualname in FUNCTIONAL_LOSSES:
        kind = FUNCTIONAL_LOSSES[call.qualname]
        return LossCall(kind, call, call.arg_node(0, "input"), call.arg_node(1, "target"), None, True)
    return None


def _overrides_forward(module: ModuleValue, ctx: Context) -> bool:
    """A user class derived from a torch loss computes what its own ``forward`` says: not the torch loss."""
    if module.user_class is None:
        return False
    klass = ctx.classes.get(module.user_class)
    if klass is None:
        return True
    return any(
        isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name in ("forward", "__call__")
        for item in klass.node.body
    )


# ---------------------------------------------------------------------------------------------- inline calls


def written_call(node: ast.expr | None, ctx: Context, kind: str) -> tuple[ast.Call, ast.expr | None] | None:
    """The ``kind`` call ("softmax", "sigmoid", "one_hot") a loss argument is written with, and that call's input.

    ``node`` itself, or its receiver through shape- and dtype-keeping methods: ``torch.sigmoid(x).squeeze(1)``
    gives the ``torch.sigmoid(x)`` call and ``x``. None when the argument is anything else.
    """
    while isinstance(node, ast.Call):
        found = _inline(node, ctx, kind)
        if found is not None:
            return node, found
        func = node.func
        call = ctx.call(node)
        if not (isinstance(func, ast.Attribute) and call.method in TRANSPARENT_METHODS):
            return None
        node = func.value
    return None


def _inline(node: ast.Call, ctx: Context, kind: str) -> ast.expr | None:
    call = ctx.call(node)
    if kind == "one_hot":
        return call.arg_node(0, "tensor") if call.qualname == "torch.nn.functional.one_hot" else None
    functions = SOFTMAX_FUNCTIONS if kind == "softmax" else SIGMOID_FUNCTIONS
    if call.qualname in functions:
        if any(k.arg in ("out", None) for k in node.keywords):
            return None  # torch.sigmoid(x, out=y) also writes y: not an expression to drop or rename
        return call.arg_node(0, "input")
    if call.qualname is None and call.method == kind and isinstance(node.func, ast.Attribute):
        receiver = ctx.value(node.func.value)
        if receiver is None or isinstance(receiver, TensorValue):
            return node.func.value
    layer = "torch.nn.Softmax" if kind == "softmax" else "torch.nn.Sigmoid"
    if call.module is not None and call.module.qualname == layer and call.module.user_class is None:
        return call.arg_node(0, "input")
    return None


def remove_call(outer: ast.expr, inner_call: ast.Call, inner_input: ast.expr | None, ctx: Context) -> Edit | None:
    """An edit that replaces ``inner_call`` (inside ``outer``) with its input, parenthesised where needed."""
    if inner_input is None:
        return None
    text = ctx.text(inner_input)
    if inner_call is not outer and not is_atomic(inner_input):
        text = f"({text})"  # it becomes the receiver of a method: (a + b).squeeze(1)
    return ctx.replace(inner_call, text)


def softmax_to_log_softmax(softmax_call: ast.Call, ctx: Context) -> Edit | None:
    """The edit that turns this softmax call into the matching log_softmax, or None when no rename is safe."""
    call = ctx.call(softmax_call)
    func = softmax_call.func
    if isinstance(func, ast.Attribute) and (call.qualname in SOFTMAX_FUNCTIONS or call.method == "softmax"):
        # F.softmax -> F.log_softmax, torch.softmax -> torch.log_softmax, x.softmax(1) -> x.log_softmax(1):
        # every one takes the same arguments (input, dim, dtype).
        return Edit(ctx.name_span(func), "log_softmax")
    if call.module is not None and isinstance(func, ast.Call):
        # nn.Softmax(dim=1)(x) -> nn.LogSoftmax(dim=1)(x); a softmax layer held in a variable may have other users.
        constructor = func.func
        if isinstance(constructor, ast.Attribute) and constructor.attr == "Softmax":
            return Edit(ctx.name_span(constructor), "LogSoftmax")
    return None


def is_atomic(node: ast.expr) -> bool:
    """An expression that needs no parentheses as the receiver of ``.method()``."""
    return isinstance(node, ast.Name | ast.Attribute | ast.Call | ast.Subscript) or (
        isinstance(node, ast.Constant) and not isinstance(node.value, int | float | complex)
    )


# ---------------------------------------------------------------------------------------------- shapes


def format_shape(shape: tuple[Any, ...]) -> str:
    """``(N, 1)`` style, with ``?`` for a size the code does not give."""
    dims = ["?" if d is None else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


# ---------------------------------------------------------------------------------------------- values


_VALUE_KEEPING_INPLACE = frozenset({"requires_grad_", "share_memory_", "detach_"})


_SHAPE_CHANGING_INPLACE = frozenset(
    {
        "squeeze_",
        "unsqueeze_",
        "resize_",
        "resize_as_",
        "t_",
        "transpose_",
        "swapaxes_",
        "swapdims_",
        "as_strided_",
        "set_",
    }
)


def reliable(node: ast.expr | None, ctx: Context, shape_only: bool = False) -> bool:
    """False when ``node`` names a variable the code may change in place, so its recorded history may be stale.

    ``out.sigmoid_()``, ``out.clamp_(0, 1)``, ``out[mask] = ...`` or ``torch.sigmoid(out, out=out)`` anywhere in the
    same function change what ``out`` holds without rebinding it; the interpreter follows rebinding only.
    ``shape_only``: only the shape and dtype matter, which item assignments and most in-place methods keep
    (``gold[:, -2:] = -100`` still leaves an int64 tensor of the same shape).
    """
    if not isinstance(node, ast.Name):
        return True
    scope: ast.AST = ctx.function if ctx.function is not None else ctx.tree
    changes = ctx.analysis(_InPlaceChanges).of(scope)
    return node.id not in (changes.shape if shape_only else changes.any)


@dataclass(slots=True)
class _ChangedNames:
    any: set[str] = field(default_factory=set)  # names some code changes in place
    shape: set[str] = field(default_factory=set)  # ... by an in-place method that may change shape or dtype


@dataclass(slots=True)
class _InPlaceChanges(Analysis):
    """For each scope (a function or the module), the names its code changes in place: indexed once per scope,
    so asking about every loss call of a long file stays linear."""

    by_scope: dict[ast.AST, _ChangedNames] = field(default_factory=dict)

    def of(self, scope: ast.AST) -> _ChangedNames:
        found = self.by_scope.get(scope)
        if found is None:
            found = self.by_scope[scope] = _changed_names(scope)
        return found


def _changed_names(scope: ast.AST) -> _ChangedNames:
    changed = _ChangedNames()
    for inner in ast.walk(scope):
        if isinstance(inner, ast.Call):
            func = inner.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.attr.endswith("_")
                and not func.attr.startswith("_")
                and func.attr not in _VALUE_KEEPING_INPLACE
            ):
                changed.any.add(func.value.id)
                if func.attr in _SHAPE_CHANGING_INPLACE:
                    changed.shape.add(func.value.id)
            for keyword in inner.keywords:
                if keyword.arg == "out" and isinstance(keyword.value, ast.Name):
                    changed.any.add(keyword.value.id)
                    changed.shape.add(keyword.value.id)
        elif (
            isinstance(inner, ast.Subscript | ast.Attribute)
            and isinstance(inner.ctx, ast.Store)
            and isinstance(inner.value, ast.Name)
        ):
            changed.any.add(inner.value.id)
    return changed


def editable_constructor(loss: LossCall, ctx: Context) -> ast.Call | None:
    """The ``nn.XxxLoss(...)`` call that built the loss module, when editing it affects this loss call only.

    That is when it is written inline (``nn.BCELoss()(x, y)``), or assigned once to a name or ``self`` attribute
    that the whole file uses exactly once: as the callee of this call.
    """
    module = loss.module
    if module is None or module.origin is None or not isinstance(module.origin.node, ast.Call):
        return None
    constructor = module.origin.node
    node = loss.call.node
    if node.func is constructor:
        return constructor
    uses = ctx.analysis(_NameUses)
    binding = uses.bound_to.get(constructor)
    if binding is None:
        return None
    if isinstance(binding, ast.Name):
        if binding.id in uses.declared:
            return None  # the same name bound another way: a parameter, an import, a global
        found = uses.names.get(binding.id, [])
    else:
        found = uses.attributes.get(binding.attr, [])
    stores = sum(isinstance(n.ctx, ast.Store) for n in found)
    loads = [n for n in found if not isinstance(n.ctx, ast.Store)]
    return constructor if stores == 1 and len(loads) == 1 and loads[0] is node.func else None


@dataclass(slots=True)
class _NameUses(Analysis):
    """Where the file uses each name and each attribute name, which names it binds other ways (parameters,
    imports, globals), and which single name or ``self`` attribute each assigned call is bound to: one walk per
    file instead of one per loss call."""

    names: dict[str, list[ast.Name]] = field(default_factory=dict)
    attributes: dict[str, list[ast.Attribute]] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)
    bound_to: dict[ast.AST, ast.Name | ast.Attribute] = field(default_factory=dict)

    @classmethod
    def compute(cls, ctx: Context) -> _NameUses:
        found = cls()
        for inner in ast.walk(ctx.tree):
            if isinstance(inner, ast.Name):
                found.names.setdefault(inner.id, []).append(inner)
            elif isinstance(inner, ast.Attribute):
                found.attributes.setdefault(inner.attr, []).append(inner)
            elif isinstance(inner, ast.arg | ast.alias | ast.Global | ast.Nonlocal):
                found.declared |= _declared(inner)
            elif isinstance(inner, ast.Assign) and len(inner.targets) == 1 and inner.value not in found.bound_to:
                target = inner.targets[0]
                on_self = isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self"
                if isinstance(target, ast.Name) or on_self:
                    found.bound_to[inner.value] = target
        return found


def _declared(node: ast.AST) -> set[str]:
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.alias):
        return {node.asname or node.name}
    if isinstance(node, ast.Global | ast.Nonlocal):
        return set(node.names)
    return set()


def rename_callee(call: ast.Call, old: str, new: str, ctx: Context, module: str) -> Edit | None:
    """``nn.BCELoss(...)`` -> ``nn.BCEWithLogitsLoss(...)``: renames the attribute when the callee is written as an
    attribute of ``module`` (so the new name resolves the same way); None for a bare imported name."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == old and ctx.qualify(func.value) == module:
        return Edit(ctx.name_span(func), new)
    return None


# Conversions that keep the value of every small integer (``bool()`` and ``byte()`` do not: 2 -> True, -1 -> 255).
_NUMBER_CONVERSIONS = frozenset({"long", "int", "short", "float", "double", "half", "bfloat16"})


def append_method(node: ast.expr, method: str, ctx: Context) -> Edit:
    """``y`` -> ``y.long()``, ``a + b`` -> ``(a + b).long()``; ``y.float()`` -> ``y.long()`` when ``y`` is known to
    hold integers (then converting once or twice gives the same values)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _NUMBER_CONVERSIONS
        and not node.args
        and not node.keywords
    ):
        receiver = ctx.value(node.func.value)
        if isinstance(receiver, TensorValue) and (receiver.dtype in INTEGER_DTYPES or receiver.dtype == "torch.bool"):
            return Edit(ctx.name_span(node.func), method)
    text = ctx.text(node)
    if not is_atomic(node):
        text = f"({text})"
    return ctx.replace(node, f"{text}.{method}()")


def target_dtype(target: TensorValue | None, node: ast.expr | None, ctx: Context) -> str | None:
    """The dtype of a loss argument, or None when the code does not prove it.

    The interpreter keeps a tensor's dtype through arithmetic with a Python number, so ``labels * 0.9`` or
    ``labels / 2`` would still read as int64; torch promotes both to float. Integer dtypes reached through such
    arithmetic (in the expression itself, or in an assignment to a name it uses) are not trusted.
    """
    if node is None:
        return None
    dtype = target.dtype if target is not None else None
    if dtype is None:
        return written_dtype(node, ctx)
    if dtype in INTEGER_DTYPES and _promoted_somewhere(node, ctx):
        return None
    return dtype


def typed_target(loss: LossCall, ctx: Context) -> TensorValue | None:
    """The loss's target as a tensor whose dtype is proven (see :func:`target_dtype`), or None.

    When the interpreter knows nothing about the target but the code spells its dtype (``labels.long()``,
    ``F.one_hot(labels, 10)``), the result is a tensor of that dtype and nothing else known.
    """
    node = loss.target_node
    target = loss.target(ctx)
    dtype = target_dtype(target, node, ctx)
    if dtype is None or node is None:
        return None
    if target is None:
        one_hot = written_call(node, ctx, "one_hot") is not None
        return TensorValue(dtype=dtype, provenance=ONE_HOT if one_hot else None)
    return target if target.dtype == dtype else target.with_(dtype=dtype)


# Methods that keep a tensor's dtype, through which ``written_dtype`` reads the dtype of their receiver.
_DTYPE_KEEPING = frozenset("view reshape squeeze unsqueeze flatten contiguous cuda cpu detach clone".split())


def written_dtype(node: ast.expr, ctx: Context) -> str | None:
    """The dtype an expression is written to have, whatever its receiver: ``y.long()``, ``y.to(torch.int32)``,
    ``F.one_hot(y, 10).to(device)`` (always int64). Only a loss argument is asked, so the value is a tensor."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        method = node.func.attr
        qualname = ctx.call(node).qualname
        if qualname == "torch.nn.functional.one_hot":
            return "torch.int64"
        if qualname is not None:
            return None
        if method in DTYPE_METHODS and not node.args and not node.keywords:
            return DTYPE_METHODS[method]
        if method == "to":
            values = [ctx.value(a) for a in node.args] + [ctx.value(k.value) for k in node.keywords]
            dtypes = [v.value for v in values if isinstance(v, Literal) and str(v.value).startswith("torch.")]
            if dtypes:
                return normalize_dtype(dtypes[-1])
            if not node.args or node.keywords or not all(_is_device(v) for v in values):
                return None  # .to(other) or .to(some_variable): may change the dtype
        elif method not in _DTYPE_KEEPING:
            return None
        node = node.func.value
    if isinstance(node, ast.Call) and ctx.call(node).qualname == "torch.nn.functional.one_hot":
        return "torch.int64"
    return None


def _is_device(value: object) -> bool:
    if isinstance(value, DeviceValue):
        return True
    return isinstance(value, Literal) and isinstance(value.value, str) and value.value.split(":")[0] in _DEVICES


_DEVICES = frozenset({"cpu", "cuda", "mps", "xpu", "meta"})


@dataclass(slots=True)
class _AssignedValues(Analysis):
    """Every value the file assigns to each name, anywhere (``x += 1`` as ``x + 1``): indexed once per file."""

    by_name: dict[str, list[ast.expr]] = field(default_factory=dict)

    @classmethod
    def compute(cls, ctx: Context) -> _AssignedValues:
        found = cls()
        for inner in ast.walk(ctx.tree):
            if isinstance(inner, ast.Assign):
                for target in inner.targets:
                    for part in ast.walk(target):
                        if isinstance(part, ast.Name):
                            found.by_name.setdefault(part.id, []).append(inner.value)
            elif isinstance(inner, ast.AugAssign) and isinstance(inner.target, ast.Name):
                found.by_name.setdefault(inner.target.id, []).append(ast.BinOp(inner.target, inner.op, inner.value))
            elif isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name) and inner.value is not None:
                found.by_name.setdefault(inner.target.id, []).append(inner.value)
        return found


def _promoted_somewhere(node: ast.expr, ctx: Context) -> bool:
    expressions: list[ast.AST] = [node]
    assigned = ctx.analysis(_AssignedValues).by_name
    for name in dict.fromkeys(n.id for n in ast.walk(node) if isinstance(n, ast.Name)):
        for value in assigned.get(name, ()):
            if value not in expressions:
                expressions.append(value)
    for expression in expressions:
        for inner in ast.walk(expression):
            if isinstance(inner, ast.BinOp) and _promotes(inner, ctx):
                return True
    return False


def _promotes(node: ast.BinOp, ctx: Context) -> bool:
    """True when this arithmetic may turn an integer tensor into a float one (``/``, ``**``, a float operand)."""
    if isinstance(node.op, ast.Div | ast.Pow):
        return True
    for side in (node.left, node.right):
        value = Literal(side.value) if isinstance(side, ast.Constant) else ctx.value(side)
        if isinstance(value, Literal) and isinstance(value.value, float):
            return True
        if isinstance(value, TensorValue) and value.dtype in FLOAT_DTYPES:
            return True
    return False
