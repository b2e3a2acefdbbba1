"""The state every part of the interpreter shares, and the one evaluation step they all call.

:class:`InterpreterBase` holds what a walk over one file keeps (the env of the module, the file's classes and
functions, the budgets that bound unrolling and specialisation) and evaluates one expression or statement by
dispatching on its node type, then calling the rules registered for that type. The jobs (statements,
expressions, calls, ...) are mixins over this base, composed into :class:`~torchls.core.interpreter.Interpreter`.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from torchls.core import symbols
from torchls.core.annotation_values import annotation_value
from torchls.core.facts import MAY_REQUIRE_GRAD_PREFIXES, TENSOR_SELF_METHODS
from torchls.core.interpreter.class_info import ClassInfo
from torchls.core.rules.base import CallInfo, Context, Rule
from torchls.core.values import FLOAT_DTYPES, InstanceValue, ModuleValue, OfClass, Origin, TensorValue, Value, merge

_UNROLL_ITEMS = 8  # loops over at most this many known items run item by item
_UNROLL_BUDGET = 2000  # iterations run that way, per file
_MAX_DEPTH = 6  # calls of the file's own functions followed one inside the other
_SPECIALISATION_BUDGET = 400  # evaluations of a body for one call's arguments, per file
# Expressions that compute a new tensor (under no_grad: one without a graph, see _without_graph).
_OPERATIONS = (ast.Call, ast.BinOp, ast.UnaryOp)


# Under autocast these still give the dtype they name; any other operation may compute in float16/bfloat16.
_EXPLICIT_DTYPE_METHODS = frozenset({"float", "double", "half", "bfloat16"})


def _under_autocast(node: ast.expr, value: TensorValue) -> TensorValue:
    """An operation's floating result inside ``torch.autocast``: its dtype depends on the op (matmuls and convs
    run in the lower precision, reductions and losses in float32), so the analysis does not claim one."""
    if value.dtype not in FLOAT_DTYPES:
        return value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _EXPLICIT_DTYPE_METHODS
    ):
        return value
    return value.with_(dtype=None)


log = logging.getLogger(__package__)  # the package's one logger, named as before

Env = dict[str, Value]


class InterpreterBase:
    """Shared state, evaluation of one node (with rule dispatch), and lookups every job needs."""

    _expr_table: dict[type[ast.AST], Callable[[Any, Env], Value]]  # node type -> handler (driver.py)
    _stmt_table: dict[type[ast.AST], Callable[[Any, Env], None]]

    def __init__(self, ctx: Context, dispatch: dict[type[ast.AST], list[Rule]]) -> None:
        self.ctx = ctx
        self.dispatch = dispatch
        self.module_env: Env = {}
        self.stable_globals: set[str] = set()
        self.classes: dict[str, ClassInfo] = {}
        self.default_device_changed = False
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
        # A loader's batch size that is never 1 (every batch, the last one too, has at least two samples): the
        # smallest batch, with the batch size and the dataset's length.
        self._batches_never_one: dict[symbols.Sym, tuple[int, int, int]] = {}
        self._unroll_budget = _UNROLL_BUDGET
        self._mode_effects: dict[ast.AST, dict[str, bool | None]] = {}
        # When set, what specialised evaluations found for each node, merged over every call (see core/values_at)
        self.call_values: dict[ast.AST, Value] | None = None
        # What holds at each node over every evaluation of the walk around it (loop iterations, a loop's first
        # iteration, both passes): hover and the execution oracle read this. ``ctx.values`` holds only the latest
        # evaluation, which is what a rule visiting the node must see.
        self.joined_values: dict[ast.AST, Value] = {}

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
        if not self.ctx.grad_enabled and isinstance(value, TensorValue) and kind in _OPERATIONS:
            value = self._without_graph(node, value)
        if self.ctx.autocast and isinstance(value, TensorValue) and kind in _OPERATIONS:
            value = _under_autocast(node, value)
        self.record(node, value)
        if kind in self.dispatch:  # inline test: this runs for every expression in the file
            self._visit_rules(node)
        return value

    def record(self, node: ast.AST, value: Value) -> None:
        """``node`` evaluated to ``value`` (None: unknown) this time. A rule reading it later in the same evaluation
        must not see an earlier evaluation's value (the value before the loop, another call's argument)."""
        self.ctx.values[node] = value
        joined = self.joined_values
        joined[node] = merge(joined[node], value) if node in joined else value

    def _without_graph(self, node: ast.expr, value: TensorValue) -> TensorValue:
        """The tensor an operation makes under no_grad: no graph, unless the operation may keep or make one
        (``nn.Parameter(...)``, ``torch.zeros(..., requires_grad=True)``, ``p.to(device)`` that may return ``p``
        itself, an in-place method, a model of the file whose ``forward`` may return a parameter)."""
        if value.no_graph is not None and value.requires_grad is False:
            return value
        if isinstance(node, ast.Call):
            info = self.ctx.calls.get(node)
            if info is None or info.starred or info.unknown_keywords:
                return value
            if info.qualname is not None:
                if not info.qualname.startswith("torch.") or info.qualname.startswith(MAY_REQUIRE_GRAD_PREFIXES):
                    return value
                if "requires_grad" in info.kwargs:
                    return value
            elif info.module is not None:
                if info.module.user_class is not None or not info.module.qualname.startswith("torch.nn."):
                    return value
            elif not (
                info.method is not None
                and isinstance(info.receiver, TensorValue)
                and not info.method.endswith("_")
                and info.method not in TENSOR_SELF_METHODS
            ):
                return value
        return value.with_(requires_grad=False, is_leaf=True, no_graph=Origin(node, "在无梯度模式下算出"))

    def _load(self, name: str, env: Env) -> Value:
        if name in env:
            return env[name]
        if env is not self.module_env and name in self.stable_globals:
            return self.module_env.get(name)
        return None

    def _is_global(self, name: str, env: Env) -> bool:
        """``name`` means the module-level binding here: not shadowed by a local of the same name."""
        if name not in env:
            return True
        # At module level (in any branch), a name bound once there is that binding; a class body's own names and
        # a function's locals shadow it.
        return self.ctx.function is None and self.ctx.klass is None and name in self.stable_globals

    def _annotation(self, annotation: ast.expr | None) -> Value:
        if annotation is None:
            return None
        return annotation_value(annotation, self.ctx.qualify, self._torch_base_of)

    def _torch_base_of(self, class_name: str) -> str | None:
        info = self.classes.get(class_name)
        return info.torch_base if info is not None else None

    def _problem(self, node: ast.AST, kind: str, problem: str | None) -> None:
        if problem:
            self.ctx.shape_problems[node] = (kind, problem)

    def _user_class_of(self, value: Value) -> ClassInfo | None:
        """The file's class that ``value`` is an instance of (a model, a dataset, any class of the file)."""
        return self.ctx.user_class_of(value)

    if TYPE_CHECKING:
        # What one job calls on another: each is defined in the mixin of the module named above it.
        # statements.py
        def _narrowed(self, test: ast.expr, env: Env) -> Env: ...
        def bind(self, target: ast.expr, value: Value, env: Env) -> None: ...
        # expressions.py
        def _generic(self, node: ast.AST, env: Env) -> Value: ...
        def _index_kind(self, element: ast.expr) -> Any: ...
        def _tensor_attribute(self, tensor: TensorValue, attr: str, node: ast.AST) -> Value: ...
        def _arithmetic(self, left: Value, right: Value, op: ast.operator, node: ast.AST) -> Value: ...
        @staticmethod
        def _fresh(tensor: TensorValue) -> TensorValue: ...
        def _derived(self, a: TensorValue, b: TensorValue, shape: Any) -> TensorValue: ...
        # named_sizes.py
        def _note_dim_names(self, target: ast.expr, value: ast.expr) -> None: ...
        def _forward_input(self, holder: ast.expr, reader: ast.AST) -> bool: ...
        def _named_tensor(self, holder: ast.expr, reader: ast.AST, tensor: TensorValue, env: Env) -> TensorValue: ...
        def _last_batch_problem(self, tensor: TensorValue, named: list[Any], method: str) -> str | None: ...
        def _view_named(
            self, tensor: TensorValue, named: list[Any], method: str, node: ast.AST
        ) -> tuple[Any, str | None, dict[str, Any]]: ...
        # torch_functions.py
        def _torch_call(self, qualname: str, info: CallInfo, env: Env) -> Value: ...
        def _loss_value(self, reduction: Value, source: Value, node: ast.AST) -> TensorValue: ...
        # tensor_methods.py
        def _tensor_method(self, tensor: TensorValue, method: str, info: CallInfo, offset: int = 0) -> Value: ...
        def _permuted(self, tensor: TensorValue, dims: Sequence[int], node: ast.AST) -> TensorValue: ...
        def _same_shape(self, tensor: TensorValue, qualname: str = "") -> TensorValue: ...
        def _cumulative(self, tensor: TensorValue, info: CallInfo) -> TensorValue: ...
        def _check_dim(self, node: ast.AST, tensor: TensorValue, dim: Value) -> None: ...
        def _check_dims(
            self, node: ast.AST, tensor: TensorValue, info: CallInfo, position: int, keyword: str
        ) -> None: ...
        def _with_provenance(self, tensor: TensorValue, provenance: str, node: ast.AST, what: str) -> TensorValue: ...
        # modules.py
        def _construct_layer(self, short: str, qualname: str, info: CallInfo) -> Value: ...
        def _module_method(self, module: ModuleValue, info: CallInfo, env: Env) -> Value: ...
        def _class_method(self, receiver: OfClass, info: CallInfo, env: Env) -> Value: ...
        def _apply_module(self, module: ModuleValue, info: CallInfo) -> Value: ...
        def layer_output(self, module: ModuleValue, x: TensorValue, node: ast.AST) -> Value: ...
        # user_classes.py
        @staticmethod
        def _instance_arguments(value: Value) -> tuple[tuple[str, Value], ...]: ...
        def _member(self, klass: ClassInfo, owner: Value, name: str) -> Value: ...
        def _defining_class(self, klass: ClassInfo, method: str) -> ClassInfo: ...
        def _init_attribute_sink(self, target: ast.expr | None = None) -> dict[str, Value] | None: ...
        def _registers_buffer(self, info: CallInfo) -> bool: ...
        def _field_default(self, info: CallInfo, env: Env) -> Value: ...
        def _construct(self, klass: ClassInfo, info: CallInfo) -> Value: ...
        def _user_method(self, receiver: Value, info: CallInfo, env: Env | None = None) -> Value: ...
        # user_functions.py
        def _evaluate_defaults(self, node: ast.FunctionDef | ast.AsyncFunctionDef, env: Env) -> None: ...
        def _evaluate_function(
            self,
            node: ast.FunctionDef | ast.AsyncFunctionDef,
            klass: ClassInfo | None,
            arguments_given: dict[str, Value] | None = None,
            self_value: Value = None,
        ) -> Value: ...
        def _bind_arguments(
            self, function: ast.FunctionDef | ast.AsyncFunctionDef, info: CallInfo, skip_first: bool
        ) -> dict[str, Value] | None: ...
        def _call_function(
            self,
            function: ast.FunctionDef | ast.AsyncFunctionDef,
            klass: ClassInfo | None,
            info: CallInfo,
            self_value: Value = None,
        ) -> Value: ...
        def _after_call(
            self, function: ast.FunctionDef | ast.AsyncFunctionDef, info: CallInfo, env: Env, skip_first: bool
        ) -> None: ...
        def _specialise(
            self,
            function: ast.FunctionDef | ast.AsyncFunctionDef,
            klass: ClassInfo | None,
            given: dict[str, Value],
            self_value: Value,
            call: ast.AST | None,
            sink: dict[str, Value] | None,
        ) -> Value: ...
        # data_pipelines.py
        def _subsets(self, qualname: str, info: CallInfo) -> Value: ...
        def _iteration(self, iterable: Value, node: ast.expr) -> Value: ...
        def _dataset_sample(self, dataset: Value, node: ast.AST) -> Value: ...
        # numpy_arrays.py
        def _numpy_call(self, qualname: str, info: CallInfo) -> Value: ...
        def _numpy_method(self, receiver: Value, info: CallInfo, env: Env) -> Value: ...
        def _array_index(self, container: InstanceValue, node: ast.Subscript) -> Value: ...
        def _array_attribute(self, value: InstanceValue, attr: str) -> Value: ...
        def _array_arithmetic(self, left: Value, right: Value, op: ast.operator) -> Value: ...
