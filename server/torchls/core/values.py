"""Abstract values of the checker's interpreter: what the code in front of us proves about tensors and modules.

Every field may be unknown (``None``). A rule reports only on what is known; the interpreter says unknown
rather than guess. Values are immutable, so they can be shared between branches and compared to merge them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Any

from torchls.core.facts import MODULE, is_module_class
from torchls.core.symbols import Sym, erase

Dim = int | None  # a known size, or unknown
Shape = tuple[Dim, ...] | None  # None: even the number of dims is unknown
SymDim = int | Sym | None  # a dim as the code names it: known, named (``t``, ``h * dh``), or unknown

# Where a tensor's values came from, when that matters to a rule.
SOFTMAX = "softmax"
LOG_SOFTMAX = "log_softmax"
SIGMOID = "sigmoid"
ONE_HOT = "one_hot"
LOGITS = "logits"  # the raw output of a Linear/Conv layer: not probabilities
LOSS = "loss"  # the value of a loss function

CPU = "cpu"
CUDA = "cuda"
# A device chosen at run time, such as ``torch.device("cuda" if torch.cuda.is_available() else "cpu")``: the
# code means "the accelerator when there is one".
ACCELERATOR = "accelerator"
MPS = "mps"
META = "meta"  # no data at all: stands in for an accelerator in code that must run without one

INTEGER_DTYPES = frozenset({"torch.int64", "torch.int32", "torch.int16", "torch.int8", "torch.uint8"})
FLOAT_DTYPES = frozenset({"torch.float32", "torch.float64", "torch.float16", "torch.bfloat16"})
DTYPE_ALIASES = {
    "torch.long": "torch.int64",
    "torch.int": "torch.int32",
    "torch.short": "torch.int16",
    "torch.float": "torch.float32",
    "torch.double": "torch.float64",
    "torch.half": "torch.float16",
}


@dataclass(frozen=True, slots=True)
class Origin:
    """The expression that gave a value its interesting property (for "related information" in diagnostics)."""

    node: ast.AST = field(compare=False, hash=False)
    what: str  # a short Chinese description: "在这里做了 softmax"


@dataclass(frozen=True, slots=True)
class TensorValue:
    shape: Shape = None
    # The known trailing dims when the rank is not known: a Linear layer's output on an input of unknown rank
    # is ``(..., out_features)``; kept only by operations that provably keep the trailing dims.
    tail: tuple[Dim, ...] | None = None
    dtype: str | None = None
    device: str | None = None
    provenance: str | None = None  # SOFTMAX, LOG_SOFTMAX, SIGMOID, ONE_HOT
    contiguous: bool | None = None
    strides: tuple[int, ...] | None = None  # known only when every dim is known
    requires_grad: bool | None = None
    is_leaf: bool | None = None
    origin: Origin | None = None
    registered: bool = False  # an nn.Parameter or a registered buffer: it moves with its module
    # The shape with the sizes the code names (``(b, t, 4, 16)``), when some dim that ``shape`` leaves unknown has
    # a name. ``shape`` stays ints-or-None, so code that knows nothing of names is unchanged; pass a shape holding
    # :class:`Sym` dims as ``shape=`` and it lands here. Dropped whenever it no longer matches ``shape``.
    symbolic: tuple[SymDim, ...] | None = None
    # Strides as products of sizes, for a tensor whose shape has names (``strides`` needs every dim known).
    sym_strides: tuple[int | Sym, ...] | None = None
    # Made by an operation under ``torch.no_grad()``/``inference_mode()`` (with ``requires_grad=False``): where.
    # Such a tensor has no graph, so ``backward()`` on it fails.
    no_graph: Origin | None = None

    def __post_init__(self) -> None:
        shape = self.shape
        if shape is not None and any(isinstance(d, Sym) for d in shape):
            object.__setattr__(self, "symbolic", shape)
            object.__setattr__(self, "shape", erase(shape))
        elif self.symbolic is not None and (shape is None or erase(self.symbolic) != shape):
            object.__setattr__(self, "symbolic", None)
        if self.sym_strides is not None and (self.symbolic is None or len(self.sym_strides) != len(self.symbolic)):
            object.__setattr__(self, "sym_strides", None)
        # torch's meaning: every tensor that does not require grad is a leaf; only an operation's result that
        # requires grad is not. "Made by an operation" alone does not prove ``is_leaf`` False.
        if self.is_leaf is False and self.requires_grad is not True:
            object.__setattr__(self, "is_leaf", True if self.requires_grad is False else None)

    @property
    def dims(self) -> tuple[SymDim, ...] | None:
        """The shape with named sizes where the code names them."""
        return self.symbolic if self.symbolic is not None else self.shape

    def with_(self, **changes: Any) -> TensorValue:
        return replace(self, **changes)

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    def trailing(self, count: int) -> tuple[Dim, ...] | None:
        """The last ``count`` dims, from the full shape or the known tail; None when not known."""
        if self.shape is not None:
            return self.shape[-count:] if len(self.shape) >= count else None
        if self.tail is not None and len(self.tail) >= count:
            return self.tail[-count:]
        return None

    def numel(self) -> int | None:
        if self.shape is None or any(d is None for d in self.shape):
            return None
        total = 1
        for d in self.shape:
            total *= d  # type: ignore[operator]
        return total


@dataclass(frozen=True, slots=True)
class ModuleValue:
    """An ``nn.Module`` instance: a torch layer with its constructor arguments, or a user model."""

    qualname: str  # torch class (torch.nn.Linear) or, for a user model, its torch base (torch.nn.Module)
    args: tuple[tuple[str, Any], ...] = ()  # constructor arguments whose values are literals, by parameter name
    children: tuple[ModuleValue | None, ...] = ()  # nn.Sequential's layers, in order
    user_class: str | None = None
    device: str | None = None
    origin: Origin | None = None
    training: bool | None = None  # train mode (True for a new module), eval mode (False), or not known

    def arg(self, name: str, default: Any = None) -> Any:
        for key, value in self.args:
            if key == name:
                return value
        return default

    def with_(self, **changes: Any) -> ModuleValue:
        return replace(self, **changes)

    def has_arg(self, name: str) -> bool:
        return any(key == name for key, _ in self.args)


@dataclass(frozen=True, slots=True)
class TupleValue:
    items: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class SequenceOf:
    """A list whose items are all like ``item``: what a loop appended to an empty list (length unknown), or a
    comprehension over a long sequence of known length (``[vocab.index(c) for c in text]``: ``length`` known)."""

    item: Any
    length: Any = None  # an int, a named size (a loader's batch), or None


@dataclass(frozen=True, slots=True)
class DictValue:
    """A dict whose keys the code spells out (``{"tokens": t, "label": y}``), with the value of each."""

    items: tuple[tuple[Any, Any], ...]  # (Python key, Value)

    def get(self, key: Any) -> Any:
        for k, value in self.items:
            if k == key:
                return value
        return None

    def with_item(self, key: Any, value: Any) -> DictValue:
        kept = tuple((k, v) for k, v in self.items if k != key)
        return DictValue((*kept, (key, value)))


@dataclass(frozen=True, slots=True)
class DeviceValue:
    """A ``torch.device`` or a device string."""

    kind: str | None  # CPU, CUDA, ACCELERATOR or None


@dataclass(frozen=True, slots=True)
class InstanceValue:
    """An instance of some other torch class we track by name (optimizer, scheduler, GradScaler, DataLoader)."""

    qualname: str
    args: tuple[tuple[str, Any], ...] = ()
    origin: Origin | None = None

    def arg(self, name: str, default: Any = None) -> Any:
        for key, value in self.args:
            if key == name:
                return value
        return default


@dataclass(frozen=True, slots=True)
class Literal:
    """A Python constant the code spells out (an int, a float, a string, a bool, None)."""

    value: Any


@dataclass(frozen=True, slots=True)
class Number:
    """A Python number whose value is not known, only its kind: the index ``__getitem__`` gets, an ``int`` parameter.

    An int may come with the bounds it is known to lie within (``low <= n <= high``): the variable of
    ``for i in range(len(x) - k)``, ``i + k`` after it.
    """

    kind: str  # "int" or "float"
    low: int | None = None
    high: int | None = None

    @property
    def bounded(self) -> bool:
        return self.low is not None and self.high is not None


@dataclass(frozen=True, slots=True)
class OfClass:
    """A value known only by its class: an instance of the torch class ``qualname`` (through the file's class
    ``user_class`` where set) and nothing more.

    ``isinstance(m, nn.Conv2d)`` in an ``if``, ``for m in model.modules()``, the same model built with other
    arguments on two paths: hover and completion can name the class, while no rule can act on it (it has no
    arguments, shape or device to check), so rules that look for :class:`ModuleValue` stay as quiet as before.
    """

    qualname: str
    user_class: str | None = None


UNKNOWN = None

Value = (
    TensorValue
    | ModuleValue
    | TupleValue
    | SequenceOf
    | DictValue
    | DeviceValue
    | InstanceValue
    | Literal
    | Number
    | OfClass
    | None
)


def parse_device(value: Value) -> str | None:
    """CPU, CUDA, ACCELERATOR, MPS or META from a ``torch.device`` value or a device string; None when not known."""
    if isinstance(value, DeviceValue):
        return value.kind
    if isinstance(value, Literal) and isinstance(value.value, str):
        text = value.value
        if text == "cuda" or text.startswith("cuda:"):
            return CUDA
        if text in (CPU, MPS, META):
            return text
    return None


def normalize_dtype(name: str | None) -> str | None:
    if name is None:
        return None
    return DTYPE_ALIASES.get(name, name)


def merge(a: Value, b: Value) -> Value:
    """The value a name has after two branches: kept only where both agree."""
    if a == b:
        return a
    if (
        isinstance(a, ModuleValue)
        and isinstance(b, ModuleValue)
        and a.with_(device=None, training=None) == b.with_(device=None, training=None)
    ):
        # the same module, moved or put in eval mode on one path only
        return a.with_(
            device=a.device if a.device == b.device else None, training=a.training if a.training == b.training else None
        )
    if isinstance(a, TensorValue) and isinstance(b, TensorValue):
        shape = None
        if a.shape is not None and b.shape is not None and len(a.shape) == len(b.shape):
            shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape, strict=True))
        return TensorValue(
            shape=shape,
            dtype=a.dtype if a.dtype == b.dtype else None,
            device=a.device if a.device == b.device else None,
            provenance=a.provenance if a.provenance == b.provenance else None,
            contiguous=a.contiguous if a.contiguous == b.contiguous else None,
        )
    if isinstance(a, ModuleValue | OfClass) and isinstance(b, ModuleValue | OfClass):
        return common_class(a, b)
    if isinstance(a, Number) and isinstance(b, Number) and a.kind == b.kind:
        if a.bounded and b.bounded:
            return Number(a.kind, min(a.low, b.low), max(a.high, b.high))  # type: ignore[type-var]
        return Number(a.kind)
    return None


def common_class(a: ModuleValue | OfClass, b: ModuleValue | OfClass) -> OfClass | None:
    """The class two values share: the same class of the file, the same torch class, else any module where both
    are modules (an optimizer and a module share nothing worth naming)."""
    if a.user_class is not None and a.user_class == b.user_class:
        return OfClass(a.qualname, a.user_class)
    if a.user_class is None and b.user_class is None and a.qualname == b.qualname:
        return OfClass(a.qualname)
    if _is_module(a) and _is_module(b):
        return OfClass(MODULE)
    return None


def _is_module(value: ModuleValue | OfClass) -> bool:
    return isinstance(value, ModuleValue) or value.qualname == MODULE or is_module_class(value.qualname)
