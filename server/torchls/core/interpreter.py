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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from torchls.core import layers, shapes
from torchls.core.facts import DTYPE_METHODS
from torchls.core.rules.base import CallInfo, Context, Rule
from torchls.core.statements import assigned_names, self_attributes_assigned
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
    InstanceValue,
    Literal,
    ModuleValue,
    Origin,
    TensorValue,
    TupleValue,
    Value,
    merge,
    normalize_dtype,
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

SAME_SHAPE_FUNCTIONS = frozenset(
    "torch.nn.functional." + n
    for n in "relu relu6 leaky_relu gelu silu elu selu mish softplus hardswish hardsigmoid tanh dropout dropout1d "
    "dropout2d normalize layer_norm group_norm batch_norm".split()
) | frozenset("torch." + n for n in "relu tanh abs exp neg sqrt rsqrt square sign clamp clip".split())
SAME_SHAPE_METHODS = frozenset(
    "relu tanh abs exp neg sqrt rsqrt square sign clamp clip clamp_ clip_ abs_ relu_ add_ sub_ mul_ div_ pow_ "
    "zero_ fill_ normal_ uniform_ masked_fill masked_fill_ neg_ exp_ sqrt_ tanh_ sigmoid_ copy_ round floor ceil "
    "detach_ contiguous_ float_ nan_to_num".split()
)
INPLACE_METHODS = frozenset(
    "add_ sub_ mul_ div_ pow_ zero_ fill_ normal_ uniform_ masked_fill_ clamp_ clip_ abs_ relu_ neg_ exp_ sqrt_ "
    "tanh_ sigmoid_ copy_ addcmul_ addcdiv_ mul_ index_fill_ scatter_ scatter_add_ exponential_ random_ "
    "bernoulli_".split()
)
REDUCTIONS = frozenset("sum mean prod std var amax amin nansum nanmean logsumexp norm".split())
ARG_REDUCTIONS = frozenset({"argmax", "argmin"})
CREATION_FUNCTIONS = frozenset(
    "torch." + n
    for n in "zeros ones empty rand randn full randint arange linspace eye tensor as_tensor "
    "from_numpy zeros_like ones_like empty_like rand_like randn_like full_like randint_like randperm "
    "logspace".split()
)
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


@dataclass(slots=True)
class ClassInfo:
    """A class defined in the file: its torch base, what ``__init__`` assigns to ``self``, what ``forward`` returns."""

    node: ast.ClassDef
    torch_base: str | None
    attributes: dict[str, Value] = field(default_factory=dict)
    unstable: set[str] = field(default_factory=set)  # assigned outside __init__ or more than once
    forward_return: Value = None

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def is_module(self) -> bool:
        return bool(self.torch_base and self.torch_base.startswith("torch.nn."))

    def attribute(self, name: str) -> Value:
        return None if name in self.unstable else self.attributes.get(name)


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


