"""The checker's abstract interpreter: one walk over a file that evaluates values and dispatches to rules.

Statements are evaluated in order, scope by scope, so a name's value is the one the straight-line code gives
it. After a branch or a loop, a name keeps its value only where every path agrees (:func:`values.merge`).
Methods of a class see ``self.x`` as what ``__init__`` assigned, and a user model's call returns what its
``forward`` returns. Whatever is not modelled here is unknown, and rules say nothing about unknown values.

Every expression node is evaluated exactly once; after a node is evaluated, the rules registered for its type
are called, so a rule reads the values of the node's parts from :class:`~torchls.core.rules.base.Context`.
"""

from __future__ import annotations

import ast
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from torchls.core import facts, layers, modes, shapes, symbols
from torchls.core.annotation_values import annotation_value
from torchls.core.facts import CREATION_FUNCTIONS, DTYPE_METHODS
from torchls.core.rules.base import CallInfo, Context, Rule
from torchls.core.statements import assigned_names, self_attributes_assigned, target_names
from torchls.core.values import (
    ACCELERATOR,
    CPU,
    CUDA,
    INTEGER_DTYPES,
    LOG_SOFTMAX,
    LOGITS,
    LOSS,
    ONE_HOT,
    SIGMOID,
    SOFTMAX,
    DeviceValue,
    DictValue,
    InstanceValue,
    Literal,
    ModuleValue,
    Number,
    OfClass,
    Origin,
    SequenceOf,
    TensorValue,
    TupleValue,
    Value,
    merge,
    normalize_dtype,
    parse_device,
)

log = logging.getLogger(__name__)

Env = dict[str, Value]

DTYPE_NAMES = frozenset(
    "torch." + n
    for n in "float32 float float64 double float16 half bfloat16 int64 long int32 int int16 short int8 uint8 bool "
    "complex64 complex128".split()
)

# Constructor parameters of the layers whose arguments rules read, in positional order.
LAYER_PARAMETERS: dict[str, tuple[str, ...]] = {
    "Linear": ("in_features", "out_features", "bias"),
    "LazyLinear": ("out_features", "bias"),
    "Bilinear": ("in1_features", "in2_features", "out_features", "bias"),
    "Conv1d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"),
    "Conv2d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"),
    "Conv3d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"),
    "ConvTranspose1d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding"),
    "ConvTranspose2d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding"),
    "BatchNorm1d": ("num_features", "eps", "momentum", "affine", "track_running_stats"),
    "BatchNorm2d": ("num_features", "eps", "momentum", "affine", "track_running_stats"),
    "BatchNorm3d": ("num_features", "eps", "momentum", "affine", "track_running_stats"),
    "InstanceNorm1d": ("num_features",),
    "InstanceNorm2d": ("num_features",),
    "LayerNorm": ("normalized_shape", "eps", "elementwise_affine"),
    "GroupNorm": ("num_groups", "num_channels", "eps", "affine"),
    "Embedding": ("num_embeddings", "embedding_dim", "padding_idx"),
    "EmbeddingBag": ("num_embeddings", "embedding_dim", "max_norm", "norm_type", "scale_grad_by_freq", "mode"),
    "LSTM": ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional"),
    "GRU": ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional"),
    "RNN": ("input_size", "hidden_size", "num_layers", "nonlinearity", "bias", "batch_first", "dropout"),
    "MultiheadAttention": (
        "embed_dim",
        "num_heads",
        "dropout",
        "bias",
        "add_bias_kv",
        "add_zero_attn",
        "kdim",
        "vdim",
        "batch_first",
    ),
    "MaxPool1d": ("kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"),
    "MaxPool2d": ("kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"),
    "AvgPool1d": ("kernel_size", "stride", "padding", "ceil_mode"),
    "AvgPool2d": ("kernel_size", "stride", "padding", "ceil_mode"),
    "AdaptiveAvgPool1d": ("output_size",),
    "AdaptiveAvgPool2d": ("output_size",),
    "AdaptiveMaxPool2d": ("output_size",),
    "Flatten": ("start_dim", "end_dim"),
    "Softmax": ("dim",),
    "LogSoftmax": ("dim",),
    "Dropout": ("p", "inplace"),
    "Dropout2d": ("p", "inplace"),
    "CrossEntropyLoss": ("weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing"),
    "NLLLoss": ("weight", "size_average", "ignore_index", "reduce", "reduction"),
    "BCELoss": ("weight", "size_average", "reduce", "reduction"),
    "BCEWithLogitsLoss": ("weight", "size_average", "reduce", "reduction", "pos_weight"),
    "MSELoss": ("size_average", "reduce", "reduction"),
    "L1Loss": ("size_average", "reduce", "reduction"),
    "SmoothL1Loss": ("size_average", "reduce", "reduction", "beta"),
    "HuberLoss": ("reduction", "delta"),
    "KLDivLoss": ("size_average", "reduce", "reduction", "log_target"),
}

# Elementwise maths whose result is floating even for an integer input (torch.sqrt(int tensor) is float32).
FLOATING_ELEMENTWISE = frozenset(
    "exp expm1 log log1p log2 log10 sqrt rsqrt sin cos tan sinh cosh asin acos atan erf erfc reciprocal".split()
)
SAME_SHAPE_FUNCTIONS = (
    frozenset(
        "torch.nn.functional." + n
        for n in "relu relu6 leaky_relu gelu silu elu selu mish softplus hardswish hardsigmoid tanh dropout "
        "dropout1d dropout2d normalize layer_norm group_norm batch_norm".split()
    )
    | frozenset("torch." + n for n in "relu tanh abs neg square sign clamp clip triu tril flip".split())
    | frozenset("torch." + n for n in FLOATING_ELEMENTWISE)
)
SAME_SHAPE_METHODS = (
    frozenset(
        "relu tanh abs neg square sign clamp clip clamp_ clip_ abs_ relu_ add_ sub_ mul_ div_ pow_ "
        "zero_ fill_ normal_ uniform_ masked_fill masked_fill_ neg_ exp_ sqrt_ tanh_ sigmoid_ copy_ round floor ceil "
        "detach_ contiguous_ float_ nan_to_num triu tril flip pow index_add index_add_ index_fill index_fill_ "
        "index_copy index_copy_ scatter scatter_ scatter_add scatter_add_ masked_scatter masked_scatter_".split()
    )
    | FLOATING_ELEMENTWISE
)
INPLACE_METHODS = frozenset(
    "add_ sub_ mul_ div_ pow_ zero_ fill_ normal_ uniform_ masked_fill_ clamp_ clip_ abs_ relu_ neg_ exp_ sqrt_ "
    "tanh_ sigmoid_ copy_ addcmul_ addcdiv_ mul_ index_fill_ scatter_ scatter_add_ exponential_ random_ "
    "bernoulli_".split()
)
REDUCTIONS = frozenset("sum mean prod std var amax amin nansum nanmean logsumexp norm".split())
ARG_REDUCTIONS = frozenset({"argmax", "argmin"})
LOSS_FUNCTIONS = frozenset(
    "torch.nn.functional." + n
    for n in "cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy "
    "binary_cross_entropy_with_logits kl_div cosine_embedding_loss margin_ranking_loss".split()
)
PROVENANCE_FUNCTIONS = frozenset(
    "torch." + n
    for n in "softmax log_softmax sigmoid nn.functional.softmax nn.functional.log_softmax nn.functional.sigmoid "
    "special.softmax special.log_softmax special.expit".split()
)
PROVENANCE_METHODS = frozenset({"softmax", "log_softmax", "sigmoid"})
# nn.Module has float()/double()/half()/bfloat16() too: only long() says "this is a tensor" by itself.
TENSOR_ONLY_CONVERSIONS = frozenset({"long"})
SHAPE_METHODS = frozenset(
    "view reshape permute transpose squeeze unsqueeze flatten expand repeat size sum mean amax amin argmax argmin "
    "max min softmax log_softmax".split()
)
TRACKED_CLASSES = (
    "torch.optim.",
    "torch.utils.data.DataLoader",
    "torch.amp.GradScaler",
    "torch.cuda.amp.GradScaler",
    "torch.utils.data.TensorDataset",
)


