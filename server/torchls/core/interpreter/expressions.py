"""Expressions other than calls: names, constants, containers, comprehensions, attributes, subscripts,
arithmetic and comparisons.

Tensor arithmetic broadcasts (or multiplies matrices) and records the shape problems it finds; attributes of a
tensor (``x.shape``, ``x.T``) and of the file's classes (``self.fc``, ``cfg.d_model``) read what is known.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from torchls.core import facts, layers, shapes, symbols
from torchls.core.interpreter.base import _UNROLL_ITEMS, Env, InterpreterBase
from torchls.core.interpreter.known_values import _LAYER_CONTAINERS, _int, _known_items, _literal, _merged
from torchls.core.interpreter.numpy_arrays import NDARRAY, is_array
from torchls.core.interpreter.torch_tables import DTYPE_NAMES
from torchls.core.statements import target_names
from torchls.core.values import (
    ACCELERATOR,
    CUDA,
    INTEGER_DTYPES,
    LOSS,
    DeviceValue,
    DictValue,
    InstanceValue,
    Literal,
    ModuleValue,
    Number,
    OfClass,
    SequenceOf,
    TensorValue,
    TupleValue,
    Value,
    merge,
    normalize_dtype,
    parse_device,
)

_FLOAT_CONSTANTS = frozenset(
    f"{module}.{name}" for module in ("torch", "math", "numpy") for name in ("pi", "e", "inf", "nan", "tau")
)

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


class ExpressionsMixin(InterpreterBase):
    """Evaluates the expression nodes that are not calls."""

    def _generic(self, node: ast.AST, env: Env) -> Value:
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.DictComp) and len(node.generators) == 1:
            unrolled = self._unrolled_comprehension(node, env)
            if unrolled is not None:
                return unrolled
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            inner = dict(env)
            iterables = []
            for generator in node.generators:
                # `[model(x) for x, _ in loader]`: the loop variables are what iterating gives, as in a for loop
                iterable = self.expr(generator.iter, inner)
                iterables.append(iterable)
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
                # every item is what the element is with the loop variables as iterating gives them; one generator
                # without a filter over a sequence of known length makes that many items
                length = None
                if len(node.generators) == 1 and not node.generators[0].ifs:
                    length = _known_length(iterables[0])
                return SequenceOf(parts[0], length)
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
        if isinstance(container, InstanceValue) and container.qualname in _DATASETS and _an_int(index):
            return self._dataset_sample(container, node)  # dataset[i]: one sample, as iterating it gives
        if isinstance(container, ModuleValue) and container.qualname == "torch.nn.ModuleDict":
            keys = container.arg("keys")
            if not isinstance(keys, tuple) or len(keys) != len(container.children):
                return None
            container = DictValue(tuple(zip(keys, container.children, strict=True)))  # self.heads["age"]
        if isinstance(container, DictValue):
            if isinstance(index, Literal):
                return container.get(index.value)
            return _merged(v for _, v in container.items)  # batch[key]: one of the values, whichever key
        if isinstance(container, SequenceOf):
            return container if isinstance(node.slice, ast.Slice) else container.item  # samples[i]: one of them
        if isinstance(container, InstanceValue) and container.qualname == NDARRAY:
            return self._array_index(container, node)
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
            parts = [self._index_kind(e) for e in elements]
            shape = shapes.index(container.dims, parts)  # type: ignore[arg-type]
            kept = _last_dim_untouched(container, parts)
            return TensorValue(
                shape=shape,
                dtype=container.dtype,
                device=container.device,
                provenance=container.provenance if kept else None,
                requires_grad=container.requires_grad,
                is_leaf=False,
                origin=container.origin if kept and container.provenance is not None else None,
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
            return self._window(element) or shapes.PART
        if isinstance(element, ast.Constant) and element.value is Ellipsis:
            return shapes.ELLIPSIS
        if isinstance(element, ast.Constant) and element.value is None:
            return shapes.NEW
        value = self.ctx.values.get(element)
        if _int(value) is not None or (isinstance(value, Number) and value.kind == "int"):
            return shapes.DROP
        if isinstance(value, TensorValue) and value.dtype in INTEGER_DTYPES and value.rank == 1:
            return shapes.PART  # x[idx] with a 1-D index tensor: that dim keeps as many entries as idx has
        return None

    def _window(self, element: ast.Slice) -> shapes.Window | None:
        """``x[i : i + k]`` with ``i`` an int of known bounds and ``k`` a known int: ``k`` items wherever ``i`` lies,
        when the dim is long enough for the last start (see ``shapes.Window``)."""
        lower, upper = element.lower, element.upper
        if lower is None or element.step is not None or not isinstance(upper, ast.BinOp):
            return None
        if not isinstance(upper.op, ast.Add):
            return None
        if ast.dump(upper.left) == ast.dump(lower):
            length = _int(self.ctx.values.get(upper.right))
        elif ast.dump(upper.right) == ast.dump(lower):
            length = _int(self.ctx.values.get(upper.left))
        else:
            return None
        start = self.ctx.values.get(lower)
        if length is None or length < 0 or not isinstance(start, Number) or not start.bounded:
            return None
        if start.low < 0:  # type: ignore[operator]
            return None  # a negative start counts from the end
        return shapes.Window(start.high, length)  # type: ignore[arg-type]

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
        if isinstance(base, InstanceValue) and base.qualname == NDARRAY:
            return self._array_attribute(base, node.attr)
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
        if is_array(left) or is_array(right):
            return self._array_arithmetic(left, right, op)
        if isinstance(left, Literal) and isinstance(right, Literal):
            try:
                return Literal(_PY_OPS[type(op)](left.value, right.value))
            except Exception:
                return None
        shifted = _shifted_bounds(left, right, op)
        if shifted is not None:
            return shifted
        unknown_number = _python_number(left, right, op)
        if unknown_number is not None:
            return unknown_number
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


def _last_dim_untouched(tensor: TensorValue, parts: list[str | slice | None]) -> bool:
    """``x[i]``, ``x[:, t]`` of a tensor with more dims than the index reads: every row keeps the kind of values
    (softmax, log_softmax, sigmoid, one-hot, logits) along the last dim; a loss is not such a kind."""
    if tensor.provenance is None or tensor.provenance == LOSS or tensor.rank is None:
        return False
    if any(p is None or p in (shapes.ELLIPSIS, shapes.NEW) for p in parts):
        return False
    return len(parts) < tensor.rank


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


_DATASETS = frozenset({"dataset", "torch.utils.data.TensorDataset", "torch.utils.data.Subset"})


def _an_int(index: Value) -> bool:
    """An index that picks one sample: an int, known or not (not a slice, a key or a tuple)."""
    if isinstance(index, Number):
        return index.kind == "int"
    return isinstance(index, Literal) and isinstance(index.value, int) and not isinstance(index.value, bool)


def _known_length(iterable: Value) -> int | None:
    """How many items a loop over ``iterable`` sees, when that is fixed: a known sequence, a string, a long range."""
    if isinstance(iterable, SequenceOf):
        return iterable.length
    if isinstance(iterable, Literal) and isinstance(iterable.value, str):
        return len(iterable.value)
    items = _known_items(iterable)
    return len(items) if items is not None else None


def _comprehension_names(generator: ast.comprehension) -> set[str]:
    names: set[str] = set()
    target_names(generator.target, names)
    return names


def _shifted_bounds(left: Value, right: Value, op: ast.operator) -> Number | None:
    """``i + k``, ``k + i``, ``i - k`` for an int ``i`` of known bounds and a known int ``k``: the bounds moved."""
    if not isinstance(op, ast.Add | ast.Sub):
        return None
    if isinstance(left, Number) and left.bounded and left.kind == "int":
        number, other = left, _int(right)
    elif isinstance(right, Number) and right.bounded and right.kind == "int" and isinstance(op, ast.Add):
        number, other = right, _int(left)
    else:
        return None
    if other is None or (isinstance(right, Literal) and isinstance(right.value, bool)):
        return None
    shift = other if isinstance(op, ast.Add) else -other
    return Number("int", number.low + shift, number.high + shift)  # type: ignore[operator]


def _number_kind(value: Value) -> str | None:
    """``"int"`` or ``"float"`` for a Python number, known or not; None for anything else."""
    if isinstance(value, Number):
        return value.kind
    if isinstance(value, Literal) and isinstance(value.value, int | float):
        return "float" if isinstance(value.value, float) else "int"
    return None


def _python_number(left: Value, right: Value, op: ast.operator) -> Number | None:
    """Arithmetic on Python numbers where one is not known (``2 * math.pi``, ``n // 2``): a number of the kind
    Python gives (``/`` and a float make a float); its value stays unknown."""
    kinds = (_number_kind(left), _number_kind(right))
    if None in kinds or not (isinstance(left, Number) or isinstance(right, Number)):
        return None
    if isinstance(op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv | ast.Mod):
        return Number("float" if "float" in kinds else "int")
    if isinstance(op, ast.Div):
        return Number("float")
    return None  # int ** int is a float for a negative exponent
