"""What a torch layer does to the shape of its input: the interpreter propagates values with it and the shape
rules fold it over ``nn.Sequential`` to check that layers connect. Pure functions of abstract values."""

from __future__ import annotations

import ast
from typing import Any

from torchls.core import shapes
from torchls.core.values import (
    LOG_SOFTMAX,
    LOGITS,
    SIGMOID,
    SOFTMAX,
    ModuleValue,
    Origin,
    TensorValue,
    TupleValue,
    Value,
)

SAME_SHAPE_LAYERS = frozenset(
    "ReLU ReLU6 LeakyReLU GELU SiLU ELU SELU Mish Softplus Hardswish Hardsigmoid Tanh Dropout Dropout1d Dropout2d "
    "Dropout3d AlphaDropout Identity BatchNorm1d BatchNorm2d BatchNorm3d LayerNorm GroupNorm InstanceNorm1d "
    "InstanceNorm2d RMSNorm PReLU TransformerEncoderLayer TransformerEncoder TransformerDecoderLayer "
    "TransformerDecoder".split()  # a transformer layer's output has its (first) input's shape
)


def layer_output(module: ModuleValue, x: TensorValue, node: ast.AST) -> Value:
    """What one torch layer makes of ``x``; None when the result is not known."""
    short = module.qualname.rsplit(".", 1)[-1]
    base = {"device": x.device, "requires_grad": None, "is_leaf": False, "dtype": x.dtype}
    if module.arg("return_indices") is not False and module.has_arg("return_indices"):
        return None  # a max pool that returns (values, indices)
    if short in SAME_SHAPE_LAYERS:
        return TensorValue(shape=x.dims, tail=x.tail, **base)
    if short in ("Softmax", "LogSoftmax", "Sigmoid"):
        provenance = {"Softmax": SOFTMAX, "LogSoftmax": LOG_SOFTMAX, "Sigmoid": SIGMOID}[short]
        origin = module.origin or Origin(node, f"在这里使用了 `{short}`")
        return TensorValue(shape=x.dims, tail=x.tail, provenance=provenance, origin=origin, **base)
    if short == "Linear":
        out = module.arg("out_features")
        if not isinstance(out, int):
            out = None  # a size we cannot compute: still logits, still the same batch dims
        if x.shape is not None and len(x.shape) >= 1:
            dims = (*x.dims[:-1], out)  # type: ignore[index]
            # a freshly allocated result: contiguous whatever the input's layout
            return TensorValue(shape=dims, provenance=LOGITS, contiguous=True, **base, **fresh_strides(dims))
        return TensorValue(tail=(out,) if out is not None else None, provenance=LOGITS, **base)
    if short in ("Conv1d", "Conv2d"):
        return _conv_output(module, x, short, base)
    if short in ("ConvTranspose1d", "ConvTranspose2d"):
        return _transposed_conv_output(module, x, short, base)
    if short in ("MaxPool2d", "AvgPool2d"):
        return _pool_output(module, x, base)
    if short in ("MaxPool1d", "AvgPool1d"):
        return _pool1d_output(module, x, base)
    if short in ("AdaptiveAvgPool1d", "AdaptiveMaxPool1d"):
        size = _one(module.arg("output_size"))
        channels = x.trailing(2)
        if size is None or channels is None:
            return None
        if x.shape is not None:
            return TensorValue(shape=(*x.dims[:-1], size[0]), **base)  # type: ignore[index]
        return TensorValue(tail=(channels[0], size[0]), **base)
    if short in ("AdaptiveAvgPool2d", "AdaptiveMaxPool2d"):
        size = shapes.pair(module.arg("output_size"), 1)
        channels = x.trailing(3)
        if size is None or channels is None:
            return None
        if x.shape is not None:
            return TensorValue(shape=x.dims[:-2] + size, **base)  # type: ignore[index]
        return TensorValue(tail=(channels[0], *size), **base)
    if short == "Flatten":
        start, end = module.arg("start_dim", 1), module.arg("end_dim", -1)
        if x.shape is None or not isinstance(start, int) or not isinstance(end, int):
            return None
        shape, _problem = shapes.flatten(x.shape, start, end)
        return TensorValue(shape=shape, **base)
    if short == "EmbeddingBag":
        dim = module.arg("embedding_dim")
        if not isinstance(dim, int) or x.dims is None or len(x.dims) != 2:
            return None  # 1-d input with offsets: one bag per offset, how many is not known here
        return TensorValue(shape=(x.dims[0], dim), device=x.device, dtype=None)  # (B, L) ids: one bag per row
    if short == "Embedding":
        dim = module.arg("embedding_dim")
        if not isinstance(dim, int):
            dim = None
        shape = (*x.dims, dim) if x.dims is not None else None
        tail = None if shape or dim is None else (dim,)
        return TensorValue(shape=shape, tail=tail, device=x.device, dtype=None)
    if short in ("LSTM", "GRU", "RNN"):
        hidden = module.arg("hidden_size")
        bidirectional = module.arg("bidirectional", False)
        if not isinstance(hidden, int) or not isinstance(bidirectional, bool) or module.has_arg("proj_size"):
            return TupleValue((None, None))
        directions = 2 if bidirectional else 1
        features = directions * hidden
        if x.shape is not None and len(x.shape) in (2, 3):
            output = TensorValue(shape=(*x.dims[:-1], features), device=x.device)  # type: ignore[index]
            return TupleValue((output, _final_state(module, short, x, hidden)))
        if x.shape is None and x.tail is not None:
            return TupleValue((TensorValue(tail=(features,), device=x.device), None))  # (..., D * hidden_size)
        return TupleValue((None, None))
    if short == "MultiheadAttention":
        return TupleValue((TensorValue(shape=x.dims, tail=x.tail, device=x.device), None))
    return None