def parse_device(value: Value) -> str | None:
    if isinstance(value, DeviceValue):
        return value.kind
    literal = _literal(value)
    if isinstance(literal, str):
        if literal.startswith("cuda"):
            return CUDA
        if literal == "cpu":
            return CPU
        if literal == "mps":
            return "mps"
    return None


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
        }
        self._stmt_table: dict[type[ast.AST], Callable[[Any, Env], None]] = {
            ast.Assign: self._assign,
            ast.AugAssign: self._augassign,
            ast.AnnAssign: self._annassign,
            ast.Expr: lambda node, env: self._discard(self.expr(node.value, env)),
            ast.Return: self._return,
            ast.If: self._if,
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
        self._quiet_depth = 0  # > 0 while re-evaluating a forward for one call's arguments
        self._forward_cache: dict[tuple, Value] = {}

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
        text = self.ctx.source.text
        self.default_device_changed = "set_default_device" in text or "set_default_tensor_type" in text
        self.ctx.file_facts["classes"] = self.classes
        self.ctx.tree = tree
        self.block(tree.body, self.module_env)

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
        if isinstance(node, ast.Lambda | ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            inner = dict(env)
            for name in assigned_names(node):
                inner[name] = None
            if isinstance(node, ast.Lambda):
                for arg in node.args.args:
                    inner[arg.arg] = None
            for child in ast.iter_child_nodes(node):
                self._walk_child(child, inner)
            return None
        for child in ast.iter_child_nodes(node):
            self._walk_child(child, env)
        return None

    def _walk_child(self, child: ast.AST, env: Env) -> None:
        if isinstance(child, ast.expr):
            self.expr(child, env)
        elif isinstance(child, ast.comprehension | ast.keyword | ast.arguments | ast.arg):
            self._generic(child, env)

    # ------------------------------------------------------------------------------------------ statements

    def _assign(self, node: ast.Assign, env: Env) -> None:
        value = self.expr(node.value, env)
        for target in node.targets:
            self.bind(target, value, env)

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
        self.expr(node.test, env)
        body, orelse = dict(env), dict(env)
        self.block(node.body, body)
        self.block(node.orelse, orelse)
        _merge_into(env, body, orelse)

    def _loop_env(self, node: ast.AST, env: Env) -> Env:
        """The env a loop body starts with: names the loop assigns are unknown, as after any iteration."""
        inner = dict(env)
        for name in assigned_names(node):
            inner[name] = None
        return inner

    def _for(self, node: ast.For | ast.AsyncFor, env: Env) -> None:
        iterable = self.expr(node.iter, env)
        inner = self._loop_env(node, env)
        self.bind(node.target, self._iteration(iterable, node.iter), inner)
        self.block(node.body, inner)
        self.block(node.orelse, inner)
        _merge_into(env, env, inner)

    def _while(self, node: ast.While, env: Env) -> None:
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
        for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
            self.expr(default, env)
        env[node.name] = None
        self._evaluate_function(node, self.ctx.klass)

    def _evaluate_function(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        klass: ClassInfo | None,
        arguments_given: dict[str, Value] | None = None,
    ) -> Value:
        """Evaluate a function body in its own scope; returns the value all its returns agree on.

        ``arguments_given`` evaluates it for one call's argument values (see :meth:`_forward_for`).
        """
        inner: Env = {}
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        for index, arg in enumerate(arguments):
            inner[arg.arg] = self._annotation(arg.annotation) if arg.annotation is not None else None
            if index == 0 and klass is not None and arg.arg == "self" and klass.torch_base:
                inner["self"] = ModuleValue(klass.torch_base, user_class=klass.name)
            elif arguments_given is not None and arg.arg in arguments_given:
                inner[arg.arg] = arguments_given[arg.arg]
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
        if not returns:
            return None
        first = returns[0]
        return first if all(r == first for r in returns[1:]) else None

    def _class(self, node: ast.ClassDef, env: Env) -> None:
        for expr in [*node.bases, *node.decorator_list, *(k.value for k in node.keywords)]:
            self.expr(expr, env)
        info = ClassInfo(node, self._torch_base(node))
        self.classes[node.name] = info
        env[node.name] = None
        methods = [s for s in node.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
        for method in methods:
            if method.name != "__init__":
                info.unstable.update(self_attributes_assigned(method))
        class_env: Env = {}
        for statement in node.body:
            if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                self.stmt(statement, class_env)
        # __init__ first: the other methods read what it assigns to self.
        ordered = sorted(methods, key=lambda m: m.name != "__init__")
        for method in ordered:
            for decorator in method.decorator_list:
                self.expr(decorator, env)
            returned = self._evaluate_function(method, info)
            if method.name == "forward":
                info.forward_return = returned
            self._visit_rules(method)

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
            for index, element in enumerate(target.elts):
                self.bind(element, items[index] if items else None, env)
        elif isinstance(target, ast.Attribute):
            self.expr(target.value, env)
            klass = self.ctx.klass
            if (
                klass is not None
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and self.ctx.function is not None
                and self.ctx.function.name == "__init__"
            ):
                if target.attr in klass.attributes:
                    klass.unstable.add(target.attr)
                klass.attributes[target.attr] = value
            self._visit_rules(target)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, None, env)
        else:  # subscript targets: evaluate their parts for the rules
            for child in ast.iter_child_nodes(target):
                if isinstance(child, ast.expr):
                    self.expr(child, env)
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                changed = env.get(target.value.id)
                if isinstance(changed, TensorValue):
                    # x[i] = v changes values in place: same shape, but no longer what made it (softmax...).
                    env[target.value.id] = changed.with_(provenance=None, origin=None)
            self._visit_rules(target)

    def _load(self, name: str, env: Env) -> Value:
        if name in env:
            return env[name]
        if env is not self.module_env and name in self.stable_globals:
            return self.module_env.get(name)
        return None

    def _annotation(self, annotation: ast.expr | None) -> Value:
        if annotation is None:
            return None
        qualname = self.ctx.qualify(annotation)
        if qualname in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
            return TensorValue()
        return None

    # ------------------------------------------------------------------------------------------ expressions

    def _name(self, node: ast.Name, env: Env) -> Value:
        return self._load(node.id, env)

    def _constant(self, node: ast.Constant, env: Env) -> Value:
        return Literal(node.value)

    def _sequence(self, node: ast.Tuple | ast.List, env: Env) -> Value:
        items = [self.expr(element, env) for element in node.elts]
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return None
        return TupleValue(tuple(items))

    def _ifexp(self, node: ast.IfExp, env: Env) -> Value:
        self.expr(node.test, env)
        body, orelse = self.expr(node.body, env), self.expr(node.orelse, env)
        devices = {parse_device(body), parse_device(orelse)}
        if CUDA in devices and len(devices) == 2 and None not in devices:
            return DeviceValue(ACCELERATOR)  # "cuda" if torch.cuda.is_available() else "cpu"
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

    def _subscript(self, node: ast.Subscript, env: Env) -> Value:
        container = self.expr(node.value, env)
        index = self.expr(node.slice, env)
        if isinstance(container, TupleValue):
            position = _int(index)
            if position is not None and -len(container.items) <= position < len(container.items):
                return container.items[position]
            return None
        if isinstance(container, TensorValue):
            shape = None
            position = _int(index)
            if position is not None and container.shape:
                shape = container.shape[1:]
            return TensorValue(
                shape=shape,
                dtype=container.dtype,
                device=container.device,
                requires_grad=container.requires_grad,
                is_leaf=False,
            )
        return None

    def _attribute(self, node: ast.Attribute, env: Env) -> Value:
        qualname = self.ctx.qualify(node)
        if qualname is not None:
            return Literal(normalize_dtype(qualname)) if qualname in DTYPE_NAMES else None
        if isinstance(node.value, ast.Name) and node.value.id == "self" and self.ctx.klass is not None:
            self.expr(node.value, env)
            return self.ctx.klass.attribute(node.attr)
        base = self.expr(node.value, env)
        if isinstance(base, TensorValue):
            return self._tensor_attribute(base, node.attr, node)
        if isinstance(base, ModuleValue) and base.user_class in self.classes:
            return self.classes[base.user_class].attribute(node.attr)
        return None

    def _tensor_attribute(self, tensor: TensorValue, attr: str, node: ast.AST) -> Value:
        if attr == "shape":
            return (
                TupleValue(tuple(Literal(d) if d is not None else None for d in tensor.shape))
                if (tensor.shape is not None)
                else None
            )
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
        return None

    def _binop(self, node: ast.BinOp, env: Env) -> Value:
        left = self.expr(node.left, env)
        right = self.expr(node.right, env)
        return self._arithmetic(left, right, node.op, node)

    def _arithmetic(self, left: Value, right: Value, op: ast.operator, node: ast.AST) -> Value:
        if isinstance(left, Literal) and isinstance(right, Literal):
            try:
                return Literal(_PY_OPS[type(op)](left.value, right.value))
            except Exception:
                return None
        if isinstance(op, ast.MatMult):
            if isinstance(left, TensorValue) and isinstance(right, TensorValue):
                shape, problem = shapes.matmul(left.shape, right.shape)
                self._problem(node, "matmul", problem)
                return self._derived(left, right, shape)
            return None
        tensors = [v for v in (left, right) if isinstance(v, TensorValue)]
        if not tensors:
            return None
        if len(tensors) == 2:
            shape, problem = shapes.broadcast(left.shape, right.shape)  # type: ignore[union-attr]
            self._problem(node, "broadcast", problem)
            return self._derived(left, right, shape)  # type: ignore[arg-type]
        tensor = tensors[0]
        other = right if tensor is left else left
        if not isinstance(other, Literal):
            return TensorValue()  # the other side may be a tensor of any shape (broadcasting) or device
        dtype = tensor.dtype
        if dtype in INTEGER_DTYPES and (
            isinstance(op, ast.Div | ast.Pow) or (isinstance(other, Literal) and isinstance(other.value, float))
        ):
            dtype = "torch.float32"  # int tensor / 2 and int tensor * 0.5 are float
        return TensorValue(
            shape=tensor.shape,
            tail=tensor.tail,
            dtype=dtype,
            device=tensor.device,
            requires_grad=tensor.requires_grad,
            is_leaf=False,
        )

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
            self.ctx.file_facts.setdefault("problems", {})[node] = (kind, problem)

    def _forward_for(self, klass: ClassInfo, info: CallInfo) -> Value:
        """What ``forward`` returns for this call's argument values, when they say more than nothing.

        The body is evaluated again for these values, so a model called with ``torch.randn(64, 8)`` returns
        ``(64, 1)`` rather than ``(..., 1)``. Only the shape rules run during this second look: what they prove holds
        for this call, and each finding points back at the call site. The values of the first evaluation are kept
        for everything else. Cached per class and argument values; nested calls deeper than three levels stop.
        """
        forward = next((s for s in klass.node.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
        if forward is None or info.starred or self._quiet_depth >= 3:
            return klass.forward_return
        names = [a.arg for a in [*forward.args.posonlyargs, *forward.args.args]][1:]
        given = dict(zip(names, info.args, strict=False))
        given.update((k, v) for k, v in info.kwargs.items() if k in names)
        if not any(isinstance(v, TensorValue) and v.shape is not None for v in given.values()):
            return klass.forward_return
        key = (klass.name, tuple(sorted(given.items(), key=lambda item: item[0])))
        if key in self._forward_cache:
            return self._forward_cache[key]
        saved = (self.dispatch, self.ctx.values, self.ctx.calls, self.ctx.call_site)
        self.dispatch = self._shape_dispatch()
        self.ctx.values, self.ctx.calls = dict(self.ctx.values), dict(self.ctx.calls)
        if self.ctx.call_site is None:
            shapes_given = "、".join(
                f"`{name}` 的形状是 {shapes.fmt(value.shape)}"
                for name, value in given.items()
                if isinstance(value, TensorValue) and value.shape is not None
            )
            self.ctx.call_site = Origin(info.node, f"以这次调用的输入推算：{shapes_given}")
        self._quiet_depth += 1
        try:
            returned = self._evaluate_function(forward, klass, given)
        except Exception:  # a modelling gap in a second look must not cost the first
            returned = klass.forward_return
        finally:
            self.dispatch, self.ctx.values, self.ctx.calls, self.ctx.call_site = saved
            self._quiet_depth -= 1
        self._forward_cache[key] = returned
        return returned

    def _shape_dispatch(self) -> dict[type[ast.AST], list[Rule]]:
        """The selected shape rules (TL1xx) only: what a specialised ``forward`` may report."""
        return {
            kind: [rule for rule in rules if rule.code.startswith("TL1")]
            for kind, rules in self.dispatch.items()
            if any(rule.code.startswith("TL1") for rule in rules)
        }

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
            else:
                callee = self.expr(func, env)
                if isinstance(callee, ModuleValue):
                    info.module = callee
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                self.expr(arg.value, env)
                info.starred = True
                info.args.append(None)
            else:
                info.args.append(self.expr(arg, env))
        for keyword in node.keywords:
            value = self.expr(keyword.value, env)
            if keyword.arg is not None:
                info.kwargs[keyword.arg] = value
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
            return self._torch_call(info.qualname, info, env)
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
                if info.method.endswith("_") and isinstance(node.func, ast.Attribute):
                    target = node.func.value
                    if isinstance(target, ast.Name):
                        # In place: the name now holds what the method made of it (unknown if not modelled).
                        env[target.id] = result if isinstance(result, TensorValue) else None
                return result
            if isinstance(receiver, ModuleValue):
                return self._module_method(receiver, info, env)
            if isinstance(receiver, InstanceValue):
                return None
            return None
        if info.module is not None:
            return self._apply_module(info.module, info)
        if isinstance(node.func, ast.Name) and node.func.id == "enumerate" and "enumerate" not in env and info.args:
            return InstanceValue("builtins.enumerate", (("of", info.args[0]),), Origin(node.args[0], "enumerate"))
        if isinstance(node.func, ast.Name) and node.func.id in self.classes:
            klass = self.classes[node.func.id]
            if klass.is_module:
                return ModuleValue(
                    klass.torch_base or "torch.nn.Module",
                    user_class=klass.name,
                    origin=Origin(node, f"在这里创建了 `{klass.name}`"),
                )
            if klass.torch_base and klass.torch_base.startswith("torch.utils.data."):
                moves = _moves_to_device(klass.node)
                return InstanceValue("dataset", (("on_cpu", not moves),), Origin(node, f"在这里创建了 `{klass.name}`"))
        return None

    # ---- torch functions and classes

    def _torch_call(self, qualname: str, info: CallInfo, env: Env) -> Value:
        short = qualname.rsplit(".", 1)[-1]
        node = info.node
        if qualname == "torch.device":
            return DeviceValue(parse_device(info.arg(0, "type")))
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
            return InstanceValue(qualname, tuple(args), Origin(node, f"在这里创建了 `{short}`"))
        if qualname in ("tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm") and info.args:
            # tqdm(loader) iterates what loader does
            return InstanceValue("progress", (("of", info.args[0]),), Origin(node.args[0], "tqdm"))
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
                (*receiver.shape, classes if classes and classes > 0 else None) if receiver.shape is not None else None
            )
            return TensorValue(
                shape=shape,
                dtype="torch.int64",
                device=receiver.device,
                provenance=ONE_HOT,
                origin=Origin(node, "在这里做了 one_hot（结果是整数）"),
            )
        if qualname in SAME_SHAPE_FUNCTIONS:
            return self._same_shape(receiver)
        if qualname in ("torch.cat", "torch.concat", "torch.concatenate", "torch.stack"):
            return self._join(short, info)
        if qualname in ("torch.matmul", "torch.mm", "torch.bmm"):
            other = info.arg(1, "mat2" if short != "matmul" else "other")
            if isinstance(other, TensorValue):
                shape, problem = shapes.matmul(receiver.shape, other.shape, short)
                self._problem(node, "matmul", problem)
                return self._derived(receiver, other, shape)
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
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                children = ()
            return ModuleValue(qualname, children=children, origin=Origin(node, "在这里定义了 `Sequential`"))
        names = LAYER_PARAMETERS.get(short, ())
        args: list[tuple[str, Any]] = []
        for index, value in enumerate(info.args):
            if index < len(names) and not any(isinstance(a, ast.Starred) for a in node.args[: index + 1]):
                args.append((names[index], _literal(value) if not isinstance(value, ModuleValue) else value))
        for key, value in info.kwargs.items():
            args.append((key, _literal(value)))
        return ModuleValue(qualname, tuple(args), origin=Origin(node, f"在这里定义了 `{short}`"))

    # ---- tensor methods

    def _tensor_method(self, tensor: TensorValue, method: str, info: CallInfo, offset: int = 0) -> Value:
        node = info.node
        args = info.args
        if method in ("view", "reshape"):
            requested = _dims(args) if args else None
            if requested is None and "shape" in info.kwargs:
                requested = _dims([info.kwargs["shape"]])
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
            return tensor.with_(
                shape=shape, tail=None, strides=strides, contiguous=contiguous, provenance=provenance, is_leaf=False
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
            strides = shapes.contiguous_strides(tensor.shape) if shapes.known(tensor.shape) else None
            return tensor.with_(contiguous=True, strides=strides, is_leaf=False)
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
                shape=tensor.shape,
                tail=tensor.tail,
                dtype=tensor.dtype,
                device=tensor.device,
                requires_grad=tensor.requires_grad,
                is_leaf=tensor.is_leaf if keep_leaf else False,
                contiguous=tensor.contiguous if keep_leaf else None,
                strides=tensor.strides if keep_leaf else None,
            )
        if method in ("matmul", "mm", "bmm"):
            other = info.arg(0, "other" if method == "matmul" else "mat2")
            if isinstance(other, TensorValue):
                shape, problem = shapes.matmul(tensor.shape, other.shape, method)
                self._problem(node, "matmul", problem)
                return self._derived(tensor, other, shape)
            return None
        if method == "size":
            if info.args:
                dim = _int(info.args[0])
                if dim is not None and tensor.shape is not None:
                    self._problem(node, "dim", shapes.dim_problem(dim, len(tensor.shape)))
                    index = shapes.normalize_dim(dim, len(tensor.shape))
                    if index is not None and tensor.shape[index] is not None:
                        return Literal(tensor.shape[index])
                return None
            return self._tensor_attribute(tensor, "shape", node)
        if method == "dim":
            return Literal(tensor.rank) if tensor.rank is not None else None
        return None

    def _reduction(self, tensor: TensorValue, method: str, info: CallInfo) -> Value:
        has_dim = bool(info.args) or "dim" in info.kwargs
        dim_value = info.arg(0, "dim") if has_dim else None
        dim: Any = _int(dim_value)
        if dim is None and isinstance(_literal(dim_value), tuple):
            dim = _literal(dim_value)
        if has_dim and dim is None:
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
        shape = tuple(tensor.shape[d] for d in dims) if tensor.shape is not None else None
        strides = tuple(tensor.strides[d] for d in dims) if tensor.strides is not None else None
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

    def _same_shape(self, tensor: TensorValue) -> TensorValue:
        return TensorValue(
            shape=tensor.shape,
            tail=tensor.tail,
            dtype=tensor.dtype,
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
            shape=tensor.shape,
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
            moved = ModuleValue(module.qualname, module.args, module.children, module.user_class, device, module.origin)
            func = info.node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                env[func.value.id] = moved  # modules move in place: the name now holds the moved model
            return moved
        if method in ("train", "eval", "requires_grad_", "float", "half", "double"):
            return module
        if method in ("parameters", "named_parameters"):
            return InstanceValue("torch.nn.Module." + method)
        if method == "forward":
            return self._apply_module(module, CallInfo(info.node, args=info.args, kwargs=info.kwargs))
        return None

    def _apply_module(self, module: ModuleValue, info: CallInfo) -> Value:
        """The value of calling a layer (or a user model) on the call's arguments."""
        if module.user_class is not None:
            klass = self.classes.get(module.user_class)
            returned = self._forward_for(klass, info) if klass is not None else None
            if isinstance(returned, TensorValue):
                # A moved model computes on its device, unless its own code moves tensors around.
                device = module.device if klass is not None and not _moves_to_device(klass.node) else None
                return TensorValue(
                    shape=returned.shape,
                    tail=returned.tail,
                    dtype=returned.dtype,
                    device=device,
                    provenance=returned.provenance,
                    origin=returned.origin,
                    is_leaf=False,
                )
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
        value = x if x is not None else TensorValue()
        for child in module.children:
            if not isinstance(value, TensorValue):
                return None
            result = self.layer_output(child, value, info.node) if child is not None else None
            # A layer we do not model still hands one tensor on: unknown, but later layers (a final Softmax)
            # still say what they make of it.
            value = result if result is not None else TensorValue()
        return value

    def layer_output(self, module: ModuleValue, x: TensorValue, node: ast.AST) -> Value:
        return layers.layer_output(module, x, node)

    # ---- iteration

    def _iteration(self, iterable: Value, node: ast.expr) -> Value:
        """What each item of ``for ... in iterable`` is, when known."""
        if isinstance(iterable, InstanceValue) and iterable.qualname in ("builtins.enumerate", "progress"):
            inner_node = iterable.origin.node if iterable.origin is not None else node
            inner = self._iteration(iterable.arg("of"), inner_node)  # type: ignore[arg-type]
            if iterable.qualname == "progress":
                return inner
            return TupleValue((None, inner)) if inner is not None else None
        if isinstance(iterable, InstanceValue):
            dataset = iterable.arg("dataset")
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
            if iterable.qualname == "torch.nn.Module.parameters":
                return TensorValue(requires_grad=True, is_leaf=True, origin=Origin(node, "模型参数"))
            if iterable.qualname == "torch.nn.Module.named_parameters":
                return TupleValue(
                    (None, TensorValue(requires_grad=True, is_leaf=True, origin=Origin(node, "模型参数")))
                )
        if isinstance(iterable, TensorValue) and iterable.shape:
            return TensorValue(shape=iterable.shape[1:], dtype=iterable.dtype, device=iterable.device, is_leaf=False)
        return None


def _nested_shape(value: Value) -> tuple[Any, str | None]:
    """The shape and dtype ``torch.tensor`` gives a nested list or tuple literal."""
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


_PY_OPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b if abs(b) < 64 else None,
}