@dataclass(slots=True, eq=False)  # identity: one per class statement
class ClassInfo:
    """A class defined in the file: its torch base, what ``__init__`` assigns to ``self``, what ``forward`` returns."""

    node: ast.ClassDef
    torch_base: str | None
    attributes: dict[str, Value] = field(default_factory=dict)
    unstable: set[str] = field(default_factory=set)  # assigned outside __init__ or more than once
    forward_return: Value = None
    bases: tuple[ClassInfo, ...] = ()  # the file's own classes this one derives from, nearest first
    class_attributes: dict[str, Value] = field(default_factory=dict)  # assigned in the class body
    fields: tuple[str, ...] | None = None  # a dataclass's fields, in order (None: not a dataclass)
    # Constructor arguments -> what __init__ (and the bases' __init__ it calls) assigned to self for them.
    instances: dict[tuple, dict[str, Value]] = field(default_factory=dict)
    _moves: bool | None = None
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    # Every value assigned to ``self.name`` (or registered as a buffer) anywhere, in or out of ``__init__``.
    assigned: dict[str, list[Value]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def is_module(self) -> bool:
        return bool(self.torch_base and self.torch_base.startswith("torch.nn."))

    def chain(self) -> list[ClassInfo]:
        """This class, then the file's classes it derives from (depth first, each once)."""
        seen: list[ClassInfo] = []
        stack = [self]
        while stack:
            klass = stack.pop(0)
            if klass not in seen:
                seen.append(klass)
                stack.extend(klass.bases)
        return seen

    @property
    def moves_to_device(self) -> bool:
        """The class's code calls ``.cuda()`` or ``.to(...)``: what it makes may not stay where its input is."""
        if self._moves is None:
            self._moves = _moves_to_device(self.node)
        return self._moves

    def is_unstable(self, name: str) -> bool:
        return any(name in klass.unstable for klass in self.chain())

    def attribute(self, name: str) -> Value:
        """What ``__init__`` (this class's or an inherited one) assigns to ``self.name`` for any arguments."""
        if self.is_unstable(name):
            return None
        for klass in self.chain():
            if name in klass.attributes:
                return klass.attributes[name]
        for klass in self.chain():
            if name in klass.class_attributes:
                return klass.class_attributes[name]
        return None

    def attribute_class(self, name: str) -> Value:
        """The class every value ever assigned to ``self.name`` shares (a tensor, a module): what holds wherever an
        attribute that is assigned more than once is read, though not which of its values it has there."""
        values = [value for klass in self.chain() for value in klass.assigned.get(name, ())]
        if not values:
            return None
        result = _class_only(values[0])
        for value in values[1:]:
            result = merge(result, _class_only(value))
        return result

    def instance_attributes(self, arguments: tuple) -> dict[str, Value] | None:
        """What ``self`` holds in an instance built with ``arguments``, once the interpreter has built one."""
        try:
            return self.instances.get(arguments) if arguments else None
        except TypeError:
            return None

    def method(self, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for klass in self.chain():
            if name in klass.methods:
                return klass.methods[name]
        return None


def _literal(value: Value) -> Any:
    """A Python value from a literal abstract value (ints, floats, strings, bools, tuples of them)."""
    if isinstance(value, Literal):
        return value.value
    if isinstance(value, TupleValue):
        items = [_literal(v) for v in value.items]
        return None if any(i is None for i in items) else tuple(items)
    return None


def _int(value: Value) -> int | None:
    literal = _literal(value)
    return literal if isinstance(literal, int) and not isinstance(literal, bool) else None


def _dims(values: Sequence[Value]) -> list[int | None] | None:
    """Sizes from ``view(2, -1)`` or ``view((2, -1))``: ints, ``None`` for unknown ones.

    None when even the number of dims is unknown: a single argument that is not a literal int may be a whole
    shape (``view(shape)``, ``zeros(x.shape)``).
    """
    if len(values) == 1:
        only = values[0]
        if isinstance(only, TupleValue):
            values = only.items
        elif _int(only) is None:
            return None
    if any(isinstance(v, TupleValue) for v in values):
        return None
    return [_int(v) for v in values]


def _size_dims(values: Sequence[Value]) -> list[Any] | None:
    """Like :func:`_dims`, keeping the sizes the code names (``view(b, t, h * dh)``)."""
    if len(values) == 1 and isinstance(values[0], TupleValue):
        values = values[0].items
    if len(values) == 1 and not isinstance(_literal(values[0]), int | symbols.Sym):
        return None
    if any(isinstance(v, TupleValue) for v in values):
        return None
    out = []
    for v in values:
        literal = _literal(v)
        out.append(literal if symbols.is_size(literal) else None)
    return out


class Interpreter:
    def __init__(self, ctx: Context, dispatch: dict[type[ast.AST], list[Rule]]) -> None:
        self.ctx = ctx
        self.dispatch = dispatch
        self.module_env: Env = {}
        self.stable_globals: set[str] = set()
        self.classes: dict[str, ClassInfo] = {}
        self.default_device_changed = False
        self._expr_table: dict[type[ast.AST], Callable[[Any, Env], Value]] = {
            ast.Name: self._name,
            ast.Constant: self._constant,
            ast.Tuple: self._sequence,
            ast.List: self._sequence,
            ast.Attribute: self._attribute,
            ast.Call: self._call,
            ast.BinOp: self._binop,
            ast.UnaryOp: self._unaryop,
            ast.Subscript: self._subscript,
            ast.IfExp: self._ifexp,
            ast.NamedExpr: self._namedexpr,
            ast.JoinedStr: self._joinedstr,
            ast.Compare: self._compare,
            ast.BoolOp: self._boolop,
            ast.Dict: self._dict,
        }
        self._stmt_table: dict[type[ast.AST], Callable[[Any, Env], None]] = {
            ast.Assign: self._assign,
            ast.AugAssign: self._augassign,
            ast.AnnAssign: self._annassign,
            ast.Expr: lambda node, env: self._discard(self.expr(node.value, env)),
            ast.Return: self._return,
            ast.If: self._if,
            ast.Assert: self._assert,
            ast.For: self._for,
            ast.AsyncFor: self._for,
            ast.While: self._while,
            ast.With: self._with,
            ast.AsyncWith: self._with,
            ast.Try: self._try,
            ast.FunctionDef: self._function,
            ast.AsyncFunctionDef: self._function,
            ast.ClassDef: self._class,
        }
        self._returns: list[Value] | None = None
        # `self.x` reads of attributes assigned more than once, and the one being read: see _settle_unstable_reads.
        self._unstable_reads: list[tuple[ast.AST | None, ClassInfo, str]] = []
        self._reading: ast.AST | None = None
        # Calls of the file's own functions and methods: see :meth:`_call_function`.
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self._defaults: dict[ast.AST, dict[str, Value]] = {}
        self._generic_returns: dict[ast.AST, Value] = {}
        self._specialised: dict[tuple, Value] = {}
        self._active: list[ast.AST] = []  # the functions being evaluated for a call, innermost last
        self._budget = _SPECIALISATION_BUDGET
        self._attribute_sink: dict[str, Value] | None = None  # where `self.x = ...` in __init__ goes
        self._depth = 0  # how many specialised evaluations are running, one inside the other
        # Named sizes (``b, t, d = x.shape``): the names the code gives a shape's dims where it reads them.
        self._dim_names: dict[ast.AST, dict[int, str]] = {}
        self._first_iterations = 0  # loops whose first iteration is being evaluated, one inside the other
        self._carrying_loops: dict[ast.AST, bool] = {}  # loops whose body reads a value an earlier iteration set
        self._unpacked_shapes: set[ast.AST] = set()  # ``b, t, d = x.shape``: the reads that also give the rank
        # A loader's batch size whose last batch is shorter: (batch_size, len(dataset)).
        self._partial_batches: dict[symbols.Sym, tuple[int, int]] = {}
        self._unroll_budget = _UNROLL_BUDGET
        self._mode_effects: dict[ast.AST, dict[str, bool | None]] = {}
        # When set, what specialised evaluations found for each node, merged over every call (see core/values_at)
        self.call_values: dict[ast.AST, Value] | None = None

    @staticmethod
    def _discard(_value: Value) -> None:
        return None

    # ------------------------------------------------------------------------------------------ driver

    def run(self, tree: ast.Module) -> None:
        counts: dict[str, int] = {}
        for stmt in tree.body:
            for target in assigned_names(stmt):
                counts[target] = counts.get(target, 0) + 1
        self.stable_globals = {name for name, count in counts.items() if count == 1}
        self.functions = {
            stmt.name: stmt
            for stmt in tree.body
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name in self.stable_globals
        }
        text = self.ctx.source.text
        self.default_device_changed = "set_default_device" in text or "set_default_tensor_type" in text
        self.ctx.classes = self.classes
        self.ctx.tree = tree
        self.block(tree.body, self.module_env)
        self._settle_unstable_reads()

    def _settle_unstable_reads(self) -> None:
        """Reads of attributes assigned more than once (``self.head`` that ``reset_classifier`` replaces) learn,
        once the whole file is walked, the class all their values share: for hover, after the rules have run."""
        values = self.ctx.values
        collected = self.call_values
        for node, klass, name in self._unstable_reads:
            if node is None or values.get(node) is not None or (collected is not None and collected.get(node)):
                continue
            shared = klass.attribute_class(name)
            if shared is not None:
                values[node] = shared

    def _visit_rules(self, node: ast.AST) -> None:
        rules = self.dispatch.get(type(node))
        if not rules:
            return
        for rule in rules:
            self.ctx._current = rule
            try:
                rule.visit(node, self.ctx)
            except Exception:  # a rule bug must not cost the other rules or the editor
                log.exception("rule %s failed at line %s", rule.code, getattr(node, "lineno", "?"))
        self.ctx._current = None

    def block(self, statements: Sequence[ast.stmt], env: Env) -> None:
        for statement in statements:
            self.stmt(statement, env)

    def stmt(self, node: ast.stmt, env: Env) -> None:
        handler = self._stmt_table.get(type(node))
        if handler is not None:
            handler(node, env)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child, env)
                elif isinstance(child, ast.stmt):
                    self.stmt(child, env)
        self._visit_rules(node)

    def expr(self, node: ast.expr, env: Env) -> Value:
        kind = type(node)
        handler = self._expr_table.get(kind)
        value = handler(node, env) if handler is not None else self._generic(node, env)
        if value is not None:
            self.ctx.values[node] = value
        if kind in self.dispatch:  # inline test: this runs for every expression in the file
            self._visit_rules(node)
        return value

    def _generic(self, node: ast.AST, env: Env) -> Value:
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.DictComp) and len(node.generators) == 1:
            unrolled = self._unrolled_comprehension(node, env)
            if unrolled is not None:
                return unrolled
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            inner = dict(env)
            for generator in node.generators:
                # `[model(x) for x, _ in loader]`: the loop variables are what iterating gives, as in a for loop
                iterable = self.expr(generator.iter, inner)
                for name in _comprehension_names(generator):
                    inner[name] = None
                self.bind(generator.target, self._iteration(iterable, generator.iter), inner)
                for condition in generator.ifs:
                    self.expr(condition, inner)
            parts = [
                self.expr(part, inner)
                for part in ((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,))
            ]
            if isinstance(node, ast.ListComp | ast.GeneratorExp) and parts[0] is not None:
                # every item is what the element is with the loop variables as iterating gives them
                return SequenceOf(parts[0])
            return None
        if isinstance(node, ast.Lambda):
            inner = dict(env)
            for arg in node.args.args:
                inner[arg.arg] = None
            for child in ast.iter_child_nodes(node):
                self._walk_child(child, inner)
            return None
        for child in ast.iter_child_nodes(node):
            self._walk_child(child, env)
        return None

    def _unrolled_comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.DictComp, env: Env) -> Value:
        """``[Block(d) for _ in range(depth)]`` over a short known sequence: the list of what each item gives
        (``{k: f(v) for k, v in d.items()}``: the dict, when every key is a literal)."""
        generator = node.generators[0]
        if generator.ifs or generator.is_async:
            return None
        items = _known_items(self.expr(generator.iter, env))
        if items is None or not 0 < len(items) <= _UNROLL_ITEMS or self._unroll_budget < len(items):
            return None
        self._unroll_budget -= len(items)
        results = []
        keys: list[Value] = []
        for item in items:
            inner = dict(env)
            self.bind(generator.target, item, inner)
            if isinstance(node, ast.DictComp):
                keys.append(self.expr(node.key, inner))
                results.append(self.expr(node.value, inner))
            else:
                results.append(self.expr(node.elt, inner))
        if isinstance(node, ast.DictComp):
            if not all(isinstance(k, Literal) for k in keys):
                return None
            return DictValue(tuple((k.value, v) for k, v in zip(keys, results, strict=True)))  # type: ignore[union-attr]
        return TupleValue(tuple(results))

    def _walk_child(self, child: ast.AST, env: Env) -> None:
        if isinstance(child, ast.expr):
            self.expr(child, env)
        elif isinstance(child, ast.comprehension | ast.keyword | ast.arguments | ast.arg):
            self._generic(child, env)

    # ------------------------------------------------------------------------------------------ statements

    def _assign(self, node: ast.Assign, env: Env) -> None:
        if len(node.targets) == 1:
            self._note_dim_names(node.targets[0], node.value)
        value = self.expr(node.value, env)
        for target in node.targets:
            self.bind(target, value, env)

    def _note_dim_names(self, target: ast.expr, value: ast.expr) -> None:
        """``b, t, d = x.shape`` / ``t = x.size(1)``: the names the code gives the dims it reads."""
        if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            if _reads_shape(value) and not (isinstance(value, ast.Call) and value.args):
                self._dim_names[value] = {i: e.id for i, e in enumerate(target.elts)}  # type: ignore[attr-defined]
                self._unpacked_shapes.add(value)
        elif isinstance(target, ast.Name):
            if isinstance(value, ast.Subscript) and _reads_shape(value.value) and isinstance(value.slice, ast.Constant):
                if isinstance(value.slice.value, int):
                    self._dim_names[value.value] = {value.slice.value: target.id}
            elif _reads_shape(value) and isinstance(value, ast.Call) and len(value.args) == 1:
                index = value.args[0]
                if isinstance(index, ast.Constant) and isinstance(index.value, int):
                    self._dim_names[value] = {index.value: target.id}

    def _forward_input(self, holder: ast.expr, reader: ast.AST) -> bool:
        """``holder`` is a parameter of a module's ``forward`` that no call gave a value, its shape unpacked."""
        function, klass = self.ctx.function, self.ctx.klass
        if not isinstance(holder, ast.Name) or function is None or function.name != "forward" or klass is None:
            return False
        parameters = [a.arg for a in (*function.args.posonlyargs, *function.args.args)][1:]
        return reader in self._unpacked_shapes and holder.id in parameters and klass.is_module

    def _named_tensor(self, holder: ast.expr, reader: ast.AST, tensor: TensorValue, env: Env) -> TensorValue:
        """``tensor`` with a name for each dim it leaves unknown, where the code reads its shape (``x.shape``,
        ``x.size(1)``). The name is the code's (``t`` in ``b, t, d = x.shape``) or the expression itself; a
        plain variable is refined in place, so later uses of ``x`` share the names."""
        names = self._dim_names.get(reader, {})
        dims = tensor.dims
        if dims is None:
            if reader not in self._unpacked_shapes:
                return tensor
            count = len(names)
            tail = tensor.tail or ()
            if count < len(tail):
                return tensor
            dims = (None,) * (count - len(tail)) + tuple(tail)  # b, t, d = x.shape: x has 3 dims
        if all(d is not None for d in dims):
            return tensor
        rank = len(dims)
        text = self.ctx.text(holder)
        named = []
        for index, d in enumerate(dims):
            if d is None:
                name = names.get(index) or names.get(index - rank) or f"{text}.shape[{index}]"
                # The same line reading the same abstract tensor names the same size (a memoised call and a
                # fresh evaluation of it agree); another tensor, or another line, names another one.
                key = hash((getattr(reader, "lineno", 0), getattr(reader, "col_offset", 0), index, tensor))
                d = symbols.Sym.named(name, key)
            named.append(d)
        refined = tensor.with_(shape=tuple(named), tail=None)
        if refined.contiguous and refined.strides is None and shapes.sized(refined.dims):
            refined = refined.with_(sym_strides=shapes.contiguous_named(refined.dims))  # type: ignore[arg-type]
        if isinstance(holder, ast.Name) and env.get(holder.id) in (tensor, None):
            env[holder.id] = refined
        return refined

    def _augassign(self, node: ast.AugAssign, env: Env) -> None:
        if isinstance(node.target, ast.Name):
            current = self._load(node.target.id, env)
            if current is not None:
                self.ctx.values[node.target] = current
        else:
            current = self.expr(node.target, env)
        other = self.expr(node.value, env)
        result = self._arithmetic(current, other, node.op, node)
        if isinstance(current, TensorValue) and isinstance(result, TensorValue):
            # `w -= x` on a tensor is in place: still the same (leaf) tensor, now with other values.
            result = result.with_(is_leaf=current.is_leaf, origin=current.origin, requires_grad=current.requires_grad)
        if isinstance(node.target, ast.Name):
            env[node.target.id] = result

    def _annassign(self, node: ast.AnnAssign, env: Env) -> None:
        if node.value is not None:
            self.bind(node.target, self.expr(node.value, env), env)
        elif isinstance(node.target, ast.Name):
            env[node.target.id] = self._annotation(node.annotation)

    def _return(self, node: ast.Return, env: Env) -> None:
        value = self.expr(node.value, env) if node.value is not None else None
        if self._returns is not None:
            self._returns.append(value)

    def _if(self, node: ast.If, env: Env) -> None:
        test = self.expr(node.test, env)
        body, orelse = dict(env), dict(env)
        body.update(self._narrowed(node.test, env))
        self.block(node.body, body)
        self.block(node.orelse, orelse)
        if isinstance(test, Literal) and not isinstance(node.test, ast.Constant):
            # A test the code decides (`if i == 0` in an unrolled loop): only that branch runs. Both were walked
            # for the rules; a literal `if True:`/`if 0:` is left to merging, as authors toggle those by hand.
            env.update(body if test.value else orelse)
            for name in set(env) - set(body if test.value else orelse):
                env.pop(name)
            return
        _merge_into(env, body, orelse)

    def _assert(self, node: ast.Assert, env: Env) -> None:
        self.expr(node.test, env)
        if node.msg is not None:
            self.expr(node.msg, env)
        env.update(self._narrowed(node.test, env))  # past `assert isinstance(m, nn.Conv2d)`, m is one

    def _narrowed(self, test: ast.expr, env: Env) -> Env:
        """What ``if isinstance(m, nn.Conv2d):`` (alone or in an ``and``) proves about names in its body."""
        tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        narrowed: Env = {}
        for check in tests:
            if not (
                isinstance(check, ast.Call)
                and isinstance(check.func, ast.Name)
                and check.func.id == "isinstance"
                and "isinstance" not in env
                and len(check.args) == 2
                and isinstance(check.args[0], ast.Name)
            ):
                continue
            name, classes = check.args[0].id, check.args[1]
            value = self._instance_of(classes.elts if isinstance(classes, ast.Tuple) else [classes])
            current = env.get(name)
            if value is not None and not _at_least_as_precise(current, value):
                narrowed[name] = value
        return narrowed

    def _instance_of(self, classes: Sequence[ast.expr]) -> Value:
        """An instance of one of ``classes`` (torch classes or the file's modules), where they share a class."""
        found: list[Value] = []
        for cls in classes:
            qualname = self.ctx.qualify(cls)
            if qualname is not None and facts.ATTRIBUTE_BASES.get(qualname, qualname) == facts.TENSOR:
                found.append(TensorValue())
            elif qualname is not None and (facts.is_module_class(qualname) or qualname == facts.MODULE):
                found.append(OfClass(qualname))
            elif isinstance(cls, ast.Name) and cls.id in self.classes and self.classes[cls.id].torch_base:
                found.append(OfClass(self.classes[cls.id].torch_base or "", cls.id))
            elif qualname is not None and qualname.startswith("torch."):
                found.append(OfClass(qualname))  # an optimizer, a device...: only its class is proved
            else:
                return None
        if not found:
            return None
        result = found[0]
        for other in found[1:]:
            result = merge(result, other)
        return result

    def _loop_env(self, node: ast.AST, env: Env) -> Env:
        """The env a loop body starts with: names the loop assigns are unknown, as after any iteration."""
        inner = dict(env)
        for name in assigned_names(node):
            inner[name] = None
        return inner

    def _for(self, node: ast.For | ast.AsyncFor, env: Env) -> None:
        iterable = self.expr(node.iter, env)
        items = self._unrolled_items(iterable, node)
        if items is not None:
            # A short loop over a sequence the code spells out runs once per item, in order: its body sees
            # each item (a stage's width, a layer to append) rather than "one of them".
            self._unroll_budget -= len(items)
            for item in items:
                self.bind(node.target, item, env)
                self.block(node.body, env)
            self.block(node.orelse, env)
            return
        item = self._iteration(iterable, node.iter)
        self._first_iteration(node, env, lambda first: self.bind(node.target, item, first))
        inner = self._loop_env(node, env)
        self.bind(node.target, item, inner)
        sink = self._init_attribute_sink()
        before = dict(sink) if sink is not None else None
        self.block(node.body, inner)
        self.block(node.orelse, inner)
        _accumulated_lists(env, inner)
        if sink is not None and before is not None:
            _accumulated_lists(before, sink)  # self.samples = [] ... self.samples.append(...) in __init__
            sink.update({name: before[name] for name in before if isinstance(before[name], SequenceOf)})
        _merge_into(env, env, inner)

    def _first_iteration(self, node: ast.For | ast.AsyncFor | ast.While, env: Env, start: Callable) -> None:
        """The loop body once more, as its first iteration runs: with the values from before the loop, which the
        general pass forgets for every name the loop assigns (``h`` in ``logits, h = step(token, h)``). What it
        proves holds whenever the loop runs at all; its env is dropped. Two levels of loops at most."""
        if self._first_iterations >= 2:
            return
        carries = self._carrying_loops.get(node)
        if carries is None:
            carries = self._carrying_loops[node] = _carries_values(node)
        if not carries:
            return
        first = dict(env)
        sink = self._init_attribute_sink()
        kept = dict(sink) if sink is not None else None
        self._first_iterations += 1
        try:
            start(first)
            self.block(node.body, first)
        finally:
            self._first_iterations -= 1
            if sink is not None and kept is not None:  # what it stored on the instance goes with its env
                sink.clear()
                sink.update(kept)

    def _unrolled_items(self, iterable: Value, node: ast.For | ast.AsyncFor) -> tuple[Value, ...] | None:
        items = _known_items(iterable)
        if items is None or not 0 < len(items) <= _UNROLL_ITEMS or self._unroll_budget < len(items):
            return None
        if _leaves_early(node):
            return None
        return items

    def _while(self, node: ast.While, env: Env) -> None:
        self._first_iteration(node, env, lambda first: self.expr(node.test, first))
        inner = self._loop_env(node, env)
        self.expr(node.test, inner)
        self.block(node.body, inner)
        self.block(node.orelse, inner)
        _merge_into(env, env, inner)

    def _with(self, node: ast.With | ast.AsyncWith, env: Env) -> None:
        mode: bool | None = None
        sets_device = False
        for item in node.items:
            self.expr(item.context_expr, env)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, None, env)
            item_mode = _grad_mode(item.context_expr, self.ctx)
            mode = item_mode if item_mode is not None else mode
            context = item.context_expr
            sets_device |= isinstance(context, ast.Call) and self.ctx.qualify(context.func) == "torch.device"
        previous = (self.ctx.grad_enabled, self.default_device_changed)
        if mode is not None:
            self.ctx.grad_enabled = mode
        if sets_device:
            self.default_device_changed = True  # `with torch.device("cuda"):` makes factories create there
        self.block(node.body, env)
        self.ctx.grad_enabled, self.default_device_changed = previous

    def _try(self, node: ast.Try, env: Env) -> None:
        before = dict(env)
        guarded = any(_catches_runtime_errors(handler, self.ctx) for handler in node.handlers)
        self.ctx.guarded += guarded
        try:
            self.block(node.body, env)
        finally:
            self.ctx.guarded -= guarded
        for handler in node.handlers:
            inner = self._loop_env(ast.Module(body=node.body, type_ignores=[]), before)
            if handler.type is not None:
                self.expr(handler.type, inner)
            if handler.name:
                inner[handler.name] = None
            self.block(handler.body, inner)
            _merge_into(env, env, inner)
        self.block(node.orelse, env)
        self.block(node.finalbody, env)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, env: Env) -> None:
        for decorator in node.decorator_list:
            self.expr(decorator, env)
        self._evaluate_defaults(node, env)
        env[node.name] = None
        self._generic_returns[node] = self._evaluate_function(node, self.ctx.klass)

    def _evaluate_defaults(self, node: ast.FunctionDef | ast.AsyncFunctionDef, env: Env) -> None:
        """Evaluate default values where the ``def`` stands, and keep them for the calls that leave them out."""
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults: dict[str, Value] = {}
        with_defaults = positional[len(positional) - len(arguments.defaults) :]
        for arg, default in zip(with_defaults, arguments.defaults, strict=True):
            defaults[arg.arg] = self.expr(default, env)
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
            if default is not None:
                defaults[arg.arg] = self.expr(default, env)
        self._defaults[node] = defaults

    def _evaluate_function(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        klass: ClassInfo | None,
        arguments_given: dict[str, Value] | None = None,
        self_value: Value = None,
    ) -> Value:
        """Evaluate a function body in its own scope; returns the value all its returns agree on.

        ``arguments_given`` evaluates it for one call's argument values, ``self_value`` for one instance (see
        :meth:`_call_function`).
        """
        inner: Env = {}
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        for index, arg in enumerate(arguments):
            inner[arg.arg] = self._annotation(arg.annotation) if arg.annotation is not None else None
            if index == 0 and klass is not None and arg.arg == "self" and (self_value is not None or klass.torch_base):
                inner["self"] = self_value or ModuleValue(klass.torch_base or "", user_class=klass.name)
            elif index == 0 and klass is not None and arg.arg == "self" and not _is_static(node):
                inner["self"] = InstanceValue("user", (("class", klass.name),))  # any instance: its class's methods
            elif arguments_given is not None and arg.arg in arguments_given:
                given = arguments_given[arg.arg]
                if given is not None and not (given == OfClass(facts.MODULE) and inner[arg.arg] is not None):
                    inner[arg.arg] = given  # what the call passes, unless the annotation says more than "a module"
        for arg in (node.args.vararg, node.args.kwarg):
            if arg is not None:
                inner[arg.arg] = None
        saved = (self.ctx.function, self.ctx.klass, self._returns, self.ctx.grad_enabled)
        self.ctx.function, self.ctx.klass, self._returns = node, klass, []
        # A body runs when called, not where it is defined: only its own decorators set its grad mode.
        self.ctx.grad_enabled = not any(_disables_grad(d, self.ctx) for d in node.decorator_list)
        try:
            self.block(node.body, inner)
            returns = self._returns
        finally:
            self.ctx.function, self.ctx.klass, self._returns, self.ctx.grad_enabled = saved
        result = returns[0] if returns else None
        for other in returns[1:]:
            result = merge(result, other)
        if result is None and node.returns is not None:
            return self._annotation(node.returns)  # `-> Tensor` where the returns could not be told
        return result

    def _class(self, node: ast.ClassDef, env: Env) -> None:
        for expr in [*node.bases, *node.decorator_list, *(k.value for k in node.keywords)]:
            self.expr(expr, env)
        info = ClassInfo(node, self._torch_base(node))
        info.bases = tuple(
            self.classes[base.id] for base in node.bases if isinstance(base, ast.Name) and base.id in self.classes
        )
        self.classes[node.name] = info
        env[node.name] = None
        methods = [s for s in node.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
        info.methods = {method.name: method for method in methods}
        for method in methods:
            if method.name != "__init__":
                info.unstable.update(self_attributes_assigned(method))
                if self._mentions(method, "register_buffer"):  # a text test first: walking every method costs
                    info.unstable.update(_buffers_registered(method))  # registered again: not what __init__ made
        class_env: Env = {}
        for statement in node.body:
            if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                self.stmt(statement, class_env)
        assigned = [target for statement in node.body for target in assigned_names(statement)]
        info.class_attributes = {
            name: value for name, value in class_env.items() if assigned.count(name) == 1 and value is not None
        }
        if any(_is_dataclass_decorator(d, self.ctx) for d in node.decorator_list):
            info.fields = tuple(
                s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            )
        # __init__ first: the other methods read what it assigns to self.
        ordered = sorted(methods, key=lambda m: m.name != "__init__")
        for method in ordered:
            for decorator in method.decorator_list:
                self.expr(decorator, env)
            self._evaluate_defaults(method, env)
            returned = self._evaluate_function(method, info)
            self._generic_returns[method] = returned
            if method.name == "forward":
                info.forward_return = returned
            self._visit_rules(method)

    def _mentions(self, node: ast.AST, word: str) -> bool:
        """True when the source lines of ``node`` contain ``word``."""
        lines = self.ctx.source.lines[node.lineno - 1 : node.end_lineno]  # type: ignore[attr-defined]
        return any(word in line for line in lines)

    def _torch_base(self, node: ast.ClassDef) -> str | None:
        for base in node.bases:
            qualname = self.ctx.qualify(base)
            if qualname and qualname.startswith("torch."):
                return qualname
            if isinstance(base, ast.Name) and base.id in self.classes:
                inherited = self.classes[base.id].torch_base
                if inherited:
                    return inherited
        return None

    # ------------------------------------------------------------------------------------------ binding

    def bind(self, target: ast.expr, value: Value, env: Env) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
            if value is not None:
                self.ctx.values[target] = value
            self._visit_rules(target)
        elif isinstance(target, ast.Tuple | ast.List):
            items = value.items if isinstance(value, TupleValue) and len(value.items) == len(target.elts) else None
            if isinstance(value, SequenceOf):  # q, k, v = x.unbind(0): every item is one
                items = tuple(None if isinstance(e, ast.Starred) else value.item for e in target.elts)
            if isinstance(value, TensorValue) and not any(isinstance(e, ast.Starred) for e in target.elts):
                # q, k, v = qkv.permute(2, 0, 3, 1, 4): unpacking runs along the first dim
                row = TensorValue(
                    shape=value.dims[1:] if value.dims else None,
                    dtype=value.dtype,
                    device=value.device,
                    requires_grad=value.requires_grad,
                    is_leaf=False,
                )
                items = (row,) * len(target.elts)
            for index, element in enumerate(target.elts):
                self.bind(element, items[index] if items else None, env)
        elif isinstance(target, ast.Attribute):
            owner = self.expr(target.value, env)
            if isinstance(target.value, ast.Name) and target.value.id == "self" and self.ctx.klass is not None:
                self.ctx.klass.assigned.setdefault(target.attr, []).append(value)
            self._attribute_assigned(target, owner, value, env)
            sink = self._init_attribute_sink(target)
            if sink is not None:
                if target.attr in sink:
                    self.ctx.klass.unstable.add(target.attr)  # type: ignore[union-attr]
                sink[target.attr] = value
            self._visit_rules(target)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, None, env)
        else:  # subscript targets: evaluate their parts for the rules
            for child in ast.iter_child_nodes(target):
                if isinstance(child, ast.expr):
                    self.expr(child, env)
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                changed = env.get(target.value.id)
                if isinstance(changed, DictValue):
                    key = self.ctx.values.get(target.slice)
                    env[target.value.id] = changed.with_item(key.value, value) if isinstance(key, Literal) else None
                if isinstance(changed, TensorValue):
                    # x[i] = v changes values in place: same shape, but no longer what made it (softmax...).
                    env[target.value.id] = changed.with_(provenance=None, origin=None)
            self._visit_rules(target)

    def _attribute_assigned(self, target: ast.Attribute, owner: Value, value: Value, env: Env) -> None:
        """``cfg.lr = 0.1`` or ``model.head = nn.Linear(...)`` outside the class: what the object now holds."""
        if isinstance(owner, InstanceValue) and owner.qualname == "namespace" and isinstance(target.value, ast.Name):
            fields = owner.arg("fields")
            if isinstance(fields, DictValue):
                env[target.value.id] = InstanceValue("namespace", (("fields", fields.with_item(target.attr, value)),))
            return
        klass = self._user_class_of(owner)
        if klass is not None and not (isinstance(target.value, ast.Name) and target.value.id == "self"):
            klass.unstable.add(target.attr)  # set from outside: no longer what __init__ made, for any instance
            klass.assigned.setdefault(target.attr, []).append(value)

    def _load(self, name: str, env: Env) -> Value:
        if name in env:
            return env[name]
        if env is not self.module_env and name in self.stable_globals:
            return self.module_env.get(name)
        return None

    def _annotation(self, annotation: ast.expr | None) -> Value:
        if annotation is None:
            return None
        return annotation_value(annotation, self.ctx.qualify, self._torch_base_of)

    def _torch_base_of(self, class_name: str) -> str | None:
        info = self.classes.get(class_name)
        return info.torch_base if info is not None else None

    # ------------------------------------------------------------------------------------------ expressions

    def _name(self, node: ast.Name, env: Env) -> Value:
        return self._load(node.id, env)

    def _constant(self, node: ast.Constant, env: Env) -> Value:
        return Literal(node.value)

    def _sequence(self, node: ast.Tuple | ast.List, env: Env) -> Value:
        items: list[Value] = []
        known = True
        for element in node.elts:
            if isinstance(element, ast.Starred):
                spliced = self.expr(element.value, env)
                if isinstance(spliced, TupleValue):
                    items.extend(spliced.items)  # [*layers, head]: the parts of a known sequence
                else:
                    known = False
            else:
                items.append(self.expr(element, env))
        return TupleValue(tuple(items)) if known else None

    def _ifexp(self, node: ast.IfExp, env: Env) -> Value:
        test = self.expr(node.test, env)
        body, orelse = self.expr(node.body, env), self.expr(node.orelse, env)
        if isinstance(test, Literal):
            return body if test.value else orelse  # `h if i == 0 else x + h` in an unrolled loop
        devices = {parse_device(body), parse_device(orelse)}
        if CUDA in devices and len(devices) == 2 and None not in devices:
            # "cuda" if torch.cuda.is_available() else "cpu" (or "mps", or "meta" in code that must run anywhere)
            return DeviceValue(ACCELERATOR)
        return merge(body, orelse)

    def _joinedstr(self, node: ast.JoinedStr, env: Env) -> Value:
        for part in node.values:
            self.expr(part, env)
        first = node.values[0] if node.values else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("cuda"):
            return DeviceValue(CUDA)  # f"cuda:{rank}" names a cuda device whatever the index
        return None

    def _namedexpr(self, node: ast.NamedExpr, env: Env) -> Value:
        value = self.expr(node.value, env)
        env[node.target.id] = value
        return value

    def _unaryop(self, node: ast.UnaryOp, env: Env) -> Value:
        operand = self.expr(node.operand, env)
        if isinstance(operand, Literal) and isinstance(node.op, ast.USub) and isinstance(operand.value, int | float):
            return Literal(-operand.value)
        if isinstance(operand, TensorValue) and isinstance(node.op, ast.USub | ast.UAdd | ast.Invert):
            return operand.with_(provenance=None, origin=None, is_leaf=False)
        return None

    def _dict(self, node: ast.Dict, env: Env) -> Value:
        """``{"tokens": t, "label": y}``: known when every key is a literal (no ``**other``)."""
        items = []
        known = True
        for key, value in zip(node.keys, node.values, strict=True):
            key_value = self.expr(key, env) if key is not None else None
            item = self.expr(value, env)
            if not isinstance(key_value, Literal):
                known = False
            else:
                items.append((key_value.value, item))
        return DictValue(tuple(items)) if known else None

    def _boolop(self, node: ast.BoolOp, env: Env) -> Value:
        """``d_head or d_model``, ``flag and value``: short-circuit, when the deciding operands are literals."""
        values = []
        scope = env
        for operand in node.values:
            values.append(self.expr(operand, scope))
            if isinstance(node.op, ast.And) and (narrowed := self._narrowed(operand, scope)):
                scope = {**scope, **narrowed}  # `isinstance(m, nn.Conv2d) and m.bias`: m is one on the right
        for value in values[:-1]:
            if not isinstance(value, Literal):
                return None
            if bool(value.value) == isinstance(node.op, ast.Or):
                return value  # `or` stops at the first truthy operand, `and` at the first falsy one
        return values[-1]

    def _compare(self, node: ast.Compare, env: Env) -> Value:
        """``tokens != 0``, ``a < b``: a bool tensor of the broadcast shape when a tensor takes part."""
        operands = [self.expr(node.left, env), *(self.expr(c, env) for c in node.comparators)]
        if len(operands) != 2 or not isinstance(node.ops[0], ast.Eq | ast.NotEq | ast.Lt | ast.LtE | ast.Gt | ast.GtE):
            return None
        tensors = [v for v in operands if isinstance(v, TensorValue)]
        if not tensors:
            if all(isinstance(v, Literal) and not isinstance(v.value, symbols.Sym) for v in operands):
                try:
                    return Literal(bool(_COMPARISONS[type(node.ops[0])](operands[0].value, operands[1].value)))
                except TypeError:
                    return None
            return None
        if len(tensors) == 2:
            shape, _ = shapes.broadcast(tensors[0].shape, tensors[1].shape)
        elif isinstance(operands[0] if tensors[0] is operands[1] else operands[1], Literal):
            shape = tensors[0].shape
        else:
            return TensorValue(dtype="torch.bool", is_leaf=False)
        devices = {t.device for t in tensors}
        return TensorValue(
            shape=shape, dtype="torch.bool", device=devices.pop() if len(devices) == 1 else None, is_leaf=False
        )

    def _subscript(self, node: ast.Subscript, env: Env) -> Value:
        container = self.expr(node.value, env)
        index = self.expr(node.slice, env)
        if isinstance(container, ModuleValue) and container.qualname in _LAYER_CONTAINERS and container.children:
            container = TupleValue(container.children)  # self.blocks[0]: one of the layers
        if isinstance(container, DictValue):
            if isinstance(index, Literal):
                return container.get(index.value)
            return _merged(v for _, v in container.items)  # batch[key]: one of the values, whichever key
        if isinstance(container, SequenceOf):
            return container if isinstance(node.slice, ast.Slice) else container.item  # samples[i]: one of them
        if isinstance(container, TupleValue) and isinstance(node.slice, ast.Slice):
            bounds = [
                self.ctx.values.get(part) if part is not None else Literal(None)
                for part in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            numbers = [_literal(b) if isinstance(b, Literal) else False for b in bounds]
            if all(n is None or (isinstance(n, int) and not isinstance(n, bool)) for n in numbers) and numbers[2] != 0:
                return TupleValue(container.items[slice(*numbers)])  # dims[:-1], widths[1:]
            return None
        if isinstance(container, TupleValue):
            position = _int(index)
            if position is not None and -len(container.items) <= position < len(container.items):
                return container.items[position]
            return None
        if isinstance(container, TensorValue):
            elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            shape = shapes.index(container.dims, [self._index_kind(e) for e in elements])  # type: ignore[arg-type]
            return TensorValue(
                shape=shape,
                dtype=container.dtype,
                device=container.device,
                requires_grad=container.requires_grad,
                is_leaf=False,
            )
        return None

    def _index_kind(self, element: ast.expr) -> str | slice | None:
        """What one part of a tensor index does to the dims (see ``shapes.index``); None: not known."""
        if isinstance(element, ast.Slice):
            if element.lower is None and element.upper is None and element.step is None:
                return shapes.KEEP
            bounds = [
                None if part is None else _int(self.ctx.values.get(part))
                for part in (element.lower, element.upper, element.step)
            ]
            written = [part is not None for part in (element.lower, element.upper, element.step)]
            if all(b is not None or not w for b, w in zip(bounds, written, strict=True)) and bounds[2] != 0:
                return slice(*bounds)  # x[..., :96], x[:, 1:-1]: the size follows when the dim's size is known
            return shapes.PART
        if isinstance(element, ast.Constant) and element.value is Ellipsis:
            return shapes.ELLIPSIS
        if isinstance(element, ast.Constant) and element.value is None:
            return shapes.NEW
        value = self.ctx.values.get(element)
        if _int(value) is not None or value == Number("int"):
            return shapes.DROP
        if isinstance(value, TensorValue) and value.dtype in INTEGER_DTYPES and value.rank == 1:
            return shapes.PART  # x[idx] with a 1-D index tensor: that dim keeps as many entries as idx has
        return None

    def _attribute(self, node: ast.Attribute, env: Env) -> Value:
        qualname = self.ctx.qualify(node)
        if qualname is not None:
            if qualname in _FLOAT_CONSTANTS:
                return Number("float")  # torch.pi, math.e: a Python float (2 * torch.pi * t is still a tensor)
            return Literal(normalize_dtype(qualname)) if qualname in DTYPE_NAMES else None
        base = self.expr(node.value, env)
        if base is None and node.attr == "shape" and self._forward_input(node.value, node):
            base = TensorValue()  # `b, t, d = x.shape` on forward's input: a tensor of that many dims
        if isinstance(base, TensorValue):
            if node.attr == "shape":
                base = self._named_tensor(node.value, node, base, env)
            return self._tensor_attribute(base, node.attr, node)
        if isinstance(base, TupleValue) and len(base.items) == 2 and node.attr in ("values", "indices"):
            return base.items[node.attr == "indices"]  # x.max(dim=1).values: torch's (values, indices) result
        if isinstance(base, InstanceValue) and base.qualname == "namespace":
            fields = base.arg("fields")
            return fields.get(node.attr) if isinstance(fields, DictValue) else None
        owner = self._user_class_of(base)
        if owner is not None:
            self._reading = node
            try:
                return self._member(owner, base, node.attr)
            finally:
                self._reading = None
        if isinstance(node.value, ast.Name) and node.value.id == "self" and self.ctx.klass is not None:
            if self.ctx.klass.is_unstable(node.attr):
                self._unstable_reads.append((node, self.ctx.klass, node.attr))
            return self.ctx.klass.attribute(node.attr)
        if isinstance(base, ModuleValue | OfClass) and base.user_class is None:
            return _layer_tensor(base, node.attr)
        return None

    def _tensor_attribute(self, tensor: TensorValue, attr: str, node: ast.AST) -> Value:
        if attr == "shape":
            dims = tensor.dims
            return TupleValue(tuple(Literal(d) if d is not None else None for d in dims)) if dims is not None else None
        if attr == "ndim":
            return Literal(tensor.rank) if tensor.rank is not None else None
        if attr == "dtype":
            return Literal(tensor.dtype) if tensor.dtype else None
        if attr == "device":
            return DeviceValue(tensor.device)
        if attr in ("T", "mT") and tensor.shape is not None:
            if attr == "T":
                dims = list(range(len(tensor.shape)))[::-1]
            elif len(tensor.shape) >= 2:
                dims = [*range(len(tensor.shape) - 2), len(tensor.shape) - 1, len(tensor.shape) - 2]
            else:
                return None
            return self._permuted(tensor, dims, node)
        if attr in ("data", "grad"):
            return TensorValue(
                shape=tensor.shape, tail=tensor.tail, dtype=tensor.dtype, device=tensor.device, requires_grad=False
            )
        if attr in facts.TENSOR_ATTRIBUTES:  # x.T of unknown rank, x.real: still a tensor, where x is
            return TensorValue(device=tensor.device)
        if attr in facts.TENSOR_ATTRIBUTE_CLASSES:  # x.dtype, x.shape not known: their class is
            return OfClass(facts.TENSOR_ATTRIBUTE_CLASSES[attr])
        return None

    def _binop(self, node: ast.BinOp, env: Env) -> Value:
        left = self.expr(node.left, env)
        right = self.expr(node.right, env)
        result = self._arithmetic(left, right, node.op, node)
        if result is None and (isinstance(left, TensorValue) or isinstance(right, TensorValue)):
            return TensorValue()  # `q @ k.transpose(-2, -1)` of unknown shapes: still a tensor, nothing more known
        return result

    def _arithmetic(self, left: Value, right: Value, op: ast.operator, node: ast.AST) -> Value:
        if isinstance(op, ast.Add) and isinstance(left, TupleValue) and isinstance(right, TupleValue):
            return TupleValue(left.items + right.items)  # layers + [head], layers += stage(...)
        if isinstance(op, ast.Mult) and (isinstance(left, TupleValue) or isinstance(right, TupleValue)):
            items, times = (left, _int(right)) if isinstance(left, TupleValue) else (right, _int(left))
            if times is not None and times >= 0 and len(items.items) * times <= 64:  # type: ignore[union-attr]
                return TupleValue(items.items * times)  # type: ignore[union-attr]  # [hidden] * n_layers
            return None
        if isinstance(left, Literal) and isinstance(right, Literal):
            try:
                return Literal(_PY_OPS[type(op)](left.value, right.value))
            except Exception:
                return None
        if isinstance(op, ast.MatMult):
            if isinstance(left, TensorValue) and isinstance(right, TensorValue):
                shape, problem = shapes.matmul(left.shape, right.shape)
                self._problem(node, "matmul", problem)
                shape = shapes.matmul_named(left.dims, right.dims, shape)
                return self._fresh(self._derived(left, right, shape))
            return None
        tensors = [v for v in (left, right) if isinstance(v, TensorValue)]
        if not tensors:
            return None
        if len(tensors) == 2:
            shape, problem = shapes.broadcast(left.shape, right.shape)  # type: ignore[union-attr]
            self._problem(node, "broadcast", problem)
            shape = shapes.broadcast_named(left.dims, right.dims, shape)  # type: ignore[union-attr]
            return self._derived(left, right, shape)  # type: ignore[arg-type]
        tensor = tensors[0]
        other = right if tensor is left else left
        if isinstance(other, Number):
            other = Literal(1.0 if other.kind == "float" else 1)  # a Python number of unknown value: a scalar
        if not isinstance(other, Literal):
            return TensorValue()  # the other side may be a tensor of any shape (broadcasting) or device
        dtype = tensor.dtype
        if dtype in INTEGER_DTYPES and (
            isinstance(op, ast.Div | ast.Pow) or (isinstance(other, Literal) and isinstance(other.value, float))
        ):
            dtype = "torch.float32"  # int tensor / 2 and int tensor * 0.5 are float
        return TensorValue(
            shape=tensor.dims,
            tail=tensor.tail,
            dtype=dtype,
            device=tensor.device,
            requires_grad=tensor.requires_grad,
            is_leaf=False,
        )

    @staticmethod
    def _fresh(tensor: TensorValue) -> TensorValue:
        """A matrix product's result: newly allocated, so contiguous with the standard strides of its shape."""
        return tensor.with_(contiguous=True, **layers.fresh_strides(tensor.dims))

    def _derived(self, a: TensorValue, b: TensorValue, shape: Any) -> TensorValue:
        return TensorValue(
            shape=shape,
            dtype=a.dtype if a.dtype == b.dtype else None,
            device=a.device if a.device == b.device else None,
            requires_grad=True if (a.requires_grad or b.requires_grad) else None,
            is_leaf=False,
        )

    def _problem(self, node: ast.AST, kind: str, problem: str | None) -> None:
        if problem:
            self.ctx.shape_problems[node] = (kind, problem)

    # ------------------------------------------------------------------------------------------ the file's own code

    def _user_class_of(self, value: Value) -> ClassInfo | None:
        """The file's class that ``value`` is an instance of (a model, a dataset, any class of the file)."""
        if isinstance(value, ModuleValue | OfClass) and value.user_class is not None:
            return self.classes.get(value.user_class)
        if isinstance(value, InstanceValue) and isinstance(value.arg("class"), str):
            return self.classes.get(value.arg("class"))
        return None

    @staticmethod
    def _instance_arguments(value: Value) -> tuple[tuple[str, Value], ...]:
        """The constructor arguments an instance of the file's class was made with (those known)."""
        if isinstance(value, ModuleValue) and value.user_class is not None:
            return value.args
        if isinstance(value, InstanceValue):
            return value.arg("init", ())
        return ()

    def _member(self, klass: ClassInfo, owner: Value, name: str) -> Value:
        """``owner.name`` for an instance of the file's class: what its ``__init__`` made of its arguments.

        On a module moved to a device, its submodules, parameters and buffers are there too; a plain tensor
        attribute is not (``.to()`` does not move it).
        """
        value = self._member_as_built(klass, owner, name)
        device = owner.device if isinstance(owner, ModuleValue) else None
        if device is None:
            return value
        if isinstance(value, ModuleValue) and value.device is None:
            return _moved(value, device)
        if isinstance(value, TensorValue) and value.registered:
            return value.with_(device=device)
        return value

    def _member_as_built(self, klass: ClassInfo, owner: Value, name: str) -> Value:
        if klass.is_unstable(name):
            if self._reading is not None:
                self._unstable_reads.append((self._reading, klass, name))
            return None
        getter = klass.method(name)
        if getter is not None and any(isinstance(d, ast.Name) and d.id == "property" for d in getter.decorator_list):
            # cfg.d_model where d_model is a @property: its body, for this instance
            call = ast.copy_location(ast.Call(func=ast.Name(id=name), args=[], keywords=[]), getter)
            return self._call_function(getter, self._defining_class(klass, name), CallInfo(call), owner)
        arguments = self._instance_arguments(owner)
        if arguments and klass.fields is not None:
            fields = dict(arguments)
            if name in fields:
                return fields[name]
        elif arguments:
            attributes = self._instance_attributes(klass, owner, arguments)
            if attributes is not None and name in attributes:
                return attributes[name]
        return klass.attribute(name)

    def _instance_attributes(
        self, klass: ClassInfo, owner: Value, arguments: tuple[tuple[str, Value], ...]
    ) -> dict[str, Value] | None:
        """What ``__init__`` assigns to ``self`` for these constructor arguments (evaluated once per arguments)."""
        try:
            cached = klass.instances.get(arguments)
        except TypeError:  # a value that cannot be a key: evaluate nothing rather than guess
            return None
        if cached is not None:
            return cached
        init = klass.method("__init__")
        if init is None:
            return None
        attributes: dict[str, Value] = {}
        klass.instances[arguments] = attributes  # a class that builds another of itself sees what is there so far
        if isinstance(owner, ModuleValue):
            owner = owner.with_(device=None, training=None)
        self._specialise(init, self._defining_class(klass, "__init__"), dict(arguments), owner, None, attributes)
        return attributes

    def _defining_class(self, klass: ClassInfo, method: str) -> ClassInfo:
        return next((k for k in klass.chain() if method in k.methods), klass)

    def _bind_arguments(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, info: CallInfo, skip_first: bool
    ) -> dict[str, Value] | None:
        """Parameter -> the value this call gives it (or its default); None when the call's shape is not known."""
        if info.starred or info.unknown_keywords:
            return None  # f(*args) or f(**options): which parameter gets what is not known
        arguments = function.args
        positional = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
        if skip_first:
            positional = positional[1:]
        keyword_only = [a.arg for a in arguments.kwonlyargs]
        if len(info.args) > len(positional) and arguments.vararg is None:
            return None  # more arguments than parameters: not a call of this function as we read it
        defaults = self._defaults.get(function, {})
        given: dict[str, Value] = dict(zip(positional, info.args, strict=False))
        for name, value in info.kwargs.items():
            if name in positional or name in keyword_only:
                given[name] = value
            elif arguments.kwarg is None:
                return None
        for name in [*positional, *keyword_only]:
            if name not in given:
                given[name] = defaults.get(name)
        return given

    def _call_function(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        klass: ClassInfo | None,
        info: CallInfo,
        self_value: Value = None,
    ) -> Value:
        """The value a call of the file's own function or method returns, evaluated for the call's arguments.

        The body was evaluated once where it is defined, with unknown parameters; a call that knows something
        about its arguments (or an instance built with known constructor arguments) evaluates it again with
        them, so a helper's softmax, a block's sizes or a CPU tensor passed down reach the rules. Every rule
        runs during that evaluation, and its findings point back at the call (:attr:`Context.call_site`).
        Bounded: memoised per arguments, at most :data:`_MAX_DEPTH` calls deep, no recursion, and a budget of
        evaluations per file; past those, the call returns what the body returns for unknown parameters.
        """
        method = klass is not None and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list
        )
        generic = self._generic_returns.get(function)
        given = self._bind_arguments(function, info, skip_first=method)
        if given is None:
            return generic
        if not any(v is not None for v in given.values()) and not self._instance_arguments(self_value):
            return generic  # the call says nothing the first evaluation did not know
        key = (function, self_value, tuple(given.items()))
        try:
            if key in self._specialised:
                return self._specialised[key]
        except TypeError:
            return generic
        returned = self._specialise(function, klass, given, self_value, info.node, self._attribute_sink_for(function))
        self._specialised[key] = returned
        return returned

    def _after_call(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, info: CallInfo, env: Env, skip_first: bool
    ) -> None:
        """What a call of the file's function leaves behind in the caller's models: their train/eval mode.

        ``train_epoch(model, ...)`` that calls ``model.train()`` leaves it in train mode; one that may call
        ``eval()`` or hand the model on to unknown code leaves the mode unknown.
        """
        names = [a.arg for a in [*function.args.posonlyargs, *function.args.args]][1 if skip_first else 0 :]
        passed: list[tuple[str, ast.expr]] = list(zip(names, info.node.args, strict=False))
        passed += [(k.arg, k.value) for k in info.node.keywords if k.arg is not None]
        models = [
            (parameter, argument.id, model)
            for parameter, argument in passed
            if isinstance(argument, ast.Name) and isinstance(model := self._load(argument.id, env), ModuleValue)
        ]
        if not models:
            return  # no model handed over: nothing to summarise (most calls)
        if function not in self._mode_effects:
            self._mode_effects[function] = modes.mode_effects(function, self.functions)
        effects = self._mode_effects[function]
        for parameter, name, model in models:
            if parameter in effects:
                env[name] = model.with_(training=effects[parameter])

    def _collect(self, values: dict) -> None:
        """Merge one specialised evaluation's own values into :attr:`call_values` (what every call agrees on)."""
        collected = self.call_values
        assert collected is not None
        for node, value in dict.items(values):
            collected[node] = merge(collected[node], value) if node in collected else value

    def _attribute_sink_for(self, function: ast.AST) -> dict[str, Value] | None:
        """``super().__init__(...)`` of an instance being built assigns into that instance; nothing else does."""
        return self._attribute_sink if getattr(function, "name", None) == "__init__" else None

    def _specialise(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        klass: ClassInfo | None,
        given: dict[str, Value],
        self_value: Value,
        call: ast.AST | None,
        sink: dict[str, Value] | None,
    ) -> Value:
        generic = self._generic_returns.get(function)
        if self._depth >= _MAX_DEPTH or function in self._active or self._budget <= 0:
            return generic
        self._budget -= 1
        saved = (self.ctx.values, self.ctx.calls, self.ctx.call_site, self._attribute_sink)
        self.ctx.values, self.ctx.calls = _Overlay(self.ctx.values), _Overlay(self.ctx.calls)
        self._attribute_sink = sink
        if self.ctx.call_site is None and call is not None:
            self.ctx.call_site = Origin(call, _call_site_description(given))
        self._depth += 1
        self._active.append(function)
        try:
            return self._evaluate_function(function, klass, given, self_value)
        except Exception:  # a modelling gap in a second look must not cost the first
            log.debug("could not evaluate %s for a call", function.name, exc_info=True)
            return generic
        finally:
            self._active.pop()
            self._depth -= 1
            if self.call_values is not None:
                self._collect(self.ctx.values)
            self.ctx.values, self.ctx.calls, self.ctx.call_site, self._attribute_sink = saved

    # ------------------------------------------------------------------------------------------ calls

    def _call(self, node: ast.Call, env: Env) -> Value:
        info = CallInfo(node)
        func = node.func
        info.qualname = self.ctx.qualify(func)
        if info.qualname is None:
            if isinstance(func, ast.Attribute):
                callee = self.expr(func, env)  # evaluates the receiver too
                if isinstance(callee, ModuleValue):
                    info.module = callee  # self.fc(x): calling a layer held in an attribute
                else:
                    info.receiver = self.ctx.values.get(func.value)
                    info.method = func.attr
                    if func.attr == "size" and isinstance(info.receiver, TensorValue):
                        info.receiver = self._named_tensor(func.value, node, info.receiver, env)
            else:
                callee = self.expr(func, env)
                if isinstance(callee, ModuleValue):
                    info.module = callee
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                spliced = self.expr(arg.value, env)
                if isinstance(spliced, TupleValue) and not info.starred:
                    info.args.extend(spliced.items)  # f(*layers) with a known sequence: its parts, in order
                    info.spliced = True
                else:
                    info.starred = True
                    info.args.append(None)
            else:
                info.args.append(self.expr(arg, env))
        for keyword in node.keywords:
            value = self.expr(keyword.value, env)
            if keyword.arg is not None:
                info.kwargs[keyword.arg] = value
            elif isinstance(value, DictValue) and all(isinstance(k, str) for k, _ in value.items):
                info.kwargs.update(value.items)  # f(**BACKBONE_DEFAULTS): a dict the code spells out
            else:
                info.unknown_keywords = True
        self.ctx.calls[node] = info
        try:
            return self._call_result(info, env)
        except Exception:  # a modelling gap must never stop the walk
            log.debug("could not evaluate call at line %s", node.lineno, exc_info=True)
            return None

    def _call_result(self, info: CallInfo, env: Env) -> Value:
        node = info.node
        if info.starred and (info.method in SHAPE_METHODS or info.qualname in CREATION_FUNCTIONS):
            return None  # x.view(*shape): the number of dims is not known
        if info.qualname is not None:
            result = self._torch_call(info.qualname, info, env)
            return result if result is not None else _torch_result(info.qualname)
        if info.method == "register_buffer" and self._registers_buffer(info):
            return None
        if info.method is not None:
            receiver = info.receiver
            if (
                receiver is None
                and info.method in PROVENANCE_METHODS
                and isinstance(node.func, ast.Attribute)
                and self.ctx.qualify(node.func.value) is None
            ):
                receiver = TensorValue()  # only tensors have .softmax()/.sigmoid() in torch code
            if (
                receiver is None
                and info.method in TENSOR_ONLY_CONVERSIONS
                and isinstance(node.func, ast.Attribute)
                and self.ctx.qualify(node.func.value) is None
            ):
                return TensorValue(dtype=DTYPE_METHODS[info.method])  # y.long(): whatever y was, now an int64 tensor
            if isinstance(receiver, TensorValue):
                result = self._tensor_method(receiver, info.method, info)
                if result is None:
                    result = _tensor_method_result(receiver, info.method)
                if info.method.endswith("_") and isinstance(node.func, ast.Attribute):
                    target = node.func.value
                    if isinstance(target, ast.Name):
                        # In place: the name now holds what the method made of it (unknown if not modelled).
                        env[target.id] = result if isinstance(result, TensorValue) else None
                return result
            if isinstance(receiver, ModuleValue):
                return self._module_method(receiver, info, env)
            if isinstance(receiver, OfClass):
                return self._class_method(receiver, info, env)
            if isinstance(receiver, InstanceValue) and receiver.qualname == "argparse":
                return self._parser_method(receiver, info, env)
            if isinstance(receiver, InstanceValue):
                return self._user_method(receiver, info, env)
            if isinstance(receiver, TupleValue) and info.method in ("append", "extend"):
                self._grow_list(receiver, info, env)
            if isinstance(receiver, DictValue) and not info.args:
                if info.method == "items":
                    return TupleValue(tuple(TupleValue((Literal(k), v)) for k, v in receiver.items))
                if info.method in ("keys", "values"):
                    index = 0 if info.method == "keys" else 1
                    return TupleValue(tuple((Literal(k), v)[index] for k, v in receiver.items))
            return None
        if info.module is not None:
            return self._apply_module(info.module, info)
        if isinstance(node.func, ast.Name) and node.func.id == "enumerate" and "enumerate" not in env and info.args:
            return InstanceValue("builtins.enumerate", (("of", info.args[0]),), Origin(node.args[0], "enumerate"))
        if isinstance(node.func, ast.Name) and self._is_global(node.func.id, env):
            name = node.func.id
            if name in self.classes:
                return self._construct(self.classes[name], info)
            if name in self.functions:
                returned = self._call_function(self.functions[name], None, info)
                self._after_call(self.functions[name], info, env, skip_first=False)
                return returned
            if name in _BUILTINS and name not in self.module_env:
                return _BUILTINS[name](info.args)
            if name == "dict" and name not in self.module_env and not info.unknown_keywords:
                if not info.args:
                    return DictValue(tuple(info.kwargs.items()))
                if len(info.args) == 1 and isinstance(info.args[0], DictValue):
                    return DictValue(info.args[0].items + tuple(info.kwargs.items()))
            if name == "reversed" and name not in self.module_env and len(info.args) == 1:
                items = _known_items(info.args[0])
                return TupleValue(tuple(reversed(items))) if items is not None else None
            if name in ("list", "tuple") and name not in self.module_env and len(info.args) == 1:
                items = _known_items(info.args[0])
                return TupleValue(items) if items is not None else None
            if name in ("iter", "next") and name not in self.module_env and len(info.args) == 1:
                # next(iter(loader)): one item of what iterating gives (iter() alone changes nothing we track)
                only = info.args[0]
                return only if name == "iter" else self._iteration(only, node.args[0])
        if _is_super_init(node.func) and self.ctx.klass is not None and self._attribute_sink is not None:
            # super().__init__(...) while an instance is built: the base's __init__ assigns into the same instance
            base = next((k for k in self.ctx.klass.chain()[1:] if "__init__" in k.methods), None)
            if base is not None:
                return self._call_function(base.methods["__init__"], base, info, env.get("self"))
        return None

    def _parser_method(self, parser: InstanceValue, info: CallInfo, env: Env) -> Value:
        """An ``argparse`` parser: ``add_argument`` records each option's default, ``parse_args`` gives the
        namespace a run without options gets (the sizes the script is written for)."""
        defaults = parser.arg("defaults")
        if not isinstance(defaults, DictValue):
            return None
        if info.method in ("parse_args", "parse_known_args"):
            namespace = InstanceValue("namespace", (("fields", defaults),), Origin(info.node, "命令行参数的默认值"))
            return namespace if info.method == "parse_args" else TupleValue((namespace, None))
        func = info.node.func
        if info.method != "add_argument" or not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return None
        flags = [_literal(a) for a in info.args]
        long = next((f for f in flags if isinstance(f, str) and f.startswith("--")), None)
        short = next((f for f in flags if isinstance(f, str)), None)
        dest = _literal(info.kwargs.get("dest")) or (long or short or "").lstrip("-").replace("-", "_")
        if not isinstance(dest, str) or not dest:
            return None
        action = _literal(info.kwargs.get("action"))
        default: Value = info.kwargs.get("default", Literal(None))
        if action in ("store_true", "store_false") and "default" not in info.kwargs:
            default = Literal(action == "store_false")
        kind = info.arg_node(99, "type")
        if isinstance(kind, ast.Name) and kind.id in ("int", "float") and isinstance(default, Literal):
            if isinstance(default.value, str):  # argparse converts a string default with `type`
                try:
                    default = Literal((int if kind.id == "int" else float)(default.value))
                except ValueError:
                    default = None
        elif kind is not None and not isinstance(kind, ast.Name):
            default = None  # a converter we do not run
        env[func.value.id] = InstanceValue(
            "argparse", (("defaults", defaults.with_item(dest, default)),), parser.origin
        )
        return None

    def _grow_list(self, items: TupleValue, info: CallInfo, env: Env) -> None:
        """``layers.append(block)``: the name now holds one more known item (unknown when the argument is)."""
        func = info.node.func
        if not isinstance(func, ast.Attribute) or len(info.args) != 1:
            return
        added = info.args[0]
        if info.method == "append":
            grown: Value = TupleValue((*items.items, added))
        else:
            grown = TupleValue(items.items + added.items) if isinstance(added, TupleValue) else None
        if isinstance(func.value, ast.Name):
            env[func.value.id] = grown
        elif (sink := self._init_attribute_sink(func.value)) is not None:
            sink[func.value.attr] = grown  # type: ignore[attr-defined]  # self.samples.append(...) in __init__

    def _init_attribute_sink(self, target: ast.expr | None = None) -> dict[str, Value] | None:
        """Where ``self.<name> = ...`` stores the instance's attributes, while an ``__init__`` is evaluated (and
        ``target``, when given, is such a ``self.<name>``)."""
        klass = self.ctx.klass
        if klass is None or self.ctx.function is None or self.ctx.function.name != "__init__":
            return None
        if target is not None and not (
            isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
        ):
            return None
        return self._attribute_sink if self._attribute_sink is not None else klass.attributes

    @staticmethod
    def _bind_fields(klass: ClassInfo, info: CallInfo) -> dict[str, Value] | None:
        """A dataclass's generated ``__init__``: fields in order, each given or its class-body default."""
        fields = klass.fields or ()
        if info.starred or len(info.args) > len(fields) or info.unknown_keywords:
            return None
        bound = dict(zip(fields, info.args, strict=False))
        bound.update((k, v) for k, v in info.kwargs.items() if k in fields)
        for name in fields:
            bound.setdefault(name, klass.class_attributes.get(name))
        return bound

    def _registers_buffer(self, info: CallInfo) -> bool:
        """``self.register_buffer(name, tensor)`` in a method of the file's class: note what ``self.name`` holds."""
        func = info.node.func
        klass = self.ctx.klass
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return False
        if klass is None or self.ctx.function is None:
            return False
        if self.ctx.function.name == "__init__":
            self._register_buffer(info)
        name, tensor = _literal(info.arg(0, "name")), info.arg(1, "tensor")
        if isinstance(name, str):
            # a buffer is a tensor, or None when registered as None
            registered = TensorValue() if tensor is None else tensor
            klass.assigned.setdefault(name, []).append(registered)
        return True

    def _register_buffer(self, info: CallInfo) -> None:
        """``self.register_buffer("mask", t)`` in ``__init__``: ``self.mask`` is ``t``, moving with the module."""
        name, tensor = _literal(info.arg(0, "name")), info.arg(1, "tensor")
        if not isinstance(name, str) or self.ctx.klass is None:
            return
        sink = self._attribute_sink if self._attribute_sink is not None else self.ctx.klass.attributes
        if name in sink:
            self.ctx.klass.unstable.add(name)
        sink[name] = tensor.with_(registered=True, device=None) if isinstance(tensor, TensorValue) else None

    def _field_default(self, info: CallInfo, env: Env) -> Value:
        """``field(default=...)`` or ``field(default_factory=lambda: [...])``: the value a new instance gets."""
        if "default" in info.kwargs:
            return info.kwargs["default"]
        factory = info.arg_node(0, "default_factory") if info.has_keyword("default_factory") else None
        if isinstance(factory, ast.Lambda) and not factory.args.args:
            return self.expr(factory.body, env)
        if isinstance(factory, ast.Name) and factory.id in ("list", "tuple") and self._is_global(factory.id, env):
            return TupleValue(())
        if isinstance(factory, ast.Name) and factory.id == "dict" and self._is_global(factory.id, env):
            return DictValue(())
        return None

    def _is_global(self, name: str, env: Env) -> bool:
        """``name`` means the module-level binding here: not shadowed by a local of the same name."""
        if name not in env:
            return True
        # At module level (in any branch), a name bound once there is that binding; a class body's own names and
        # a function's locals shadow it.
        return self.ctx.function is None and self.ctx.klass is None and name in self.stable_globals

    def _construct(self, klass: ClassInfo, info: CallInfo) -> Value:
        """An instance of the file's class, carrying the constructor arguments the call gives (those known)."""
        init = klass.method("__init__")
        if klass.fields is not None and init is None:
            bound = self._bind_fields(klass, info)
        else:
            bound = self._bind_arguments(init, info, skip_first=True) if init is not None else None
        arguments = tuple(bound.items()) if bound and any(v is not None for v in bound.values()) else ()
        origin = Origin(info.node, f"在这里创建了 `{klass.name}`")
        if klass.is_module:
            return ModuleValue(
                klass.torch_base or "torch.nn.Module", arguments, user_class=klass.name, origin=origin, training=True
            )
        facts: list[tuple[str, Any]] = [("class", klass.name), ("init", arguments)]
        if klass.torch_base and klass.torch_base.startswith("torch.utils.data."):
            return InstanceValue("dataset", (("on_cpu", not klass.moves_to_device), *facts), origin)
        return InstanceValue("user", tuple(facts), origin)

    # ---- torch functions and classes

    def _torch_call(self, qualname: str, info: CallInfo, env: Env) -> Value:
        short = qualname.rsplit(".", 1)[-1]
        node = info.node
        if qualname == "torch.device":
            return DeviceValue(parse_device(info.arg(0, "type")))
        if qualname in _FUNCTIONAL_POOLS:
            return self._functional_pool(_FUNCTIONAL_POOLS[qualname], info)
        if qualname == "torch.nn.functional.pad":
            return _padded(info)
        if qualname == "torch.diff" and isinstance(info.arg(0, "input"), TensorValue):
            return _differenced(info.arg(0, "input"), info, 1)  # type: ignore[arg-type]
        if qualname == "torch.nn.functional.interpolate":
            return _interpolated(info)
        if qualname == "torch.where" and len(info.args) == 3 and not info.kwargs:
            parts = info.args
            if all(isinstance(v, TensorValue | Literal | Number) for v in parts):
                shape: Any = ()
                for part in parts:
                    if isinstance(part, TensorValue):
                        shape, problem = shapes.broadcast(shape, part.shape)
                        if problem or shape is None:
                            return TensorValue(is_leaf=False)
                kept = [v for v in parts[1:] if isinstance(v, TensorValue)]
                dtypes = {v.dtype for v in kept}
                devices = {v.device for v in parts if isinstance(v, TensorValue)}
                return TensorValue(
                    shape=shape,
                    dtype=dtypes.pop() if len(dtypes) == 1 else None,
                    device=devices.pop() if len(devices) == 1 else None,
                    is_leaf=False,
                )
        if qualname in CREATION_FUNCTIONS:
            return self._create(qualname, info)
        if qualname in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            data = info.arg(0, "data")
            base = data if isinstance(data, TensorValue) else TensorValue()
            return base.with_(
                requires_grad=_literal(info.arg(1, "requires_grad")) is not False,
                is_leaf=True,
                provenance=None,
                device=None,  # a parameter moves with its module: its device is the module's
                origin=Origin(node, "在这里创建了 `nn.Parameter`"),
                registered=True,
            )
        if qualname.startswith("torch.nn.") and short[:1].isupper() and qualname.count(".") == 2:
            return self._construct_layer(short, qualname, info)
        if qualname.startswith(TRACKED_CLASSES) and short[:1].isupper():
            args = [(k, v) for k, v in info.kwargs.items()]
            first = {"DataLoader": "dataset", "GradScaler": "device"}.get(short, "params")
            if info.args and first not in info.kwargs:
                args.append((first, info.args[0]))
            if short == "TensorDataset":
                on_cpu = all(isinstance(v, TensorValue) and v.device == CPU for v in info.args) and bool(info.args)
                args.append(("on_cpu", on_cpu))
                if not info.starred:
                    args.append(("tensors", TupleValue(tuple(info.args))))
            return InstanceValue(qualname, tuple(args), Origin(node, f"在这里创建了 `{short}`"))
        if qualname.startswith("math.") and short in _MATH_FLOATS:
            numbers = [_literal(v) for v in info.args]
            if numbers and all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
                try:
                    return Literal(float(getattr(math, short)(*numbers)))
                except (ValueError, OverflowError, TypeError):
                    return Number("float")
            return Number("float")  # math.sqrt(d_model): a float, whatever its value
        if qualname == "dataclasses.field":
            return self._field_default(info, env)
        if qualname == "argparse.ArgumentParser":
            return InstanceValue("argparse", (("defaults", DictValue(())),), Origin(node, "ArgumentParser"))
        if qualname in _NAMESPACES and not info.args and not info.unknown_keywords:
            # SimpleNamespace(**defaults, batch_size=50): an object whose attributes are its keywords
            return InstanceValue("namespace", (("fields", DictValue(tuple(info.kwargs.items()))),), Origin(node, short))
        if qualname in ("tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm") and info.args:
            # tqdm(loader) iterates what loader does
            return InstanceValue("progress", (("of", info.args[0]),), Origin(node.args[0], "tqdm"))
        if qualname in _SUBSETS:
            return self._subsets(qualname, info)
        if qualname.startswith("torchvision.datasets.") and short[:1].isupper():
            return InstanceValue("dataset", (("on_cpu", True),), Origin(node, f"在这里创建了 `{short}`"))
        if qualname in LOSS_FUNCTIONS:
            return self._loss_value(info.kwargs.get("reduction"), info.arg(0, "input"), node)
        receiver = info.arg(0, "input")
        if receiver is None and (qualname in PROVENANCE_FUNCTIONS or qualname == "torch.nn.functional.one_hot"):
            receiver = TensorValue()  # whatever went in, a softmax/sigmoid/one_hot gives a tensor of that kind
        if not isinstance(receiver, TensorValue):
            if qualname in ("torch.cat", "torch.concat", "torch.concatenate", "torch.stack"):
                return self._join(short, info)
            return None
        if qualname in PROVENANCE_FUNCTIONS and "sigmoid" not in qualname and "expit" not in qualname:
            self._check_dim(node, receiver, info.arg(1, "dim"))
        if qualname in ("torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"):
            return self._with_provenance(receiver, SOFTMAX, node, "在这里做了 softmax")
        if qualname in ("torch.log_softmax", "torch.nn.functional.log_softmax", "torch.special.log_softmax"):
            return self._with_provenance(receiver, LOG_SOFTMAX, node, "在这里做了 log_softmax")
        if qualname in ("torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"):
            return self._with_provenance(receiver, SIGMOID, node, "在这里做了 sigmoid")
        if qualname == "torch.log" and receiver.provenance == SOFTMAX:
            return self._with_provenance(receiver, LOG_SOFTMAX, node, "在这里对 softmax 的结果取了对数")
        if qualname == "torch.nn.functional.one_hot":
            classes = _int(info.arg(1, "num_classes"))
            shape = (
                (*receiver.dims, classes if classes and classes > 0 else None) if receiver.dims is not None else None  # type: ignore[misc]
            )
            return TensorValue(
                shape=shape,
                dtype="torch.int64",
                device=receiver.device,
                provenance=ONE_HOT,
                origin=Origin(node, "在这里做了 one_hot（结果是整数）"),
            )
        if qualname in SAME_SHAPE_FUNCTIONS:
            return self._same_shape(receiver, qualname)
        if qualname in ("torch.cat", "torch.concat", "torch.concatenate", "torch.stack"):
            return self._join(short, info)
        if qualname in ("torch.matmul", "torch.mm", "torch.bmm"):
            other = info.arg(1, "mat2" if short != "matmul" else "other")
            if isinstance(other, TensorValue):
                shape, problem = shapes.matmul(receiver.shape, other.shape, short)
                self._problem(node, "matmul", problem)
                return self._fresh(self._derived(receiver, other, shape))
            return None
        if short in (
            "flatten",
            "squeeze",
            "unsqueeze",
            "transpose",
            "permute",
            "reshape",
            "sum",
            "mean",
            "argmax",
            "argmin",
            "amax",
            "amin",
            "t",
            "max",
            "min",
        ):
            # torch.flatten(x, 1) is x.flatten(1): the same semantics with the tensor as first argument.
            shifted = CallInfo(node, method=short, receiver=receiver, args=info.args[1:], kwargs=info.kwargs)
            return self._tensor_method(receiver, short, shifted, offset=1)
        return None

    def _subsets(self, qualname: str, info: CallInfo) -> Value:
        """``random_split(ds, [800, 200])`` / ``Subset(ds, idx)``: datasets whose samples are ``ds``'s."""
        dataset = info.arg(0, "dataset")
        if not isinstance(dataset, InstanceValue):
            return None
        subset = InstanceValue(
            "torch.utils.data.Subset",
            (("dataset", dataset), ("on_cpu", dataset.arg("on_cpu"))),
            Origin(info.node, "在这里划分了数据集"),
        )
        if qualname.endswith("Subset"):
            return subset
        lengths = _known_items(info.arg(1, "lengths"))
        return TupleValue((subset,) * len(lengths)) if lengths and len(lengths) <= _UNROLL_ITEMS else None

    def _functional_pool(self, layer: str, info: CallInfo) -> Value:
        """``F.max_pool2d(x, 2)``: what the matching layer (``nn.MaxPool2d(2)``) makes of ``x``."""
        x = info.arg(0, "input")
        if not isinstance(x, TensorValue) or info.starred or info.unknown_keywords:
            return None
        names = LAYER_PARAMETERS.get(layer, ())
        args = [(names[i], _literal(v)) for i, v in enumerate(info.args[1:]) if i < len(names)]
        args += [(key, _literal(v)) for key, v in info.kwargs.items() if key != "input"]
        module = ModuleValue(f"torch.nn.{layer}", tuple(args))
        return self.layer_output(module, x, info.node)

    def _create(self, qualname: str, info: CallInfo) -> Value:
        short = qualname.rsplit(".", 1)[-1]
        node = info.node
        device_value = info.kwargs.get("device")
        if info.has_keyword("device"):
            device = parse_device(device_value)
        else:
            device = None if self.default_device_changed else CPU
        dtype_value = info.kwargs.get("dtype")
        dtype = normalize_dtype(_literal(dtype_value)) if isinstance(_literal(dtype_value), str) else None
        requires_grad = _literal(info.kwargs.get("requires_grad")) is True
        shape: Any = None
        if short.endswith("_like"):
            source = info.arg(0, "input")
            if isinstance(source, TensorValue):
                shape = source.shape
                dtype = dtype or source.dtype
                if not info.has_keyword("device"):
                    device = source.device
        elif short in ("zeros", "ones", "empty", "rand", "randn"):
            dims = _dims([v for v in info.args])
            shape = tuple(dims) if dims is not None and all(d is None or d >= 0 for d in dims) else None
            if dtype is None and "set_default_dtype" not in self.ctx.source.text:
                dtype = "torch.float32"
        elif short == "full":
            dims = _dims(info.args[:1])
            shape = tuple(dims) if dims is not None else None
            fill = _literal(info.arg(1, "fill_value"))
            if dtype is None:  # torch.full takes its dtype from the fill value
                dtype = "torch.bool" if isinstance(fill, bool) else "torch.int64" if isinstance(fill, int) else None
                if isinstance(fill, float) and "set_default_dtype" not in self.ctx.source.text:
                    dtype = "torch.float32"
        elif short == "randint":
            size = info.arg(2, "size") if len(info.args) >= 3 else info.arg(1, "size")
            dims = _dims([size]) if isinstance(size, TupleValue) else None
            shape = tuple(dims) if dims is not None else None
            dtype = dtype or "torch.int64"
        elif short == "arange":
            numbers = [_literal(v) for v in info.args]
            if numbers and all(isinstance(n, int) and not isinstance(n, bool) for n in numbers) and len(numbers) <= 3:
                start, end, step = (
                    (0, numbers[0], 1) if len(numbers) == 1 else (*numbers[:2], numbers[2] if len(numbers) == 3 else 1)
                )
                if step:
                    shape = (max(0, -(-(end - start) // step)),)
                dtype = dtype or "torch.int64"
        elif short == "eye":
            n = _int(info.arg(0, "n"))
            m = _int(info.arg(1, "m")) if len(info.args) > 1 else n
            shape = (n, m) if n is not None and m is not None else None
        elif short == "randperm":
            n = _int(info.arg(0, "n"))
            shape = (n if n is not None and n >= 0 else None,)
            dtype = dtype or "torch.int64"
        elif short == "linspace":
            steps = _int(info.arg(2, "steps"))
            shape = (steps,) if steps is not None else None
        elif short in ("tensor", "as_tensor"):
            data = info.args[0] if info.args else None
            shape, inferred = _nested_shape(data)
            dtype = dtype or inferred
            if inferred is None and not info.has_keyword("device"):
                device = None  # not a literal: may be a tensor, whose device the copy keeps
        elif short == "from_numpy":
            device = CPU
        strides = shapes.contiguous_strides(shape) if shapes.known(shape) else None
        return TensorValue(
            shape=shape,
            dtype=normalize_dtype(dtype),
            device=device,
            contiguous=True,
            strides=strides,
            requires_grad=requires_grad,
            is_leaf=True,
            origin=Origin(node, f"在这里创建（`{short}`）"),
        )

    def _join(self, short: str, info: CallInfo) -> Value:
        tensors = info.arg(0, "tensors")
        if isinstance(tensors, SequenceOf) and isinstance(tensors.item, TensorValue):
            return _joined_unknown_count(short, tensors.item, info)
        if not isinstance(tensors, TupleValue) or not all(isinstance(t, TensorValue) for t in tensors.items):
            return None
        dim = _int(info.arg(1, "dim")) if (len(info.args) > 1 or "dim" in info.kwargs) else 0
        if dim is None:
            return None
        shape_list = [t.shape for t in tensors.items]  # type: ignore[union-attr]
        join = shapes.stack if short == "stack" else shapes.concatenate
        shape, problem = join(shape_list, dim)
        self._problem(info.node, "dim" if problem and "超出范围" in problem else "join", problem)
        devices = {t.device for t in tensors.items}  # type: ignore[union-attr]
        return TensorValue(shape=shape, device=devices.pop() if len(devices) == 1 else None, is_leaf=False)

    def _construct_layer(self, short: str, qualname: str, info: CallInfo) -> Value:
        node = info.node
        if short == "Sequential":
            children = tuple(v if isinstance(v, ModuleValue) else None for v in info.args)
            if node.keywords or info.starred:
                children = ()
            return ModuleValue(
                qualname, children=children, origin=Origin(node, "在这里定义了 `Sequential`"), training=True
            )
        if short == "ModuleList":
            given = info.arg(0, "modules")
            children = (
                tuple(v if isinstance(v, ModuleValue) else None for v in given.items)
                if isinstance(given, TupleValue)
                else ()
            )
            return ModuleValue(
                qualname, children=children, origin=Origin(node, "在这里定义了 `ModuleList`"), training=True
            )
        names = LAYER_PARAMETERS.get(short, ())
        args: list[tuple[str, Any]] = []
        for index, value in enumerate(info.args):
            if index < len(names) and not info.starred:
                args.append((names[index], _literal(value) if not isinstance(value, ModuleValue) else value))
        for key, value in info.kwargs.items():
            args.append((key, _literal(value)))
        return ModuleValue(qualname, tuple(args), origin=Origin(node, f"在这里定义了 `{short}`"), training=True)

    # ---- tensor methods

    def _tensor_method(self, tensor: TensorValue, method: str, info: CallInfo, offset: int = 0) -> Value:
        node = info.node
        args = info.args
        if method in ("view", "reshape"):
            named = _size_dims(args) if args else None
            if named is None and "shape" in info.kwargs:
                named = _size_dims([info.kwargs["shape"]])
            requested = [d if isinstance(d, int) else None for d in named] if named is not None else None
            if requested is None:
                return TensorValue(
                    dtype=tensor.dtype, device=tensor.device, is_leaf=False, requires_grad=tensor.requires_grad
                )
            shape, problem = shapes.infer_view_shape(tensor.shape, requested)
            self._problem(node, "count", problem)
            strides = None
            contiguous: bool | None = None
            if shapes.known(shape) and tensor.strides is not None and tensor.shape is not None:
                strides = shapes.view_strides(tensor.shape, tensor.strides, shape)  # type: ignore[arg-type]
                if strides is None and method == "view" and not problem:
                    self._problem(node, "view_stride", "这个张量在内存中不连续，无法按新形状 `view`")
                if strides is None and method == "reshape":
                    strides = shapes.contiguous_strides(shape)  # type: ignore[arg-type]
                if strides is not None:
                    contiguous = shapes.is_contiguous(shape, strides)  # type: ignore[arg-type]
            provenance = tensor.provenance if tensor.provenance in (SOFTMAX, LOG_SOFTMAX, SIGMOID, LOGITS) else None
            changes: dict[str, Any] = {}
            if not problem:
                problem = self._last_batch_problem(tensor, named, method)
                self._problem(node, "count", problem)
            if not problem and not shapes.known(shape) and (tensor.symbolic is not None or requested != named):
                shape, problem, changes = self._view_named(tensor, named, method, node)  # type: ignore[arg-type]
                contiguous = changes.pop("contiguous", None)
            return tensor.with_(
                shape=shape,
                tail=None,
                strides=strides,
                contiguous=contiguous,
                provenance=provenance,
                is_leaf=False,
                **changes,
            )
        if method in ("permute",):
            dims = _dims(args) if args else None
            if dims is None or any(d is None for d in dims):
                return TensorValue(dtype=tensor.dtype, device=tensor.device, is_leaf=False)
            shape, problem = shapes.permute(tensor.shape, dims)  # type: ignore[arg-type]
            self._problem(node, "dim", problem)
            if problem:
                return None
            return self._permuted(tensor, dims, node)  # type: ignore[arg-type]
        if method in ("transpose", "swapaxes", "swapdims"):
            a, b = _int(info.arg(0, "dim0")), _int(info.arg(1, "dim1"))
            if a is None or b is None or tensor.shape is None:
                return TensorValue(dtype=tensor.dtype, device=tensor.device, contiguous=None, is_leaf=False)
            shape, problem = shapes.transpose(tensor.shape, a, b)
            self._problem(node, "dim", problem)
            if problem or not tensor.shape:
                return None
            dims = list(range(len(tensor.shape)))
            i, j = a % len(dims), b % len(dims)
            dims[i], dims[j] = dims[j], dims[i]
            return self._permuted(tensor, dims, node)
        if method == "t":
            if tensor.shape is None or len(tensor.shape) > 2:
                return None
            return self._permuted(tensor, list(range(len(tensor.shape)))[::-1], node)
        if method == "contiguous":
            fresh = {"strides": None, "sym_strides": None, **layers.fresh_strides(tensor.dims)}
            return tensor.with_(contiguous=True, is_leaf=False, **fresh)
        if method in ("squeeze", "unsqueeze"):
            dim_value = info.arg(0, "dim")
            dim = _int(dim_value)
            if method == "squeeze" and dim_value is None and not args and "dim" not in info.kwargs:
                shape, problem = shapes.squeeze(tensor.shape, None)
            elif dim is None:
                return TensorValue(dtype=tensor.dtype, device=tensor.device, is_leaf=False)
            else:
                op = shapes.squeeze if method == "squeeze" else shapes.unsqueeze
                shape, problem = op(tensor.shape, dim)
                self._problem(node, "dim", problem)
            return self._reshaped(tensor, shape)
        if method == "flatten":
            start = _int(info.arg(0, "start_dim")) if (args or "start_dim" in info.kwargs) else 0
            end = _int(info.arg(1, "end_dim")) if (len(args) > 1 or "end_dim" in info.kwargs) else -1
            if start is None or end is None:
                return TensorValue(dtype=tensor.dtype, device=tensor.device, is_leaf=False)
            shape, problem = shapes.flatten(tensor.shape, start, end)
            self._problem(node, "dim", problem)
            return self._reshaped(tensor, shape)
        if method in REDUCTIONS or method in ARG_REDUCTIONS or method in ("max", "min"):
            return self._reduction(tensor, method, info)
        if method in ("softmax", "log_softmax"):
            self._check_dim(node, tensor, info.arg(0, "dim"))
            provenance = SOFTMAX if method == "softmax" else LOG_SOFTMAX
            return self._with_provenance(tensor, provenance, node, f"在这里做了 {method}")
        if method == "sigmoid":
            return self._with_provenance(tensor, SIGMOID, node, "在这里做了 sigmoid")
        if method == "log" and tensor.provenance == SOFTMAX:
            return self._with_provenance(tensor, LOG_SOFTMAX, node, "在这里对 softmax 的结果取了对数")
        if method in ("to", "cuda", "cpu") or method in DTYPE_METHODS or method == "type_as":
            return self._converted(tensor, method, info)
        if method in ("detach", "clone", "requires_grad_", "detach_"):
            changes: dict[str, Any] = {}
            if method in ("detach", "detach_"):
                changes.update(requires_grad=False, is_leaf=True)
            elif method == "requires_grad_":
                changes.update(requires_grad=_literal(info.arg(0, "requires_grad")) is not False)
            else:
                changes.update(is_leaf=False)
            return tensor.with_(**changes)
        if method in SAME_SHAPE_METHODS:
            keep_leaf = method.endswith("_")
            return TensorValue(
                shape=tensor.dims,
                tail=tensor.tail,
                dtype=_elementwise_dtype(method, tensor.dtype),
                device=tensor.device,
                requires_grad=tensor.requires_grad,
                is_leaf=tensor.is_leaf if keep_leaf else False,
                contiguous=tensor.contiguous if keep_leaf else None,
                strides=tensor.strides if keep_leaf else None,
            )
        if method in _COMPARISON_METHODS:
            # ids.eq(PAD), x.gt(0): a bool tensor, of the broadcast shape
            other = info.arg(0, "other")
            if isinstance(other, Literal | Number) or method in ("isnan", "isinf", "isfinite", "logical_not"):
                shape: Any = tensor.dims
            elif isinstance(other, TensorValue):
                shape, _ = shapes.broadcast(tensor.shape, other.shape)
            else:
                shape = None
            return TensorValue(shape=shape, dtype="torch.bool", device=tensor.device, is_leaf=False)
        if method in ("matmul", "mm", "bmm"):
            other = info.arg(0, "other" if method == "matmul" else "mat2")
            if isinstance(other, TensorValue):
                shape, problem = shapes.matmul(tensor.shape, other.shape, method)
                self._problem(node, "matmul", problem)
                shape = shapes.matmul_named(tensor.dims, other.dims, shape)
                return self._fresh(self._derived(tensor, other, shape))
            return None
        if method == "size":
            if info.args:
                dim = _int(info.args[0])
                dims = tensor.dims
                if dim is not None and dims is not None:
                    self._problem(node, "dim", shapes.dim_problem(dim, len(dims)))
                    index = shapes.normalize_dim(dim, len(dims))
                    if index is not None and dims[index] is not None:
                        return Literal(dims[index])
                return None
            return self._tensor_attribute(tensor, "shape", node)
        if method == "dim":
            return Literal(tensor.rank) if tensor.rank is not None else None
        if method in ("chunk", "split", "unbind"):
            return _pieces(tensor, method, info)
        if method == "diff":
            return _differenced(tensor, info, 0)
        if method == "repeat" and tensor.dims is not None and not info.kwargs:
            sizes = _size_dims(args)
            if sizes is not None and len(sizes) >= len(tensor.dims) and all(s is not None for s in sizes):
                own = (1,) * (len(sizes) - len(tensor.dims)) + tuple(tensor.dims)
                repeated = tuple(symbols.multiply(s, d) for s, d in zip(sizes, own, strict=True))
                return TensorValue(shape=repeated, dtype=tensor.dtype, device=tensor.device, is_leaf=False)
        if method in ("new_zeros", "new_ones", "new_empty", "new_full") and not info.starred:
            sizes = _size_dims(args[:-1] if method == "new_full" else args) if args else None
            dtype = info.kwargs.get("dtype")
            return TensorValue(
                shape=tuple(sizes) if sizes is not None else None,
                dtype=_literal(dtype) if isinstance(dtype, Literal) else tensor.dtype,
                device=tensor.device if "device" not in info.kwargs else parse_device(info.kwargs["device"]),
                is_leaf=True,
            )
        if method == "expand" and tensor.shape is not None:
            sizes = _dims(args)
            if sizes is not None and len(sizes) >= len(tensor.shape):
                own = (None,) * (len(sizes) - len(tensor.shape)) + tensor.shape
                shape = tuple(o if s == -1 else s for s, o in zip(sizes, own, strict=True))
                return TensorValue(shape=shape, dtype=tensor.dtype, device=tensor.device, contiguous=False)
        return None

    def _last_batch_problem(self, tensor: TensorValue, named: list[Any], method: str) -> str | None:
        """``x.view(BATCH_SIZE, -1)`` on a loader's batch whose last batch is shorter: fails on that batch."""
        first = tensor.dims[0] if tensor.dims else None
        if not isinstance(first, symbols.Sym) or first not in self._partial_batches or not named:
            return None
        batch, length = self._partial_batches[first]
        rest = symbols.product(list(tensor.dims[1:]))  # type: ignore[index]
        fixed = symbols.product([d for d in named if d != -1])
        if named[0] != batch or not isinstance(rest, int) or not isinstance(fixed, int) or fixed <= 0:
            return None
        last = (length % batch) * rest  # the elements of the last batch
        if (last % fixed == 0) if -1 in named else (last == fixed):
            return None  # that batch still fits the shape (wrongly, but without an error)
        return (
            f"数据集有 {length} 个样本，`batch_size={batch}` 时最后一个批次只有 {length % batch} 个，"
            f"`{method}({batch}, ...)` 在那一批会失败；第一维写 `-1` 或 `x.size(0)`"
        )

    def _view_named(
        self, tensor: TensorValue, named: list[Any], method: str, node: ast.AST
    ) -> tuple[Any, str | None, dict[str, Any]]:
        """``view``/``reshape`` where some size has a name: the new dims, a problem that holds for every binding
        (element counts, or a layout ``view`` cannot address), and the named strides of the result."""
        dims, problem = shapes.view_named(tensor.dims, named)
        self._problem(node, "count", problem)
        if dims is None:
            return None, problem, {}
        changes: dict[str, Any] = {}
        if tensor.sym_strides is not None and shapes.sized(tensor.dims) and shapes.sized(dims):
            strides, impossible = shapes.view_strides_named(tensor.dims, tensor.sym_strides, dims)  # type: ignore[arg-type]
            if impossible and method == "view":
                names = _deciding_names(tensor.dims, tensor.sym_strides, dims)  # type: ignore[arg-type]
                problem = "这个张量在内存中不连续，无法按新形状 `view`" + (
                    f"（只要 {'、'.join(f'`{n}`' for n in names)} 大于 1）" if names else ""
                )
                self._problem(node, "view_stride", problem)
            if strides is None and method == "reshape":
                strides = shapes.contiguous_named(dims)
            if strides is not None:
                changes["sym_strides"] = strides
                changes["contiguous"] = True if strides == shapes.contiguous_named(dims) else None
        return dims, problem, changes

    def _reduction(self, tensor: TensorValue, method: str, info: CallInfo) -> Value:
        has_dim = bool(info.args) or "dim" in info.kwargs
        dim_value = info.arg(0, "dim") if has_dim else None
        dim: Any = _int(dim_value)
        if dim is None and isinstance(_literal(dim_value), tuple):
            dim = _literal(dim_value)
        if has_dim and dim is None:
            if method in ("max", "min") and not isinstance(dim_value, TensorValue):
                return None  # x.max(d): a (values, indices) pair for an int d, one tensor for a tensor d
            return TensorValue(device=tensor.device, is_leaf=False)
        keepdim = _literal(info.arg(1, "keepdim")) is True
        shape, problem = shapes.reduce(tensor.shape, dim, keepdim)
        self._problem(info.node, "dim", problem)
        is_index = method in ARG_REDUCTIONS
        result = TensorValue(
            shape=shape,
            dtype="torch.int64" if is_index else tensor.dtype,
            device=tensor.device,
            requires_grad=None if is_index else tensor.requires_grad,
            is_leaf=False,
        )
        if method in ("max", "min") and has_dim:
            return TupleValue((result, result.with_(dtype="torch.int64", requires_grad=False)))
        return result

    def _converted(self, tensor: TensorValue, method: str, info: CallInfo) -> Value:
        device, dtype = tensor.device, tensor.dtype
        if method == "cuda":
            device = CUDA
        elif method == "cpu":
            device = CPU
        elif method in DTYPE_METHODS:
            dtype = DTYPE_METHODS[method]
        elif method == "type_as":
            other = info.arg(0, "other")
            dtype = other.dtype if isinstance(other, TensorValue) else None
        else:  # to(device), to(dtype), to(other), to(device, dtype)
            given = list(info.args) + [info.kwargs[k] for k in ("device", "dtype", "other") if k in info.kwargs]
            for value in given:
                if value is None:  # a variable we cannot read: it may be a device, a dtype or a tensor
                    device = dtype = None
                    continue
                literal = _literal(value)
                if isinstance(literal, str) and literal.startswith("torch."):
                    dtype = normalize_dtype(literal)
                elif isinstance(value, DeviceValue) or isinstance(literal, str):
                    device = parse_device(value)
                elif isinstance(value, TensorValue):
                    device, dtype = value.device, value.dtype
                else:
                    device = None  # a variable we cannot read: the device is unknown
        requires_grad = tensor.requires_grad
        return tensor.with_(
            device=device,
            dtype=dtype,
            is_leaf=tensor.is_leaf if device == tensor.device else False,
            requires_grad=requires_grad,
        )

    def _permuted(self, tensor: TensorValue, dims: Sequence[int], node: ast.AST) -> TensorValue:
        own = tensor.dims
        shape = tuple(own[d] for d in dims) if own is not None else None
        strides = tuple(tensor.strides[d] for d in dims) if tensor.strides is not None else None
        named_strides = tuple(tensor.sym_strides[d] for d in dims) if tensor.sym_strides is not None else None
        if strides is not None and shape is not None:
            contiguous = shapes.is_contiguous(shape, strides)  # type: ignore[arg-type]
        elif list(dims) == sorted(dims):
            contiguous = tensor.contiguous
        else:
            contiguous = None  # sizes of 1 can keep a permuted tensor contiguous: not provable without them
        return tensor.with_(
            shape=shape,
            tail=None,
            strides=strides,
            sym_strides=named_strides,
            contiguous=contiguous,
            provenance=None,
            is_leaf=False,
            origin=Origin(node, "在这里交换了维度（结果在内存中不连续）"),
        )

    def _reshaped(self, tensor: TensorValue, shape: Any) -> TensorValue:
        strides = shapes.contiguous_strides(shape) if shapes.known(shape) and tensor.contiguous else None
        return tensor.with_(
            shape=shape, tail=None, strides=strides, is_leaf=False, contiguous=True if tensor.contiguous else None
        )

    def _same_shape(self, tensor: TensorValue, qualname: str = "") -> TensorValue:
        return TensorValue(
            shape=tensor.dims,
            tail=tensor.tail,
            dtype=_elementwise_dtype(qualname.rsplit(".", 1)[-1], tensor.dtype),
            device=tensor.device,
            requires_grad=tensor.requires_grad,
            is_leaf=False,
        )

    def _check_dim(self, node: ast.AST, tensor: TensorValue, dim: Value) -> None:
        """Record a ``dim`` argument that is out of range for a tensor of known rank."""
        index = _int(dim)
        if index is not None and tensor.shape is not None:
            self._problem(node, "dim", shapes.dim_problem(index, len(tensor.shape)))

    def _with_provenance(self, tensor: TensorValue, provenance: str, node: ast.AST, what: str) -> TensorValue:
        return TensorValue(
            shape=tensor.dims,
            tail=tensor.tail,
            dtype=tensor.dtype,
            device=tensor.device,
            requires_grad=tensor.requires_grad,
            is_leaf=False,
            provenance=provenance,
            origin=Origin(node, what),
        )

    def _loss_value(self, reduction: Value, source: Value, node: ast.AST) -> TensorValue:
        reduced = _literal(reduction) in (None, "mean", "sum")
        device = source.device if isinstance(source, TensorValue) else None
        return TensorValue(
            shape=() if reduced else None,
            device=device,
            provenance=LOSS,
            is_leaf=False,
            requires_grad=self.ctx.grad_enabled or None,
            origin=Origin(node, "在这里计算了损失"),
        )

    # ---- modules

    def _module_method(self, module: ModuleValue, info: CallInfo, env: Env) -> Value:
        method = info.method
        if method in ("to", "cuda", "cpu"):
            device = CUDA if method == "cuda" else CPU if method == "cpu" else None
            if method == "to":
                candidates = list(info.args) + ([info.kwargs["device"]] if "device" in info.kwargs else [])
                for value in candidates:
                    literal = _literal(value)
                    if isinstance(literal, str) and literal.startswith("torch."):
                        continue  # model.to(torch.float16): a dtype, not a device
                    device = value.device if isinstance(value, TensorValue) else parse_device(value)
                    break
            moved = module.with_(device=device)
            func = info.node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                env[func.value.id] = moved  # modules move in place: the name now holds the moved model
            return moved
        if method in ("train", "eval"):
            mode: bool | None = False
            if method == "train":
                given = _literal(info.arg(0, "mode"))
                written = bool(info.node.args or info.node.keywords)
                mode = given if isinstance(given, bool) else (None if written else True)
            changed = module.with_(training=mode)
            func = info.node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                env[func.value.id] = changed  # modes change in place, like devices
            return changed
        if method in ("requires_grad_", "float", "half", "double"):
            return module
        if method in facts.MODULE_ITERATORS and not self._redefines(module, method):
            return InstanceValue("torch.nn.Module." + method)
        if method == "forward":
            return self._apply_module(module, CallInfo(info.node, args=info.args, kwargs=info.kwargs))
        return self._user_method(module, info, env)

    def _redefines(self, module: ModuleValue | OfClass, method: str) -> bool:
        """True when the file's class of ``module`` defines ``method`` itself (so torch's meaning may not hold)."""
        klass = self._user_class_of(module)
        return klass is not None and klass.method(method) is not None

    def _class_method(self, receiver: OfClass, info: CallInfo, env: Env) -> Value:
        """A method of a value known only by its class: what torch's method gives for any instance."""
        method = info.method or ""
        if receiver.user_class is not None and self._redefines(receiver, method):
            return self._user_method(receiver, info, env)
        is_module = receiver.qualname == facts.MODULE or facts.is_module_class(receiver.qualname)
        if is_module and method in facts.MODULE_ITERATORS:
            return InstanceValue("torch.nn.Module." + method)
        if is_module and method in facts.MODULE_SELF_METHODS:
            return receiver
        return None

    def _user_method(self, receiver: Value, info: CallInfo, env: Env | None = None) -> Value:
        """``obj.method(...)`` where ``obj`` is an instance of the file's class: the method, for this call."""
        klass = self._user_class_of(receiver)
        function = klass.method(info.method) if klass is not None and info.method else None
        if function is None:
            return None
        returned = self._call_function(function, self._defining_class(klass, info.method), info, receiver)
        if env is not None:
            self._after_call(function, info, env, skip_first=True)
        return returned

    def _apply_module(self, module: ModuleValue, info: CallInfo) -> Value:
        """The value of calling a layer (or a user model) on the call's arguments."""
        if module.user_class is not None:
            klass = self.classes.get(module.user_class)
            forward = klass.method("forward") if klass is not None else None
            returned = None
            if forward is not None:
                returned = self._call_function(forward, self._defining_class(klass, "forward"), info, module)
            if isinstance(returned, TensorValue):
                # A moved model computes on its device, unless its own code moves tensors around.
                device = module.device if klass is not None and not klass.moves_to_device else None
                if module.device is None:
                    device = returned.device  # not moved as a whole: where its forward computed, for this input
                return TensorValue(
                    shape=returned.dims,
                    tail=returned.tail,
                    dtype=returned.dtype,
                    device=device,
                    provenance=returned.provenance,
                    origin=returned.origin,
                    is_leaf=False,
                )
            if isinstance(returned, TupleValue | DictValue):
                return returned  # (output, hidden), (recon, mu, logvar), {"logits": ...}: as forward made them
            return None
        x = info.arg(0, "input")
        short = module.qualname.rsplit(".", 1)[-1]
        if short.endswith("Loss"):
            return self._loss_value(Literal(module.arg("reduction", "mean")), x, info.node)
        if short == "Sequential":
            return self._apply_sequential(module, x, info)
        if x is None:
            x = TensorValue()  # a layer's input is a tensor even when we do not know which
        if not isinstance(x, TensorValue):
            return None
        return self.layer_output(module, x, info.node)

    def _apply_sequential(self, module: ModuleValue, x: Value, info: CallInfo) -> Value:
        if not module.children:
            return None
        steps: list[tuple[ModuleValue, Value]] = []
        value = self._run_layers(module.children, x if x is not None else TensorValue(), info, steps)
        info.layer_inputs = tuple(steps)
        return value

    def _run_layers(self, children: tuple[ModuleValue | None, ...], value: Value, info: CallInfo, steps: list) -> Value:
        """Feed ``value`` through ``children`` in order, noting what reached each layer (nested ones included)."""
        for child in children:
            if not isinstance(value, TensorValue):
                return None
            if child is None:
                result = None
            elif child.qualname == "torch.nn.Sequential" and child.children:
                result = self._run_layers(child.children, value, info, steps)
            else:
                steps.append((child, value))
                if child.user_class is not None:  # a block of the file's own: its forward, for this input
                    result = self._apply_module(child, CallInfo(info.node, args=[value]))
                else:
                    result = self.layer_output(child, value, info.node)
            # A layer we do not model still hands one tensor on: unknown, but later layers (a final Softmax)
            # still say what they make of it.
            value = result if result is not None else TensorValue()
        return value

    def layer_output(self, module: ModuleValue, x: TensorValue, node: ast.AST) -> Value:
        result = layers.layer_output(module, x, node)
        short = module.qualname.rsplit(".", 1)[-1]
        keeps_layout = short in layers.SAME_SHAPE_LAYERS or short in _POOLS
        if (
            isinstance(result, TensorValue)
            and (short in _FRESH_LAYERS or (keeps_layout and x.contiguous is True))
            and result.strides is None
            and result.dims is not None
            and "channels_last" not in self.ctx.source.text
        ):
            # a new tensor in the default layout (a file that never asks for channels_last keeps that layout), or
            # an elementwise layer's / a pool's result on a contiguous input, which keeps the input's layout
            result = result.with_(contiguous=True, **layers.fresh_strides(result.dims))
        return result

    # ---- iteration

    def _dataset_sample(self, dataset: Value, node: ast.AST) -> Value:
        """One item of a dataset: a TensorDataset's rows, or what a Dataset class's ``__getitem__`` returns."""
        if not isinstance(dataset, InstanceValue):
            return None
        if dataset.qualname == "torch.utils.data.Subset":
            return self._dataset_sample(dataset.arg("dataset"), node)
        tensors = dataset.arg("tensors")
        if isinstance(tensors, TupleValue):
            rows = [
                TensorValue(shape=t.shape[1:], dtype=t.dtype, device=t.device, origin=t.origin)
                if isinstance(t, TensorValue) and t.shape
                else TensorValue(dtype=t.dtype, device=t.device)
                if isinstance(t, TensorValue)
                else None
                for t in tensors.items
            ]
            return TupleValue(tuple(rows))
        klass = self._user_class_of(dataset)
        if klass is None or klass.method("__getitem__") is None:
            return None
        call = ast.Call(func=ast.Name(id="__getitem__"), args=[], keywords=[])
        ast.copy_location(call, node)
        return self._user_method(dataset, CallInfo(call, method="__getitem__", args=[Number("int")]))

    def _dataset_length(self, dataset: Value, node: ast.AST) -> int | None:
        """``len(dataset)`` when it is known: a TensorDataset's first dim, a Dataset class's ``__len__``."""
        if not isinstance(dataset, InstanceValue):
            return None
        tensors = dataset.arg("tensors")
        if isinstance(tensors, TupleValue):
            first = tensors.items[0] if tensors.items else None
            return first.shape[0] if isinstance(first, TensorValue) and first.shape else None
        klass = self._user_class_of(dataset)
        if klass is None or klass.method("__len__") is None:
            return None
        call = ast.copy_location(ast.Call(func=ast.Name(id="__len__"), args=[], keywords=[]), node)
        return _int(self._user_method(dataset, CallInfo(call, method="__len__")))

    def _loader_batch(self, loader: InstanceValue, dataset: Value, node: ast.AST) -> Value:
        """A batch of a DataLoader with the default collate: the samples' structure with a batch dim in front."""
        sample = self._dataset_sample(dataset, node)
        if sample is None:
            return None
        size = loader.arg("batch_size", Literal(1))  # DataLoader's default batch_size is 1
        if isinstance(size, Literal) and size.value is None:
            return sample  # batch_size=None: no batching, samples as they are
        batch: Any = _int(size)
        if batch is not None and batch != 1 and _literal(loader.arg("drop_last")) is not True:
            # The last batch may be shorter: a size of its own, the same for every tensor of the batch.
            size_name = symbols.Sym.named("batch", hash(("loader", node.lineno, node.col_offset)))
            length = self._dataset_length(dataset, node)
            if length is not None and length % batch:
                self._partial_batches[size_name] = (batch, length)
            batch = size_name
        on_cpu = (
            isinstance(dataset, InstanceValue) and dataset.arg("on_cpu") is True and not self.default_device_changed
        )
        return _collated(sample, batch, Origin(node, "这个 batch 来自 DataLoader，在 CPU 上") if on_cpu else None)

    def _iteration(self, iterable: Value, node: ast.expr) -> Value:
        """What each item of ``for ... in iterable`` is, when known."""
        if isinstance(iterable, SequenceOf):
            return iterable.item
        known = _known_items(iterable) if not isinstance(iterable, InstanceValue) else None
        if known:
            item = known[0]
            for other in known[1:]:
                item = merge(item, other)
            return item
        if isinstance(iterable, InstanceValue) and iterable.qualname == "builtins.zip":
            zipped = iterable.arg("of")
            parts = (
                tuple(self._iteration(part, node) for part in zipped.items) if isinstance(zipped, TupleValue) else ()
            )
            return TupleValue(parts) if any(p is not None for p in parts) else None
        if isinstance(iterable, InstanceValue) and iterable.qualname in ("builtins.enumerate", "progress"):
            inner_node = iterable.origin.node if iterable.origin is not None else node
            inner = self._iteration(iterable.arg("of"), inner_node)  # type: ignore[arg-type]
            if iterable.qualname == "progress":
                return inner
            return TupleValue((Number("int"), inner)) if inner is not None else None
        if isinstance(iterable, InstanceValue):
            dataset = iterable.arg("dataset")
            if iterable.qualname.endswith("DataLoader") and iterable.arg("collate_fn") is None:
                batch = self._loader_batch(iterable, dataset, node)
                if batch is not None:
                    return batch
            if (
                iterable.qualname.endswith("DataLoader")
                and iterable.arg("collate_fn") is None
                and isinstance(dataset, InstanceValue)
                and dataset.arg("on_cpu") is True
                and not self.default_device_changed
            ):
                # The default collate stacks what the dataset returns: CPU samples make CPU batches.
                item = TensorValue(
                    device=CPU, is_leaf=True, origin=Origin(node, "这个 batch 来自 DataLoader，在 CPU 上")
                )
                return TupleValue((item, item))
            if iterable.qualname.startswith("torch.nn.Module."):
                element = facts.MODULE_ITERATORS.get(iterable.qualname.rsplit(".", 1)[1])
                if isinstance(element, tuple):  # named_parameters(): (name, parameter) pairs
                    return TupleValue(tuple(_element_value(e, node) for e in element))
                return _element_value(element, node)
        if isinstance(iterable, TensorValue) and iterable.shape:
            return TensorValue(shape=iterable.dims[1:], dtype=iterable.dtype, device=iterable.device, is_leaf=False)  # type: ignore[index]
        if isinstance(iterable, TensorValue):  # rows of a tensor of unknown rank: tensors where it is
            return TensorValue(dtype=iterable.dtype, device=iterable.device, is_leaf=False)
        return None


# Layers whose output is a newly allocated tensor in the default memory format.
_FRESH_LAYERS = frozenset({"Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "Embedding"})
# Functional pools and the layer each computes like.
_COMPARISON_METHODS = frozenset(
    "eq ne lt le gt ge greater less greater_equal less_equal not_equal isnan isinf isfinite logical_not".split()
)
_FLOAT_CONSTANTS = frozenset(
    f"{module}.{name}" for module in ("torch", "math", "numpy") for name in ("pi", "e", "inf", "nan", "tau")
)
_SUBSETS = frozenset(
    {"torch.utils.data.random_split", "torch.utils.data.dataset.random_split", "torch.utils.data.Subset"}
)
_FUNCTIONAL_POOLS = {
    f"torch.nn.functional.{name}": layer
    for name, layer in (
        ("max_pool1d", "MaxPool1d"),
        ("max_pool2d", "MaxPool2d"),
        ("avg_pool1d", "AvgPool1d"),
        ("avg_pool2d", "AvgPool2d"),
        ("adaptive_avg_pool1d", "AdaptiveAvgPool1d"),
        ("adaptive_avg_pool2d", "AdaptiveAvgPool2d"),
        ("adaptive_max_pool2d", "AdaptiveMaxPool2d"),
    )
}
_POOLS = frozenset({"MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d"})
_UNROLL_ITEMS = 8  # loops over at most this many known items run item by item
_UNROLL_BUDGET = 2000  # iterations run that way, per file
_MAX_DEPTH = 6  # calls of the file's own functions followed one inside the other
_SPECIALISATION_BUDGET = 400  # evaluations of a body for one call's arguments, per file


class _Overlay(dict):
    """The values of one specialised evaluation: written here, read through to the evaluation around it."""

    __slots__ = ("below",)

    def __init__(self, below: dict) -> None:
        super().__init__()
        self.below = below

    def __missing__(self, key: Any) -> Any:
        return self.below[key]

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.below

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        return self.below.get(key, default)


# max(x) is one tensor, max(x, 1) a (values, indices) pair: neither a tensor nor a sequence for certain.
_ONE_OR_PAIR = frozenset({"max", "min", "median", "nanmedian"})


def _is_static(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in function.decorator_list)


def _buffers_registered(function: ast.AST) -> set[str]:
    """The names ``self.register_buffer("name", ...)`` registers in ``function``."""
    return {
        node.args[0].value
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "register_buffer"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def _class_only(value: Value) -> Value:
    """Only the class of ``value``: a tensor with nothing else known, a module as :class:`OfClass`."""
    if isinstance(value, TensorValue):
        return TensorValue()
    if isinstance(value, ModuleValue | OfClass):
        return OfClass(value.qualname, value.user_class)
    return None


def _torch_result(qualname: str) -> Value:
    """What a torch function the interpreter does not model returns, from the facts tables: a tensor, tensors."""
    if facts.call_result(qualname) == facts.TENSOR:
        return TensorValue()
    if facts.call_yields_tensors(qualname) and qualname.rsplit(".", 1)[-1] not in _ONE_OR_PAIR:
        return SequenceOf(TensorValue())
    return None


def _tensor_method_result(tensor: TensorValue, method: str) -> Value:
    """What a tensor method the interpreter does not model returns: a tensor on the same device, tensors."""
    if method in facts.TENSOR_RETURNING_METHODS and method not in ("to", "cuda", "cpu", "type", "type_as"):
        return TensorValue(device=tensor.device)  # (type_as may move it: x.type_as(cuda_tensor))
    if method in facts.TENSOR_SEQUENCE_METHODS and method not in _ONE_OR_PAIR:
        return SequenceOf(TensorValue(device=tensor.device))
    return None


def _element_value(qualname: str | None, node: ast.AST) -> Value:
    """An item of a module's ``parameters()``, ``buffers()`` or ``modules()``."""
    if qualname == "torch.nn.Parameter":
        return TensorValue(requires_grad=True, is_leaf=True, registered=True, origin=Origin(node, "模型参数"))
    if qualname == facts.TENSOR:
        return TensorValue()  # a buffer: a tensor of the module's, nothing more known
    return OfClass(qualname) if qualname is not None else None


def _layer_tensor(layer: ModuleValue | OfClass, attr: str) -> Value:
    """``fc.weight``, ``bn.running_mean``: the parameter or buffer a torch layer registers, on its device.

    None where the layer was built without it (``bias=False``, ``affine=False``)."""
    registered = facts.module_attribute_result(layer.qualname, attr)
    if registered is None:
        return None
    if isinstance(layer, ModuleValue):
        switches = ("bias",) if attr == "bias" else ()
        switches += ("affine", "elementwise_affine") if attr in ("weight", "bias") else ()
        if any(layer.arg(switch) is False for switch in switches):  # args hold the literals themselves
            return None
    device = layer.device if isinstance(layer, ModuleValue) else None
    parameter = registered != facts.TENSOR
    return TensorValue(device=device, requires_grad=parameter or None, is_leaf=True, registered=True)


def _at_least_as_precise(current: Value, narrowed: Value) -> bool:
    """True when what a name holds already says what an ``isinstance`` test proves (or more)."""
    if isinstance(narrowed, TensorValue):
        return isinstance(current, TensorValue)
    if isinstance(narrowed, OfClass) and isinstance(current, ModuleValue | OfClass):
        if narrowed.user_class is not None:
            return current.user_class == narrowed.user_class
        return narrowed.qualname == facts.MODULE or (
            current.user_class is None and current.qualname == narrowed.qualname
        )
    return False


def _call_site_description(given: dict[str, Value]) -> str:
    shapes_given = "、".join(
        f"`{name}` 的形状是 {shapes.fmt(value.shape)}"
        for name, value in given.items()
        if isinstance(value, TensorValue) and value.shape is not None
    )
    return f"以这次调用的输入推算：{shapes_given}" if shapes_given else "以这次调用传入的参数推算"


def _carries_values(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """Some name the loop body reads before the body assigns it, and assigns later (``h`` in ``logits, h =
    step(token, h)``): only then does the first iteration see values the general pass forgets."""
    assigned = set(assigned_names(loop))
    if isinstance(loop, ast.For | ast.AsyncFor):
        loop_variables: set[str] = set()
        target_names(loop.target, loop_variables)
        assigned -= loop_variables  # the loop variable is the same in both passes
    if not assigned:
        return False
    stored: set[str] = set()
    for statement in loop.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in assigned - stored:
                return True
        stored |= set(assigned_names(statement)) if isinstance(statement, ast.stmt) else set()
    return False


def _deciding_names(dims: tuple, strides: tuple, new_dims: tuple) -> list[str]:
    """The named sizes a failing ``view`` depends on: those that, set to 1, would let it work."""
    names = []
    for atom in symbols.atoms_of([*dims, *new_dims]):
        one = [tuple(symbols.with_one(d, atom) for d in part) for part in (dims, strides, new_dims)]
        if not shapes.view_strides_named(*one)[1]:
            names.append(atom[0])
    return names


def _reads_shape(node: ast.expr) -> bool:
    """``x.shape`` or ``x.size(...)``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "shape"
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size"


def _comprehension_names(generator: ast.comprehension) -> set[str]:
    names: set[str] = set()
    target_names(generator.target, names)
    return names


def _is_dataclass_decorator(decorator: ast.expr, ctx: Context) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    qualname = ctx.qualify(target) or (target.id if isinstance(target, ast.Name) else "")
    return qualname in ("dataclasses.dataclass", "dataclass")


def _moved(module: ModuleValue, device: str) -> ModuleValue:
    """``module`` after ``.to(device)`` of a module holding it: the layers it contains moved too."""
    children = tuple(_moved(c, device) if c is not None and c.device is None else c for c in module.children)
    return module.with_(children=children, device=device)


def _elementwise_dtype(operation: str, dtype: str | None) -> str | None:
    if operation in FLOATING_ELEMENTWISE and (dtype in INTEGER_DTYPES or dtype == "torch.bool"):
        return "torch.float32"  # unless the default dtype was changed, which _create already watches for
    return dtype


def _joined_unknown_count(short: str, item: TensorValue, info: CallInfo) -> Value:
    """``torch.cat(preds)`` of a list a loop filled: the joined dim's size is not known, the rest is the items'."""
    dim = _int(info.arg(1, "dim")) if (len(info.args) > 1 or "dim" in info.kwargs) else 0
    shape = None
    if dim is not None and item.shape is not None:
        rank = len(item.shape) + (1 if short == "stack" else 0)
        index = shapes.normalize_dim(dim, rank)
        if index is not None:
            dims = list(item.shape)
            if short == "stack":
                dims.insert(index, None)
            elif dims:
                dims[index] = None
            shape = tuple(dims)
    return TensorValue(shape=shape, dtype=item.dtype, device=item.device, is_leaf=False)


def _accumulated_lists(before: Env, after: Env) -> None:
    """``preds = []`` then ``preds.append(logits.argmax(1))`` in a loop of unknown length: afterwards ``preds``
    holds any number of such tensors (:class:`SequenceOf`), in both envs so the merge keeps it."""
    for name, grown in after.items():
        start = before.get(name)
        if not (isinstance(start, TupleValue) and not start.items and isinstance(grown, TupleValue) and grown.items):
            continue
        item = _merged(grown.items)
        if isinstance(item, TensorValue) or (
            isinstance(item, TupleValue) and item.items and all(isinstance(i, TensorValue) for i in item.items)
        ):
            before[name] = after[name] = SequenceOf(item)  # tensors, or samples that are tuples of tensors


def _merged(values: Any) -> Value:
    """The value every one of ``values`` agrees on (see ``values.merge``); None for none."""
    result: Value = None
    for index, value in enumerate(values):
        result = value if index == 0 else merge(result, value)
    return result


def _known_items(iterable: Value) -> tuple[Value, ...] | None:
    """The items a loop over ``iterable`` sees, in order, when the code fixes them (a tuple, a list of layers)."""
    if isinstance(iterable, InstanceValue) and iterable.qualname == "builtins.enumerate":
        inner = _known_items(iterable.arg("of"))
        return tuple(TupleValue((Literal(i), v)) for i, v in enumerate(inner)) if inner is not None else None
    if isinstance(iterable, TupleValue):
        return iterable.items
    if isinstance(iterable, DictValue):
        return tuple(Literal(k) for k, _ in iterable.items)  # iterating a dict gives its keys
    if isinstance(iterable, ModuleValue) and iterable.children and iterable.qualname in _LAYER_CONTAINERS:
        return iterable.children
    return None


_MATH_FLOATS = frozenset("sqrt log log2 log10 exp pow cos sin tan atan".split())
_NAMESPACES = frozenset({"types.SimpleNamespace", "argparse.Namespace"})
_LAYER_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList"})


def _leaves_early(loop: ast.For | ast.AsyncFor) -> bool:
    """The loop body may skip the rest of an iteration or the loop (break, continue, return, raise, yield)."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Break | ast.Continue | ast.Return | ast.Raise | ast.Yield | ast.YieldFrom | ast.Try):
            return True
    return False


def _is_super_init(func: ast.expr) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "__init__"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    )


def _length(args: list[Value]) -> Value:
    if len(args) != 1:
        return None
    only = args[0]
    if isinstance(only, TupleValue):
        return Literal(len(only.items))
    if isinstance(only, TensorValue) and only.shape and isinstance(only.shape[0], int):
        return Literal(only.shape[0])
    if isinstance(only, Literal) and isinstance(only.value, str):
        return Literal(len(only.value))
    if isinstance(only, DictValue):
        return Literal(len(only.items))
    return None


def _number(kind: type) -> Callable[[list[Value]], Value]:
    def convert(args: list[Value]) -> Value:
        if len(args) == 1 and isinstance(args[0], Literal) and isinstance(args[0].value, int | float):
            try:
                return Literal(kind(args[0].value))
            except (OverflowError, ValueError):
                return None
        if len(args) <= 1:
            return Number("int" if kind is int else "float")  # float(v) of anything is a Python float
        return None

    return convert


def _extreme(pick: Callable[..., Any]) -> Callable[[list[Value]], Value]:
    def choose(args: list[Value]) -> Value:
        items = args[0].items if len(args) == 1 and isinstance(args[0], TupleValue) else args
        numbers = [_literal(v) for v in items]
        if len(numbers) >= 1 and all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
            return Literal(pick(numbers))
        return None

    return choose


def _range(args: list[Value]) -> Value:
    """A short range, item by item; any other range still yields ints (``tgt[:, t]`` drops a dim)."""
    numbers = [_int(v) for v in args]
    if not 1 <= len(args) <= 3:
        return None
    if any(n is None for n in numbers):
        return SequenceOf(Number("int"))
    span = range(*numbers)  # type: ignore[arg-type]
    return TupleValue(tuple(Literal(i) for i in span)) if len(span) <= _UNROLL_ITEMS else SequenceOf(Number("int"))


def _zip(args: list[Value]) -> Value:
    """Known sequences zipped item by item; otherwise a zip whose items iterating works out (loaders too)."""
    sequences = [_known_items(v) for v in args]
    if not sequences:
        return None
    if any(s is None for s in sequences):
        return InstanceValue("builtins.zip", (("of", TupleValue(tuple(args))),))
    return TupleValue(tuple(TupleValue(parts) for parts in zip(*sequences, strict=False)))  # type: ignore[misc]


# Builtins whose result follows from literal arguments: sizes computed as `len(CLASSES)`, `int(d * 1.5)`.
_BUILTINS: dict[str, Callable[[list[Value]], Value]] = {
    "len": _length,
    "int": _number(int),
    "float": _number(float),
    "max": _extreme(max),
    "min": _extreme(min),
    "range": _range,
    "zip": _zip,
}


def _collated(sample: Value, batch: Any, on_cpu: Origin | None) -> Value:
    """What the default ``collate_fn`` makes of a list of samples like ``sample``: tensors gain a batch dim.

    ``on_cpu``: where the batch was made, when the dataset's samples are known to be on the CPU.
    """
    if isinstance(sample, TupleValue):
        parts = tuple(_collated(item, batch, on_cpu) for item in sample.items)
        return TupleValue(parts)
    if isinstance(sample, DictValue):
        return DictValue(tuple((key, _collated(item, batch, on_cpu)) for key, item in sample.items))
    if isinstance(sample, TensorValue):
        shape = (batch, *sample.dims) if sample.dims is not None else None
        return TensorValue(
            shape=shape,
            dtype=sample.dtype,
            device=CPU if on_cpu else sample.device,
            is_leaf=True,
            origin=on_cpu or sample.origin,
        )
    if isinstance(sample, Literal) and isinstance(sample.value, bool | int | float):
        dtype = {bool: "torch.bool", int: "torch.int64", float: "torch.float64"}[type(sample.value)]
        return TensorValue(shape=(batch,), dtype=dtype, device=CPU, is_leaf=True)  # Python numbers become a tensor
    return None


def _padded(info: CallInfo) -> Value:
    """``F.pad(x, (left, right, top, bottom))``: the last dims grow by their pair of pads (any mode)."""
    x, pads = info.arg(0, "input"), _literal(info.arg(1, "pad"))
    if not isinstance(x, TensorValue) or x.dims is None:
        return None
    if not isinstance(pads, tuple) or len(pads) % 2 or len(pads) // 2 > len(x.dims):
        return TensorValue(dtype=x.dtype, device=x.device, is_leaf=False)
    if not all(isinstance(p, int) and not isinstance(p, bool) for p in pads):
        return TensorValue(dtype=x.dtype, device=x.device, is_leaf=False)
    dims = list(x.dims)
    for index in range(len(pads) // 2):
        grown = dims[-1 - index]
        dims[-1 - index] = grown + pads[2 * index] + pads[2 * index + 1] if isinstance(grown, int) else None
    return TensorValue(shape=tuple(dims), dtype=x.dtype, device=x.device, is_leaf=False)


def _differenced(x: TensorValue, info: CallInfo, first: int) -> Value:
    """``torch.diff(x, n, dim, prepend, append)``: ``dim`` loses ``n`` entries and gains the prepended and appended
    ones (``prepend=x[:1]`` keeps the length); the other dims stay. ``first``: where ``n`` is among the positionals."""
    n, dim = _int(info.arg(first, "n")) if len(info.args) > first or "n" in info.kwargs else 1, -1
    if len(info.args) > first + 1 or "dim" in info.kwargs:
        dim = _int(info.arg(first + 1, "dim"))  # type: ignore[assignment]
    if x.dims is None or n is None or dim is None or shapes.normalize_dim(dim, len(x.dims)) is None:
        return TensorValue(dtype=x.dtype, device=x.device, is_leaf=False)
    index = shapes.normalize_dim(dim, len(x.dims))
    size = x.dims[index]  # type: ignore[index]
    for name in ("prepend", "append"):
        extra = info.kwargs.get(name)
        if extra is None:
            continue
        extra_dims = extra.dims if isinstance(extra, TensorValue) else None
        if extra_dims is None or len(extra_dims) != len(x.dims) or not isinstance(extra_dims[index], int):  # type: ignore[index]
            size = None
            break
        size = size + extra_dims[index] if isinstance(size, int) else None  # type: ignore[index,operator]
    size = size - n if isinstance(size, int) and size >= n else None
    dims = list(x.dims)
    dims[index] = size  # type: ignore[index]
    return TensorValue(shape=tuple(dims), dtype=x.dtype, device=x.device, is_leaf=False)


def _interpolated(info: CallInfo) -> Value:
    """``F.interpolate(x, size=...)`` or ``scale_factor=``: batch and channels stay, the spatial dims change."""
    x = info.arg(0, "input")
    if not isinstance(x, TensorValue) or x.dims is None or len(x.dims) < 3:
        return None
    spatial = len(x.dims) - 2
    size, scale = _literal(info.arg(1, "size")), _literal(info.arg(2, "scale_factor"))
    out: list[Any] = [None] * spatial
    if isinstance(size, int) and not isinstance(size, bool):
        out = [size] * spatial
    elif isinstance(size, tuple) and len(size) == spatial and all(isinstance(s, int) for s in size):
        out = list(size)
    elif isinstance(scale, int | float) and not isinstance(scale, bool) and info.arg(1, "size") is None:
        out = [math.floor(d * scale) if isinstance(d, int) else None for d in x.dims[2:]]
    return TensorValue(shape=(*x.dims[:2], *out), dtype=x.dtype, device=x.device, is_leaf=False)


def _pieces(tensor: TensorValue, method: str, info: CallInfo) -> Value:
    """``x.chunk(3, dim=-1)``, ``x.split(64, dim=1)``, ``x.unbind(0)``: the parts, when their number is known.

    A tensor of unknown rank whose last dims are known splits along one of those: ``qkv.chunk(3, dim=-1)``.
    """
    dim = _int(info.arg(1 if method != "unbind" else 0, "dim"))
    dim = (
        0 if dim is None and not info.has_keyword("dim") and len(info.args) < (2 if method != "unbind" else 1) else dim
    )
    own = tensor.dims if tensor.shape is not None else tensor.tail
    if own is None or dim is None or (tensor.shape is None and not -len(own) <= dim < 0):
        return None
    index = shapes.normalize_dim(dim, len(own))
    if index is None or not isinstance(own[index], int):
        return None
    size = own[index]
    if method == "unbind":
        sizes: list[int | None] = [None] * size
    elif method == "chunk":
        count = _int(info.arg(0, "chunks"))
        if count is None or count <= 0:
            return None
        step = -(-size // count)
        sizes = [min(step, size - start) for start in range(0, size, step)] if step else []
    else:
        given = info.arg(0, "split_size_or_sections")
        step = _int(given)
        if step is not None and step > 0:
            sizes = [min(step, size - start) for start in range(0, size, step)]
        else:
            listed = _literal(given)
            if not isinstance(listed, tuple) or not all(isinstance(n, int) for n in listed) or sum(listed) != size:
                return None
            sizes = list(listed)
    if not 0 < len(sizes) <= 64:
        return None
    parts = []
    for part in sizes:
        shape = own[:index] + own[index + 1 :] if part is None else (*own[:index], part, *own[index + 1 :])
        known = {"shape": shape} if tensor.shape is not None else {"tail": shape if part is not None else None}
        parts.append(
            TensorValue(
                dtype=tensor.dtype, device=tensor.device, requires_grad=tensor.requires_grad, is_leaf=False, **known
            )
        )
    return TupleValue(tuple(parts))


def _nested_shape(value: Value) -> tuple[Any, str | None]:
    """The shape and dtype ``torch.tensor`` gives a nested list or tuple literal."""
    if isinstance(value, Number):
        return (), "torch.int64" if value.kind == "int" else "torch.float32"
    if isinstance(value, SequenceOf):
        shape, dtype = _nested_shape(value.item)  # [[float(v) for v in row] for row in reader]
        return ((None, *shape) if shape is not None else None), dtype
    if isinstance(value, Literal):
        python = value.value
        if isinstance(python, bool):
            return (), "torch.bool"
        if isinstance(python, int):
            return (), "torch.int64"
        if isinstance(python, float):
            return (), "torch.float32"
        return None, None
    if not isinstance(value, TupleValue):
        return None, None
    if not value.items:
        return (0,), "torch.float32"
    inner = [_nested_shape(item) for item in value.items]
    shapes_seen = {s for s, _ in inner}
    if len(shapes_seen) != 1 or None in shapes_seen:
        return None, None
    dtypes = {d for _, d in inner}
    dtype = "torch.float32" if "torch.float32" in dtypes else (dtypes.pop() if len(dtypes) == 1 else None)
    return (len(value.items), *shapes_seen.pop()), dtype


def _moves_to_device(klass: ast.ClassDef) -> bool:
    """True when a Dataset class's code calls ``.cuda()`` or ``.to(...)``: its samples may not be on the CPU."""
    return any(isinstance(node, ast.Attribute) and node.attr in ("cuda", "to") for node in ast.walk(klass))


def _merge_into(env: Env, a: Env, b: Env) -> None:
    for name in set(a) | set(b):
        env[name] = merge(a.get(name), b.get(name)) if name in a and name in b else None


_RUNTIME_ERRORS = frozenset(
    {"Exception", "BaseException", "RuntimeError", "ValueError", "TypeError", "AssertionError", "IndexError"}
)


def _catches_runtime_errors(handler: ast.ExceptHandler, ctx: Context) -> bool:
    """A bare ``except:`` or one that catches what torch raises for shape, device and dtype errors."""
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for kind in types:
        name = ctx.qualify(kind) or (kind.id if isinstance(kind, ast.Name) else "")
        if name.rsplit(".", 1)[-1] in _RUNTIME_ERRORS or name.startswith("torch."):
            return True
    return False


def _grad_mode(expr: ast.expr, ctx: Context) -> bool | None:
    """What a ``with`` item does to grad mode: True (enables), False (disables) or None (leaves it)."""
    call = expr if isinstance(expr, ast.Call) else None
    qualname = ctx.qualify(call.func if call is not None else expr)
    first = call.args[0] if call is not None and call.args else None
    if qualname in ("torch.enable_grad", "torch.autograd.enable_grad"):
        return True
    if qualname in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled") and isinstance(first, ast.Constant):
        return bool(first.value)
    if qualname in ("torch.inference_mode", "torch.autograd.inference_mode") and isinstance(first, ast.Constant):
        return None if first.value is False else False  # inference_mode(False) changes nothing
    return False if _disables_grad(expr, ctx) else None


def _disables_grad(expr: ast.expr, ctx: Context) -> bool:
    """``torch.no_grad()``, ``torch.inference_mode()``, ``torch.set_grad_enabled(False)``, or the decorator form."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    qualname = ctx.qualify(target)
    if qualname in (
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
    ):
        return True
    if qualname == "torch.set_grad_enabled" and isinstance(expr, ast.Call) and expr.args:
        first = expr.args[0]
        return isinstance(first, ast.Constant) and first.value is False
    return False


_COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}

_PY_OPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b if abs(b) < 64 else None,
}
