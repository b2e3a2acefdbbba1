"""NumPy arrays, as far as the tensors torch makes of them depend on them: their dtype and shape.

Tabular and audio pipelines build their features and labels as arrays (``rng.integers(...).astype(np.int32)``,
``np.digitize(score, bins)``) and hand them to torch with ``torch.from_numpy``, ``torch.tensor`` or
``torch.as_tensor``, which keep the array's dtype (``int32`` labels stay ``int32``, ``float64`` ones ``float64``).
An array is an :class:`InstanceValue` of ``numpy.ndarray`` carrying ``dtype`` (the torch dtype the conversion
gives) and ``shape``; a ``numpy.random.Generator`` carries nothing. Whatever else NumPy does is unknown.
"""

from __future__ import annotations

import ast
from typing import Any

from torchls.core import facts, shapes
from torchls.core.interpreter.base import Env, InterpreterBase
from torchls.core.interpreter.known_values import _dims, _int, _literal
from torchls.core.rules.base import CallInfo
from torchls.core.symbols import erase
from torchls.core.values import (
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    InstanceValue,
    Literal,
    Number,
    SequenceOf,
    TensorValue,
    TupleValue,
    Value,
)

NDARRAY = "numpy.ndarray"
GENERATOR = "numpy.random.Generator"

# Methods of an array that keep its dtype and shape, or its dtype only.
_SAME_ARRAY = frozenset({"copy"})
_SAME_DTYPE = frozenset({"reshape", "ravel", "flatten", "squeeze", "transpose", "repeat", "clip", "round"})


def array(dtype: str | None, shape: Any = None) -> InstanceValue:
    """An array whose elements converted by torch have ``dtype``, of ``shape`` (None: rank not known)."""
    return InstanceValue(NDARRAY, (("dtype", dtype), ("shape", erase(shape) if shape is not None else None)))


def is_array(value: Value) -> bool:
    return isinstance(value, InstanceValue) and value.qualname == NDARRAY


def array_shape(value: InstanceValue) -> tuple[int | None, ...] | None:
    return value.arg("shape")


