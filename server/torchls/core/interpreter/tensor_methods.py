"""Tensor methods: ``x.view``, ``x.permute``, ``x.sum``, ``x.to``, ``x.chunk``, ... on an abstract tensor.

Each gives the resulting tensor's shape, dtype, device, strides and provenance where they follow, and records
the problems it finds (dims out of range, element counts that do not match, views of non-contiguous memory).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from torchls.core import layers, shapes, symbols
from torchls.core.facts import DTYPE_METHODS
from torchls.core.interpreter.base import InterpreterBase
from torchls.core.interpreter.known_values import _dims, _int, _literal, _size_dims
from torchls.core.interpreter.numpy_arrays import array
from torchls.core.interpreter.torch_functions import _differenced
from torchls.core.interpreter.torch_tables import (
    ARG_REDUCTIONS,
    CUMULATIVE,
    DIM_ARGUMENTS,
    FLOATING_ELEMENTWISE,
    REDUCTIONS,
    SAME_SHAPE_METHODS,
)
from torchls.core.rules.base import CallInfo
from torchls.core.values import (
    CPU,
    CUDA,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    LOG_SOFTMAX,
    LOGITS,
    SIGMOID,
    SOFTMAX,
    DeviceValue,
    Literal,
    Number,
    Origin,
    SequenceOf,
    TensorValue,
    TupleValue,
    Value,
    normalize_dtype,
    parse_device,
)


def _default_memory_format(info: CallInfo) -> bool:
    """No ``memory_format=``, or ``torch.contiguous_format``: the result is laid out row-major as usual."""
    if "memory_format" not in info.kwargs:
        return True
    return _literal(info.kwargs["memory_format"]) == "torch.contiguous_format"


def _requires_grad_with_arguments(tensor: TensorValue, info: CallInfo) -> bool | None:
    """An op on ``tensor`` and the tensors passed to it (``zeros.scatter(1, idx, vals)``) requires grad where any
    of them does; it does not where none does and every argument is known; else unknown."""
    grads = [tensor.requires_grad]
    for value in [*info.args, *info.kwargs.values()]:
        if isinstance(value, TensorValue):
            grads.append(value.requires_grad)
        elif value is None:
            grads.append(None)  # an argument the analysis cannot read may be a tensor that requires grad
    if True in grads:
        return True
    return False if all(g is False for g in grads) else None


def _leaf_after_conversion(tensor: TensorValue, device: str | None, dtype: str | None) -> bool | None:
    """``x.to(...)``/``x.double()`` is ``x`` itself when nothing changes, else a copy an operation made; where
    either side is unknown, which one it is is unknown."""
    if device == tensor.device and dtype == tensor.dtype:
        return tensor.is_leaf
    known_change = (None not in (device, tensor.device) and device != tensor.device) or (
        None not in (dtype, tensor.dtype) and dtype != tensor.dtype
    )
    return False if known_change else None


_SUMS = frozenset({"sum", "prod", "nansum"})


def _reduced_dtype(method: str, dtype: str | None, info: CallInfo) -> str | None:
    """The dtype of a reduction's result: ``dtype=`` if given; a sum or product of bools or integers is int64
    (``(pred == y).sum()``); a mean or norm of integers is refused by torch; max/min keep the dtype."""
    if "dtype" in info.kwargs:
        given = _literal(info.kwargs["dtype"])
        return normalize_dtype(given) if isinstance(given, str) and given.startswith("torch.") else None
    exact = dtype in INTEGER_DTYPES or dtype == "torch.bool"
    if method in _SUMS and exact:
        return "torch.int64"
    if method not in ("amax", "amin", "max", "min") and exact:
        return None
    return dtype


_COMPARISON_METHODS = frozenset(
    "eq ne lt le gt ge greater less greater_equal less_equal not_equal isnan isinf isfinite logical_not".split()
)


class TensorMethodsMixin(InterpreterBase):
    """Evaluates methods called on a tensor (and the tensor results torch functions share with them)."""

    def _tensor_method(self, tensor: TensorValue, method: str, info: CallInfo, offset: int = 0) -> Value:
        node = info.node
        args = info.args
        if method in DIM_ARGUMENTS:
            self._check_dims(node, tensor, info, *DIM_ARGUMENTS[method])
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
            if not _default_memory_format(info):  # contiguous(memory_format=torch.channels_last)
                return tensor.with_(contiguous=None, strides=None, sym_strides=None, is_leaf=False)
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
                if method == "squeeze" and not problem and shape is None:
                    kept = self._squeezed_batch(tensor, dim, node)
                    if kept is not None:
                        return kept
            return self._reshaped(tensor, shape)
        if method == "flatten":
            start = _int(info.arg(0, "start_dim")) if (args or "start_dim" in info.kwargs) else 0
            end = _int(info.arg(1, "end_dim")) if (len(args) > 1 or "end_dim" in info.kwargs) else -1
            if start is None or end is None:
                return TensorValue(dtype=tensor.dtype, device=tensor.device, is_leaf=False)
            if tensor.shape is None and end == -1 and 0 <= start < 8:
                # x.flatten(1) of a tensor of unknown rank: dims before start_dim stay, the rest become one, so the
                # result has start_dim + 1 dims (a tensor with fewer dims than that would have raised).
                return TensorValue(shape=(None,) * (start + 1), dtype=tensor.dtype, device=tensor.device, is_leaf=False)
            shape, problem = shapes.flatten(tensor.shape, start, end)
            self._problem(node, "dim", problem)
            return self._reshaped(tensor, shape)
        if method in ("tolist", "item") and not args and not info.kwargs:
            return _python_values(tensor, method)
        if method == "numpy" and tensor.dtype is not None:
            return array(tensor.dtype, tensor.shape)  # the same elements, as an array
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
        if method in ("bincount", "masked_select"):
            # one count per value / the entries a mask picks: one dim, its length read from the data
            weighted = method == "bincount" and (len(args) >= 1 or info.has_keyword("weights"))
            return TensorValue(
                shape=(None,),
                dtype=None
                if weighted or info.unknown_keywords
                else "torch.int64"
                if method == "bincount"
                else tensor.dtype,
                device=tensor.device,
                is_leaf=False,
            )
        if method == "repeat_interleave":
            return self._interleaved(tensor, info)
        if method in CUMULATIVE:
            return self._cumulative(tensor, info)
        if method in SAME_SHAPE_METHODS:
            keep_leaf = method.endswith("_")
            return TensorValue(
                shape=tensor.dims,
                tail=tensor.tail,
                dtype=_elementwise_dtype(method, tensor.dtype),
                device=tensor.device,
                requires_grad=_requires_grad_with_arguments(tensor, info),
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
            dtype="torch.int64" if is_index else _reduced_dtype(method, tensor.dtype, info),
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
        elif method == "type_as":  # self.type(other.type()): other's dtype and its kind of device (cuda or cpu)
            other = info.arg(0, "other")
            dtype = other.dtype if isinstance(other, TensorValue) else None
            device = other.device if isinstance(other, TensorValue) else None
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
        if not _default_memory_format(info):  # x.to(memory_format=torch.channels_last): other strides
            tensor = tensor.with_(contiguous=None, strides=None, sym_strides=None)
        return tensor.with_(
            device=device,
            dtype=dtype,
            is_leaf=_leaf_after_conversion(tensor, device, dtype),
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

    def _squeezed_batch(self, tensor: TensorValue, dim: int, node: ast.AST) -> TensorValue | None:
        """``labels.squeeze(0)`` where dim 0 is a loader's batch that is never 1: nothing is removed (a problem
        of kind ``squeeze``, TL106's); None where that dim may be 1."""
        dims = tensor.dims
        index = shapes.normalize_dim(dim, len(dims)) if dims is not None else None
        size = dims[index] if dims is not None and index is not None else None
        if not isinstance(size, symbols.Sym) or size not in self._batches_never_one:
            return None
        smallest, batch, length = self._batches_never_one[size]
        self._problem(
            node,
            "squeeze",
            f"第 {dim} 维是 DataLoader 的批次维：数据集有 {length} 个样本、`batch_size={batch}`，"
            f"每批至少 {smallest} 个，不是 1：`squeeze({dim})` 不会改变形状 {shapes.fmt(tensor.shape)}",
        )
        return tensor.with_(is_leaf=False)

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

    def _interleaved(self, tensor: TensorValue, info: CallInfo) -> TensorValue:
        """``x.repeat_interleave(n)``: each entry ``n`` times, flattened (along ``dim`` when given: that dim ``n``
        times as long); a tensor of repeats gives a length read from the data."""
        repeats = _int(info.arg(0, "repeats"))
        dim = info.arg(1, "dim")
        shape: Any = None
        flattened = dim is None or (isinstance(dim, Literal) and dim.value is None)
        if info.unknown_keywords or (not flattened and _int(dim) is None):
            shape = None
        elif flattened:
            count = shapes.numel(tensor.shape) if tensor.shape is not None else None
            shape = (count * repeats if count is not None and repeats is not None and repeats >= 0 else None,)
        elif tensor.shape is not None:
            at = shapes.normalize_dim(_int(dim), len(tensor.shape))  # type: ignore[arg-type]
            if at is not None:
                size = tensor.dims[at]  # type: ignore[index]
                grown = size * repeats if isinstance(size, int) and repeats is not None and repeats >= 0 else None
                shape = (*tensor.dims[:at], grown, *tensor.dims[at + 1 :])  # type: ignore[index]
        return TensorValue(shape=shape, dtype=tensor.dtype, device=tensor.device, is_leaf=False)

    def _cumulative(self, tensor: TensorValue, info: CallInfo) -> TensorValue:
        """``x.cumsum(0)``, ``torch.cumprod(x, dim=1)``: a tensor of the input's shape (int64 from an integer or bool
        input; a ``dtype=`` keyword's dtype is not followed, so then the dtype is unknown)."""
        dtype = tensor.dtype
        if info.has_keyword("dtype") or info.unknown_keywords:
            dtype = None
        elif dtype in INTEGER_DTYPES or dtype == "torch.bool":
            dtype = "torch.int64"
        return TensorValue(
            shape=tensor.dims,
            tail=tensor.tail,
            dtype=dtype,
            device=tensor.device,
            requires_grad=tensor.requires_grad,
            is_leaf=False,
        )

    def _check_dim(self, node: ast.AST, tensor: TensorValue, dim: Value) -> None:
        """Record a ``dim`` argument that is out of range for a tensor of known rank."""
        index = _int(dim)
        if index is not None and tensor.shape is not None:
            self._problem(node, "dim", shapes.dim_problem(index, len(tensor.shape)))

    def _check_dims(self, node: ast.AST, tensor: TensorValue, info: CallInfo, position: int, keyword: str) -> None:
        """Record a dim argument out of range: at ``position`` or ``keyword``, one int or a tuple of them
        (``x.flip(0, 1)`` passes its dims one by one)."""
        if keyword not in info.kwargs and len(info.args) <= position:
            return  # not given: the method's default dim, which is always in range
        given = _literal(info.arg(position, keyword))
        dims = given if isinstance(given, tuple) else (given,)
        if keyword == "dims" and keyword not in info.kwargs and not isinstance(given, tuple):
            dims = tuple(_literal(v) for v in info.args[position:])
        for dim in dims:
            if isinstance(dim, int) and not isinstance(dim, bool):
                self._check_dim(node, tensor, Literal(dim))
                if node in self.ctx.shape_problems:
                    return

    def _with_provenance(self, tensor: TensorValue, provenance: str, node: ast.AST, what: str) -> TensorValue:
        dtype = tensor.dtype
        given = next((k.value for k in getattr(node, "keywords", ()) if k.arg == "dtype"), None)
        if given is not None:  # softmax(x, dim, dtype=torch.float32) computes in that dtype
            literal = _literal(self.ctx.values.get(given))
            dtype = normalize_dtype(literal) if isinstance(literal, str) and literal.startswith("torch.") else None
        return TensorValue(
            shape=tensor.dims,
            tail=tensor.tail,
            dtype=dtype,
            device=tensor.device,
            requires_grad=tensor.requires_grad,
            is_leaf=False,
            provenance=provenance,
            origin=Origin(node, what),
        )


def _elementwise_dtype(operation: str, dtype: str | None) -> str | None:
    if operation in FLOATING_ELEMENTWISE and (dtype in INTEGER_DTYPES or dtype == "torch.bool"):
        return "torch.float32"  # unless the default dtype was changed, which _create already watches for
    return dtype


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


def _python_values(tensor: TensorValue, method: str) -> Value:
    """``x.item()``: a Python number of the tensor's kind; ``x.tolist()``: nested lists of them, one level per dim."""
    if tensor.dtype in INTEGER_DTYPES:
        value: Value = Number("int")
    elif tensor.dtype in FLOAT_DTYPES:
        value = Number("float")
    else:
        return None  # bool, complex or unknown: not a number kind we track
    if method == "item":
        return value
    if tensor.rank is None:
        return None
    for _ in range(tensor.rank):
        value = SequenceOf(value)
    return value