def _final_state(module: ModuleValue, short: str, x: TensorValue, hidden: int) -> Value:
    """``h_n`` (``(h_n, c_n)`` for an LSTM): ``(num_layers * directions, N, hidden_size)`` for a batched input,
    without the batch dim for an unbatched one."""
    layers_count, batch_first = module.arg("num_layers", 1), module.arg("batch_first", False)
    if not isinstance(layers_count, int) or not isinstance(batch_first, bool) or x.dims is None:
        return None
    leading = layers_count * (2 if module.arg("bidirectional", False) is True else 1)
    if len(x.dims) == 3:
        state = TensorValue(shape=(leading, x.dims[0 if batch_first else 1], hidden), device=x.device)
    else:
        state = TensorValue(shape=(leading, hidden), device=x.device)
    return TupleValue((state, state)) if short == "LSTM" else state


def state_problem(module: ModuleValue, x: TensorValue, state: Value) -> str | None:
    """Why the initial state ``state`` (``h_0``, or ``(h_0, c_0)`` for an LSTM) provably does not fit a recurrent
    layer called on the batched input ``x``: a Chinese message, or None. Each state must be
    ``(num_layers * directions, batch, hidden_size)``, the batch taken from dim 0 or 1 as ``batch_first`` says."""
    short = module.qualname.rsplit(".", 1)[-1]
    if short not in ("LSTM", "GRU", "RNN") or module.has_arg("proj_size") or x.shape is None or len(x.shape) != 3:
        return None
    hidden, count = module.arg("hidden_size"), module.arg("num_layers", 1)
    batch_first, bidirectional = module.arg("batch_first", False), module.arg("bidirectional", False)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (hidden, count)):
        return None
    if not isinstance(batch_first, bool) or not isinstance(bidirectional, bool):
        return None
    batch = x.shape[0 if batch_first else 1]
    if batch is None:
        return None
    expected = (count * (2 if bidirectional else 1), batch, hidden)
    states = state.items if short == "LSTM" and isinstance(state, TupleValue) else (state,)
    for given in states:
        if not isinstance(given, TensorValue) or given.shape is None or None in given.shape:
            continue
        if given.shape == expected:
            continue
        message = (
            f"`{short}` 的初始隐状态应是 {_size(expected)}（num_layers×方向数, batch, hidden_size），"
            f"实际是 {_size(given.shape)}"
        )
        swapped = x.shape[1 if batch_first else 0]
        if given.shape == (expected[0], swapped, hidden):
            layout = "(batch, 时间, 特征)" if batch_first else "(时间, batch, 特征)"
            fix = "去掉 batch_first=True" if batch_first else "构造时加 batch_first=True"
            message += f"：输入按 {layout} 读，batch 是 {batch}；若输入的第一维才是 batch，{fix}"
        return message
    return None


def fresh_strides(dims: tuple | None) -> dict:
    """The strides of a newly allocated tensor of ``dims``, as the fields that hold them (ints when every dim is
    known, products of named sizes when some are named, none otherwise)."""
    if dims is None:
        return {}
    if shapes.known(dims):
        return {"strides": shapes.contiguous_strides(dims)}
    if shapes.sized(dims):
        return {"sym_strides": shapes.contiguous_named(dims)}
    return {}