class NumpyArraysMixin(InterpreterBase):
    """Evaluates the NumPy calls, methods, indexing and arithmetic that give an array's dtype and shape."""

    def _numpy_dtype(self, value: Value, node: ast.expr | None) -> str | None:
        """The torch dtype a NumPy dtype argument means: ``np.int32``, ``"int32"``, ``float`` (float64)."""
        if node is None:
            return None
        qualname = self.ctx.qualify(node)
        if qualname is None and isinstance(node, ast.Name) and node.id in ("int", "float", "bool"):
            qualname = f"builtins.{node.id}" if node.id not in self.module_env else None
        if qualname is None and isinstance(value, Literal) and isinstance(value.value, str):
            qualname = value.value
        return facts.NUMPY_DTYPES.get(qualname) if qualname is not None else None

    def _dtype_argument(self, info: CallInfo, position: int) -> tuple[bool, str | None]:
        """``(given, dtype)`` of a call's ``dtype`` argument (keyword, or at ``position`` when not negative)."""
        node = info.arg_node(position if position >= 0 else 99, "dtype")
        if node is None:
            return False, None
        return True, self._numpy_dtype(self.ctx.values.get(node), node)

    def _numpy_call(self, qualname: str, info: CallInfo) -> Value:
        short = qualname.rsplit(".", 1)[-1]
        if qualname == "numpy.random.default_rng":
            return InstanceValue(GENERATOR)
        if qualname.startswith("numpy.random."):
            return self._random_numbers(short, info, legacy=True)
        if short in ("array", "asarray", "ascontiguousarray"):
            given, dtype = self._dtype_argument(info, 1)
            data_dtype, shape = _data_of(info.arg(0, "object" if short == "array" else "a"))
            if given:
                return array(dtype, shape) if dtype is not None else None
            return array(data_dtype, shape) if data_dtype is not None else None
        if short in ("zeros", "ones", "empty", "full"):
            dims = _dims([info.arg(0, "shape")])
            shape = tuple(dims) if dims is not None else None
            given, dtype = self._dtype_argument(info, 2 if short == "full" else 1)
            if not given:
                dtype = facts.NUMPY_FLOAT
                if short == "full":
                    fill = _literal(info.arg(1, "fill_value"))
                    dtype = _python_dtype(fill)
            return array(dtype, shape) if dtype is not None else None
        if short == "digitize":
            x = info.arg(0, "x")
            return array(facts.NUMPY_INT, array_shape(x) if is_array(x) else None)  # type: ignore[arg-type]
        return None

    def _random_numbers(self, method: str, info: CallInfo, legacy: bool) -> Value:
        """``rng.integers(0, 7, size=n)``, ``rng.normal(size=(n, d))``, ``np.random.randn(n, d)``: the array drawn.

        Without ``size`` one number is drawn: a Python float, or a NumPy integer scalar (int64 as a tensor).
        """
        given, dtype = self._dtype_argument(info, -1)
        if method in facts.NUMPY_RANDOM_INTS:
            position = facts.NUMPY_RANDOM_INTS[method]
            dtype = dtype if given else facts.NUMPY_INT
        elif method in facts.NUMPY_RANDOM_FLOATS:
            position = facts.NUMPY_RANDOM_FLOATS[method]
            dtype = dtype if given else facts.NUMPY_FLOAT
            if position is None:  # np.random.rand(n, d)
                if not legacy or info.kwargs:
                    return None
                dims = _dims(info.args) if info.args else []
                return array(dtype, tuple(dims) if dims is not None else None) if info.args else Number("float")
        else:
            return None
        if dtype is None:
            return None
        size = info.arg(position, "size")
        if ("size" not in info.kwargs and len(info.args) <= position) or (
            isinstance(size, Literal) and size.value is None
        ):
            if given:
                return None
            return array(dtype, ()) if dtype == facts.NUMPY_INT else Number("float")
        dims = _dims([size])
        return array(dtype, tuple(dims) if dims is not None else None)

    def _numpy_method(self, receiver: Value, info: CallInfo, env: Env) -> Value:
        """A method of an array, of a random Generator, or ``x.astype(np.int32)`` on a value not known to be one."""
        method = info.method or ""
        if isinstance(receiver, InstanceValue) and receiver.qualname == GENERATOR:
            return self._random_numbers(method, info, legacy=False)
        if method == "astype":
            node = info.arg_node(0, "dtype")
            dtype = self._numpy_dtype(self.ctx.values.get(node) if node is not None else None, node)
            if dtype is None:
                return None
            return array(dtype, array_shape(receiver) if is_array(receiver) else None)  # type: ignore[arg-type]
        if not is_array(receiver):
            return None
        assert isinstance(receiver, InstanceValue)
        dtype, shape = receiver.arg("dtype"), array_shape(receiver)
        if method in _SAME_ARRAY:
            return receiver
        if method in _SAME_DTYPE:
            return array(dtype)
        if method in ("mean", "std", "var", "sum", "max", "min"):
            if info.kwargs.keys() - {"axis", "keepdims"} or len(info.args) > 1:
                return None
            axis = info.arg(0, "axis")
            keepdims = _literal(info.kwargs.get("keepdims")) is True
            if axis is None and ("axis" in info.kwargs or info.args):
                return None
            reduced, _ = shapes.reduce(shape, _int(axis) if axis is not None else None, keepdims)
            if axis is not None and _int(axis) is None:
                reduced = None
            if method in ("mean", "std", "var") and dtype in INTEGER_DTYPES:
                dtype = facts.NUMPY_FLOAT
            elif method == "sum" and dtype in INTEGER_DTYPES:
                dtype = None  # the platform's integer: int64 or int32
            return array(dtype, reduced)
        return None

    def _array_index(self, container: InstanceValue, node: ast.Subscript) -> Value:
        """``X[i]``, ``X[:, 0]``: an array of the same dtype (a NumPy scalar when every dim is indexed)."""
        elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        parts = [self._index_kind(e) for e in elements]
        shape = array_shape(container)
        indexed = shapes.index(shape, parts) if None not in parts else None  # type: ignore[arg-type]
        return array(container.arg("dtype"), indexed)

    def _array_attribute(self, value: InstanceValue, attr: str) -> Value:
        shape = array_shape(value)
        if attr == "shape" and shape is not None:
            return TupleValue(tuple(Literal(d) if d is not None else None for d in shape))
        if attr == "ndim" and shape is not None:
            return Literal(len(shape))
        if attr == "T":
            return array(value.arg("dtype"), tuple(reversed(shape)) if shape is not None else None)
        return None

    def _array_arithmetic(self, left: Value, right: Value, op: ast.operator) -> Value:
        """Arrays with arrays or Python numbers: broadcast shapes; the dtype NumPy gives where it is certain."""
        if isinstance(op, ast.MatMult):
            return None
        arrays = [v for v in (left, right) if is_array(v)]
        others = [v for v in (left, right) if not is_array(v)]
        if any(isinstance(v, TensorValue) for v in others):
            return None
        dtypes = {a.arg("dtype") for a in arrays}  # type: ignore[union-attr]
        dtype = dtypes.pop() if len(dtypes) == 1 else None
        shape = array_shape(arrays[0])  # type: ignore[arg-type]
        if len(arrays) == 2:
            shape, problem = shapes.broadcast(shape, array_shape(right))  # type: ignore[arg-type]
            if problem:
                return None
        else:
            other = others[0]
            number = other.kind if isinstance(other, Number) else _python_kind(_literal(other))
            if number is None:
                return None
            if number == "float" and dtype in INTEGER_DTYPES:
                dtype = facts.NUMPY_FLOAT
        if isinstance(op, ast.Div) and dtype not in FLOAT_DTYPES:
            dtype = facts.NUMPY_FLOAT if dtype in INTEGER_DTYPES else None
        return array(dtype, shape)


def _python_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return None


def _python_dtype(value: Any) -> str | None:
    """The dtype NumPy gives an array of this Python value."""
    if isinstance(value, bool):
        return "torch.bool"
    kind = _python_kind(value)
    return facts.NUMPY_INT if kind == "int" else facts.NUMPY_FLOAT if kind == "float" else None


def _data_of(data: Value) -> tuple[str | None, Any]:
    """``(dtype, shape)`` of the array ``np.array(data)`` makes: of an array, a tensor, or nested numbers."""
    if is_array(data):
        assert isinstance(data, InstanceValue)
        return data.arg("dtype"), array_shape(data)
    if isinstance(data, TensorValue):
        return data.dtype, data.shape
    if isinstance(data, Number):
        return (facts.NUMPY_INT if data.kind == "int" else facts.NUMPY_FLOAT), ()
    if isinstance(data, Literal):
        return _python_dtype(data.value), ()
    if isinstance(data, SequenceOf):
        dtype, shape = _data_of(data.item)
        return dtype, ((None, *shape) if shape is not None else None)
    if isinstance(data, TupleValue) and data.items:
        inner = [_data_of(item) for item in data.items]
        kinds = {d for d, _ in inner}
        found = {s for _, s in inner}
        if None in kinds or len(found) != 1 or None in found:
            return None, None
        dtype = facts.NUMPY_FLOAT if facts.NUMPY_FLOAT in kinds else kinds.pop() if len(kinds) == 1 else None
        return dtype, (len(data.items), *found.pop())
    return None, None
