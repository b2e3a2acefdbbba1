"""Calls of torch functions and other library callables, by qualified name.

``torch.*`` and ``F.*``: creation functions (shape, dtype, device from their arguments), joins, matrix products,
softmax/sigmoid/log_softmax (the provenance rules read), losses, padding, interpolation, functional pools; torch
classes the rules track (optimizers, loaders, datasets, scalers) become instances that carry their arguments;
``math``, ``dataclasses.field``, ``argparse``, ``SimpleNamespace`` and ``tqdm`` as far as sizes depend on them.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from torchls.core import shapes
from torchls.core.facts import CREATION_FUNCTIONS
from torchls.core.interpreter.base import Env, InterpreterBase
from torchls.core.interpreter.known_values import _dims, _int, _literal
from torchls.core.interpreter.numpy_arrays import array_shape, is_array
from torchls.core.interpreter.torch_tables import (
    CUMULATIVE,
    DIM_ARGUMENTS,
    FUNCTIONAL_DIM_ARGUMENTS,
    LAYER_PARAMETERS,
    LOSS_FUNCTIONS,
    PROVENANCE_FUNCTIONS,
    SAME_SHAPE_FUNCTIONS,
    TRACKED_CLASSES,
)
from torchls.core.rules.base import CallInfo
from torchls.core.values import (
    CPU,
    LOG_SOFTMAX,
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
    Origin,
    SequenceOf,
    TensorValue,
    TupleValue,
    Value,
    normalize_dtype,
    parse_device,
)

# Functional pools and the layer each computes like.
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

_SUBSETS = frozenset(
    {"torch.utils.data.random_split", "torch.utils.data.dataset.random_split", "torch.utils.data.Subset"}
)

_MATH_FLOATS = frozenset("sqrt log log2 log10 exp pow cos sin tan atan".split())
_NAMESPACES = frozenset({"types.SimpleNamespace", "argparse.Namespace"})


class TorchFunctionsMixin(InterpreterBase):
    """Evaluates calls of torch functions and classes (and the few library callables sizes depend on)."""

    def _torch_call(self, qualname: str, info: CallInfo, env: Env) -> Value:
        short = qualname.rsplit(".", 1)[-1]
        node = info.node
        if qualname.startswith("numpy."):
            return self._numpy_call(qualname, info)
        if qualname == "torch.device":
            return DeviceValue(parse_device(info.arg(0, "type")))
        if qualname in _FUNCTIONAL_POOLS:
            return self._functional_pool(_FUNCTIONAL_POOLS[qualname], info)
        if qualname == "torch.nn.functional.pad":
            return _padded(info)
        if qualname == "torch.diff" and isinstance(info.arg(0, "input"), TensorValue):
            return _differenced(info.arg(0, "input"), info, 1)  # type: ignore[arg-type]
        if qualname == "torch.nn.utils.rnn.pad_sequence":
            return _padded_sequences(info)
        if qualname in ("torch.einsum", "torch.functional.einsum"):
            return _einsum(info)
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
            if short == "DataLoader":
                # DataLoader(ds, 32, True, ..., collate_fn): the positional parameters after the dataset
                args += [
                    (k, v) for k, v in zip(_LOADER_POSITIONAL, info.args[1:], strict=False) if k not in info.kwargs
                ]
                if info.starred or info.unknown_keywords:
                    args.append(("collate_fn", None))  # **options may set it: the batches are not known
                collate = info.arg_node(6, "collate_fn")
                if isinstance(collate, ast.Name) and collate.id in self.functions and self._is_global(collate.id, env):
                    args.append(("collate_function", Literal(collate.id)))  # the file's own: followed per batch
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
        if qualname in FUNCTIONAL_DIM_ARGUMENTS:
            self._check_dims(node, receiver, info, *FUNCTIONAL_DIM_ARGUMENTS[qualname])
        elif qualname == f"torch.{short}" and short in DIM_ARGUMENTS:
            position, keyword = DIM_ARGUMENTS[short]
            self._check_dims(node, receiver, info, position + 1, keyword)  # torch.cumsum(x, 2) is x.cumsum(2)
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
        if qualname == f"torch.{short}" and short in CUMULATIVE:
            return self._cumulative(receiver, info)
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
            "bincount",
            "masked_select",
            "repeat_interleave",
        ):
            # torch.flatten(x, 1) is x.flatten(1): the same semantics with the tensor as first argument.
            shifted = CallInfo(node, method=short, receiver=receiver, args=info.args[1:], kwargs=info.kwargs)
            return self._tensor_method(receiver, short, shifted, offset=1)
        return None

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
            # ``zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(size=shape)``; with none of them torch raises
            sizes = [info.kwargs["size"]] if info.has_keyword("size") else list(info.args)
            dims = _dims(sizes) if sizes else None
            shape = tuple(dims) if dims is not None and all(d is None or d >= 0 for d in dims) else None
            dtype = dtype or "torch.float32"  # the default dtype (see the end)
        elif short == "full":
            size = info.arg(0, "size")
            dims = _dims([size]) if size is not None else None
            shape = tuple(dims) if dims is not None else None
            fill = _literal(info.arg(1, "fill_value"))
            if dtype is None:  # torch.full takes its dtype from the fill value
                dtype = "torch.bool" if isinstance(fill, bool) else "torch.int64" if isinstance(fill, int) else None
                if isinstance(fill, float):
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
        elif short in ("tensor", "as_tensor", "from_numpy") and is_array(data := info.args[0] if info.args else None):
            # An array's elements keep their dtype (int32 labels stay int32); its data is in host memory.
            shape = array_shape(data)  # type: ignore[arg-type]
            if short == "from_numpy" or dtype is None:
                dtype = data.arg("dtype")  # type: ignore[union-attr]
            if not info.has_keyword("device"):
                device = CPU if short == "from_numpy" or not self.default_device_changed else None
        elif short in ("tensor", "as_tensor") and isinstance(data := info.args[0] if info.args else None, TensorValue):
            # A tensor's data: the copy (or the tensor itself) keeps its shape, dtype and device.
            if short == "as_tensor" and dtype is None and not info.has_keyword("device") and not info.kwargs:
                return data.with_(origin=Origin(node, f"在这里创建（`{short}`）"))  # the very same tensor
            shape = data.shape
            dtype = dtype or data.dtype
            if not info.has_keyword("device"):
                device = data.device
        elif short in ("tensor", "as_tensor"):
            data = info.args[0] if info.args else None
            shape, inferred = _nested_shape(data)
            dtype = dtype or inferred
            if inferred is None and not info.has_keyword("device"):
                device = None  # not a literal: may be a tensor, whose device the copy keeps
        elif short == "from_numpy":
            device = CPU
        if info.has_keyword("dtype"):
            dtype = _literal(dtype_value) if isinstance(_literal(dtype_value), str) else None  # or unknown
        elif normalize_dtype(dtype) == "torch.float32" and _default_dtype_may_change(self.ctx.source.text):
            dtype = None  # torch.set_default_dtype(torch.float64) somewhere in the file
        # from_numpy (and as_tensor of an array) shares the array's memory: a sliced array (windows[:, :-1]) gives
        # a tensor that is not contiguous. The others allocate a fresh, contiguous tensor.
        given = info.args[0] if info.args else None
        shares_memory = short == "from_numpy" or (short == "as_tensor" and not isinstance(given, TensorValue))
        strides = shapes.contiguous_strides(shape) if shapes.known(shape) and not shares_memory else None
        return TensorValue(
            shape=shape,
            dtype=normalize_dtype(dtype),
            device=device,
            contiguous=None if shares_memory else True,
            strides=strides,
            requires_grad=requires_grad,
            is_leaf=True,
            origin=Origin(node, f"在这里创建（`{short}`）"),
        )

    def _join(self, short: str, info: CallInfo) -> Value:
        tensors = info.arg(0, "tensors")
        if isinstance(tensors, SequenceOf) and isinstance(tensors.item, TensorValue):
            return _joined_unknown_count(short, tensors.item, info, tensors.length)
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

    def _loss_value(self, reduction: Value, source: Value, node: ast.AST) -> TensorValue:
        reduced = _literal(reduction) in (None, "mean", "sum")
        device = source.device if isinstance(source, TensorValue) else None
        return TensorValue(
            shape=() if reduced else None,
            device=device,
            provenance=LOSS,
            is_leaf=False,
            # it requires grad where its input does (a model's output); a loss of plain tensors has no graph
            requires_grad=True if self.ctx.grad_enabled and _requires_grad(source) else None,
            origin=Origin(node, "在这里计算了损失"),
        )


def _default_dtype_may_change(text: str) -> bool:
    """The file sets torch's default float dtype somewhere: a factory's float result may not be float32."""
    return "set_default_dtype" in text or "set_default_tensor_type" in text


def _requires_grad(value: Value) -> bool:
    return isinstance(value, TensorValue) and value.requires_grad is True


def _joined_unknown_count(short: str, item: TensorValue, info: CallInfo, count: Any = None) -> Value:
    """``torch.cat(preds)`` of a list a loop filled: the joined dim's size is not known, the rest is the items'
    (``torch.stack`` of a list whose length ``count`` is known: that many)."""
    dim = _int(info.arg(1, "dim")) if (len(info.args) > 1 or "dim" in info.kwargs) else 0
    shape = None
    if dim is not None and item.shape is not None:
        rank = len(item.shape) + (1 if short == "stack" else 0)
        index = shapes.normalize_dim(dim, rank)
        if index is not None:
            dims = list(item.dims)  # type: ignore[arg-type]
            if short == "stack":
                dims.insert(index, count)
            elif dims:
                dims[index] = None
            shape = tuple(dims)
    return TensorValue(shape=shape, dtype=item.dtype, device=item.device, is_leaf=False)


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


def _padded_sequences(info: CallInfo) -> Value:
    """``pad_sequence(seqs, batch_first=True)``: the sequences padded to the longest, stacked along a new dim 0
    (dim 1 without ``batch_first``); the padded length is not known."""
    sequences = info.arg(0, "sequences")
    batch_first = _literal(info.arg(1, "batch_first")) if len(info.args) > 1 or "batch_first" in info.kwargs else False
    if isinstance(sequences, SequenceOf) and isinstance(sequences.item, TensorValue):
        item, count = sequences.item, sequences.length
    elif isinstance(sequences, TupleValue) and sequences.items and isinstance(sequences.items[0], TensorValue):
        item, count = sequences.items[0], len(sequences.items)
    else:
        return None
    if item.dims is None or not item.dims or not isinstance(batch_first, bool):
        return TensorValue(dtype=item.dtype, device=item.device, is_leaf=False)
    rest = tuple(item.dims[1:])
    shape = (count, None, *rest) if batch_first else (None, count, *rest)
    return TensorValue(shape=shape, dtype=item.dtype, device=item.device, is_leaf=False)


_LOADER_POSITIONAL = ("batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn")


def _einsum(info: CallInfo) -> Value:
    """``torch.einsum("mf,bft->bmt", a, b)``: each output letter takes the size an operand gives that letter,
    so a known filterbank size reaches the result even when the other operand's sizes are unknown."""
    equation = _literal(info.arg(0, "equation"))
    operands = info.args[1:]
    if len(operands) == 1 and isinstance(operands[0], TupleValue):
        operands = list(operands[0].items)  # einsum(eq, [a, b])
    if not isinstance(equation, str) or info.starred or not operands:
        return None
    if not all(isinstance(v, TensorValue) or v is None for v in operands):
        return TensorValue(is_leaf=False)
    # einsum takes only tensors: an operand the analysis does not know is a tensor of unknown shape
    tensors = [v if isinstance(v, TensorValue) else TensorValue() for v in operands]
    dtypes, devices = {t.dtype for t in tensors}, {t.device for t in tensors}
    unknown = TensorValue(
        dtype=dtypes.pop() if len(dtypes) == 1 else None,
        device=devices.pop() if len(devices) == 1 else None,
        is_leaf=False,
    )
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    subscripts = inputs.split(",")
    if "." in equation or len(subscripts) != len(tensors) or not all(s.isalpha() for s in subscripts):
        return unknown  # broadcasting with "..." is not followed
    if not arrow:  # implicit output: the letters used once, in alphabetical order
        output = "".join(sorted(c for c in set(inputs) if inputs.count(c) == 1 and c.isalpha()))
    if not output.isalpha() and output:
        return unknown
    sizes: dict[str, Any] = {}
    for letters, tensor in zip(subscripts, tensors, strict=True):
        dims = tensor.dims
        if dims is not None and len(dims) != len(letters):
            return unknown  # a subscript that does not fit its operand: einsum raises, nothing to say here
        for index, letter in enumerate(letters):
            size = dims[index] if dims is not None else None
            if size is not None and sizes.get(letter) is None:
                sizes[letter] = size
    if any(letter not in inputs for letter in output):
        return unknown
    return unknown.with_(shape=tuple(sizes.get(letter) for letter in output))


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


def _nested_shape(value: Value) -> tuple[Any, str | None]:
    """The shape and dtype ``torch.tensor`` gives a nested list or tuple literal."""
    if isinstance(value, Number):
        return (), "torch.int64" if value.kind == "int" else "torch.float32"
    if isinstance(value, SequenceOf):
        shape, dtype = _nested_shape(value.item)  # [[float(v) for v in row] for row in reader]
        return ((value.length, *shape) if shape is not None else None), dtype
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