def _conv_output(module: ModuleValue, x: TensorValue, short: str, base: dict) -> Value:
    spatial = 1 if short == "Conv1d" else 2
    out_channels = module.arg("out_channels")
    if not isinstance(out_channels, int):
        out_channels = None
    kernel = _per_dim(module, "kernel_size", 1, spatial)
    stride = _per_dim(module, "stride", 1, spatial)
    dilation = _per_dim(module, "dilation", 1, spatial)
    padding_arg = module.arg("padding")
    if _unknown(module, "padding"):
        kernel = None  # padding passed but not known: neither are the output's sizes
    sizes = x.trailing(spatial)
    out_sizes: list[Any] = [None] * spatial
    if padding_arg == "same":
        out_sizes = list(sizes) if sizes is not None else out_sizes
    elif kernel and stride and dilation and sizes is not None:
        padding = (
            (0,) * spatial
            if padding_arg in (None, "valid")
            else (shapes.pair(padding_arg, 0) if spatial == 2 else _one(padding_arg, 0))
        )
        if padding is not None:
            out_sizes = [
                shapes.conv_output(sizes[i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(spatial)
            ]
    tail = (out_channels, *out_sizes)
    if x.shape is not None and len(x.shape) in (spatial + 1, spatial + 2):
        return TensorValue(shape=x.dims[: -(spatial + 1)] + tail, provenance=LOGITS, **base)  # type: ignore[index]
    return TensorValue(tail=tail, provenance=LOGITS, **base)


def _transposed_conv_output(module: ModuleValue, x: TensorValue, short: str, base: dict) -> Value:
    """``ConvTranspose``: out = (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1."""
    spatial = 1 if short == "ConvTranspose1d" else 2
    out_channels = module.arg("out_channels")
    out_channels = out_channels if isinstance(out_channels, int) else None

    kernel, stride = _per_dim(module, "kernel_size", 1, spatial), _per_dim(module, "stride", 1, spatial)
    padding, extra = _per_dim(module, "padding", 0, spatial), _per_dim(module, "output_padding", 0, spatial)
    dilation = _per_dim(module, "dilation", 1, spatial)
    sizes = x.trailing(spatial)
    out_sizes: list[Any] = [None] * spatial
    if kernel and stride and padding and extra and dilation and sizes is not None:
        out_sizes = [
            (sizes[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + extra[i] + 1
            if sizes[i] is not None
            else None
            for i in range(spatial)
        ]
    tail = (out_channels, *out_sizes)
    if x.shape is not None and len(x.shape) in (spatial + 1, spatial + 2):
        return TensorValue(shape=x.dims[: -(spatial + 1)] + tail, provenance=LOGITS, **base)  # type: ignore[index]
    return TensorValue(tail=tail, provenance=LOGITS, **base)


def _pool_output(module: ModuleValue, x: TensorValue, base: dict) -> Value:
    kernel = _per_dim(module, "kernel_size", 1, 2) if module.has_arg("kernel_size") else None
    stride = kernel if not module.has_arg("stride") else _per_dim(module, "stride", 1, 2)
    padding = _per_dim(module, "padding", 0, 2)
    dilation = _per_dim(module, "dilation", 1, 2)
    trailing = x.trailing(3)
    if not (kernel and stride and padding and dilation) or trailing is None or module.arg("ceil_mode"):
        return None
    sizes = [shapes.conv_output(trailing[1 + i], kernel[i], stride[i], padding[i], dilation[i]) for i in range(2)]
    tail = (trailing[0], *sizes)
    if x.shape is not None:
        return TensorValue(shape=x.dims[:-3] + tail, **base)  # type: ignore[index]
    return TensorValue(tail=tail, **base)


def _pool1d_output(module: ModuleValue, x: TensorValue, base: dict) -> Value:
    """``MaxPool1d`` / ``AvgPool1d`` on ``(N, C, L)`` or ``(C, L)``."""
    kernel = _per_dim(module, "kernel_size", 1, 1) if module.has_arg("kernel_size") else None
    stride = kernel if not module.has_arg("stride") else _per_dim(module, "stride", 1, 1)
    padding, dilation = _per_dim(module, "padding", 0, 1), _per_dim(module, "dilation", 1, 1)
    trailing = x.trailing(2)
    if not (kernel and stride and padding and dilation) or trailing is None or module.arg("ceil_mode"):
        return None
    if x.shape is not None and len(x.shape) not in (2, 3):
        return None
    tail = (trailing[0], shapes.conv_output(trailing[1], kernel[0], stride[0], padding[0], dilation[0]))
    if x.shape is not None:
        return TensorValue(shape=(*x.dims[:-2], *tail), **base)  # type: ignore[index]
    return TensorValue(tail=tail, **base)


def _unknown(module: ModuleValue, name: str) -> bool:
    """The constructor call passes ``name``, but not as a literal the checker can read."""
    return module.has_arg(name) and module.arg(name) is None


def _per_dim(module: ModuleValue, name: str, default: int, spatial: int) -> tuple[int, ...] | None:
    """A size argument (an int, or one per spatial dim) as one int per dim: ``default`` when the call does not
    pass it, None when it passes something not literal (``nn.Conv2d(c, c, k)`` with ``k`` unknown)."""
    if _unknown(module, name):
        return None
    value = module.arg(name)
    return shapes.pair(value, default) if spatial == 2 else _one(value, default)


def _one(value: Any, default: int = 1) -> tuple[int] | None:
    if value is None:
        return (default,)
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, tuple) and len(value) == 1 and isinstance(value[0], int):
        return value  # type: ignore[return-value]
    return None


def _size(shape: Any) -> str:
    return shapes.fmt(shape)


def input_problem(module: ModuleValue, x: TensorValue) -> tuple[str, str] | None:
    """Why ``x`` provably cannot go into ``module``: ``(kind, Chinese message)``, or None.

    ``kind`` says which rule owns the problem: ``linear``, ``conv``, ``norm`` or ``sequence``. One place for these
    checks, whether the layer is called directly or chained in ``nn.Sequential``.
    """
    short = module.qualname.rsplit(".", 1)[-1]
    shown = (
        _size(x.shape)
        if x.shape is not None
        else ("(..., " + ", ".join("?" if d is None else str(d) for d in x.tail or ()) + ")")
    )
    if short == "Linear":
        expected, last = module.arg("in_features"), x.trailing(1)
        if isinstance(expected, int) and last and last[0] is not None and last[0] != expected:
            return "linear", f"`Linear` 的 in_features 是 {expected}，但输入的最后一维是 {last[0]}（输入形状 {shown}）"
        return None
    if short in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"):
        spatial = int(short[-2])
        expected = module.arg("in_channels")
        if x.shape is not None and len(x.shape) not in (spatial + 1, spatial + 2):
            return "conv", f"`{short}` 需要 {spatial + 1} 维或 {spatial + 2} 维输入，实际输入形状是 {shown}"
        channels = x.trailing(spatial + 1)
        if isinstance(expected, int) and channels and channels[0] is not None and channels[0] != expected:
            return "conv", f"`{short}` 的 in_channels 是 {expected}，但输入有 {channels[0]} 个通道（输入形状 {shown}）"
        return None
    if short in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d"):
        expected = module.arg("num_features")
        ranks = {"BatchNorm1d": (2, 3), "BatchNorm2d": (4,), "BatchNorm3d": (5,)}[short]
        if x.shape is not None and len(x.shape) not in ranks:
            wanted = " 或 ".join(f"{r} 维" for r in ranks)
            return "norm", f"`{short}` 需要 {wanted}输入，实际输入形状是 {shown}"
        if x.shape is not None:
            channels: Any = x.shape[1]
        elif short != "BatchNorm1d" and x.trailing(ranks[0] - 1):
            channels = x.trailing(ranks[0] - 1)[0]  # type: ignore[index]
        else:
            channels = None
        if isinstance(expected, int) and channels is not None and channels != expected:
            return "norm", f"`{short}` 的 num_features 是 {expected}，但输入有 {channels} 个通道（输入形状 {shown}）"
        return None
    if short == "LayerNorm":
        normalized = module.arg("normalized_shape")
        expected_tail = (normalized,) if isinstance(normalized, int) else normalized
        if not isinstance(expected_tail, tuple) or not all(isinstance(d, int) for d in expected_tail):
            return None
        actual = x.trailing(len(expected_tail))
        if actual and all(d is not None for d in actual) and tuple(actual) != expected_tail:
            return "norm", (
                f"`LayerNorm` 归一化最后 {len(expected_tail)} 维，要求它们是 {_size(expected_tail)}，"
                f"但输入的最后几维是 {_size(tuple(actual))}"
            )
        return None
    if short == "GroupNorm":
        expected = module.arg("num_channels")
        channels = x.shape[1] if x.shape is not None and len(x.shape) >= 2 else None
        if isinstance(expected, int) and channels is not None and channels != expected:
            return "norm", f"`GroupNorm` 的 num_channels 是 {expected}，但输入有 {channels} 个通道（输入形状 {shown}）"
        return None
    if short in ("LSTM", "GRU", "RNN"):
        expected, last = module.arg("input_size"), x.trailing(1)
        if isinstance(expected, int) and last and last[0] is not None and last[0] != expected:
            return (
                "sequence",
                f"`{short}` 的 input_size 是 {expected}，但输入的最后一维是 {last[0]}（输入形状 {shown}）",
            )
        return None
    if short == "MultiheadAttention":
        expected, last = module.arg("embed_dim"), x.trailing(1)
        if isinstance(expected, int) and last and last[0] is not None and last[0] != expected:
            return "sequence", f"`MultiheadAttention` 的 embed_dim 是 {expected}，但 query 的最后一维是 {last[0]}"
        return None
    return None
