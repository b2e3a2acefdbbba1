"""torch's annotations as a reader should see them, and which literal kinds they can take.

torch's stubs annotate with private aliases (``_int``, ``_size_2_t``, ``_dtype``) because a top-level ``int``
or ``dtype`` is shadowed inside ``torch``; jedi's signature strings keep those names. :data:`TYPE_ALIASES` is the
one table of what each means, written as the installed torch defines it (``tests/unit/test_annotations.py``
checks every entry against ``torch.types``, ``torch.nn.common_types`` and the modules named in it).

:func:`accepts` answers the overload question "can this argument, as written, be this parameter?", only where
the answer is clear: an int literal is not a dtype or a Tensor, ``torch.float16`` is not an int. Anything it
cannot tell (a name it does not know, an annotation it does not read) is accepted.
"""

from __future__ import annotations

import re

from torchls.core.brackets import split_top_level
from torchls.core.calls import ValueKind

# alias -> (what it means, the module that defines it). Type variables (``_T``, ``_P``) are left as they are.
TYPE_ALIASES: dict[str, tuple[str, str]] = {
    # torch/types.py: builtins and torch classes under private names.
    "_bool": ("bool", "torch.types"),
    "_bytes": ("bytes", "torch.types"),
    "_complex": ("complex", "torch.types"),
    "_float": ("float", "torch.types"),
    "_int": ("int", "torch.types"),
    "_str": ("str", "torch.types"),
    "_device": ("torch.device", "torch.types"),
    "_dtype": ("torch.dtype", "torch.types"),
    "_layout": ("torch.layout", "torch.types"),
    "_qscheme": ("torch.qscheme", "torch.types"),
    "_size": ("torch.Size | list[int] | tuple[int, ...]", "torch.types"),
    "_symsize": ("torch.Size | Sequence[int | SymInt]", "torch.types"),
    "_dispatchkey": ("str | torch.DispatchKey", "torch.types"),
    "_TensorOrTensors": ("Tensor | Sequence[Tensor]", "torch.types"),
    "_TensorOrOptionalTensors": ("Tensor | Sequence[Tensor | None]", "torch.types"),
    "_TensorOrTensorsOrGradEdge": (
        "Tensor | Sequence[Tensor] | GradientEdge | Sequence[GradientEdge]",
        "torch.types",
    ),
    # torch/nn/common_types.py: a scalar or a tuple of it.
    "_size_any_t": ("int | tuple[int, ...]", "torch.nn.common_types"),
    "_size_1_t": ("int | tuple[int]", "torch.nn.common_types"),
    "_size_2_t": ("int | tuple[int, int]", "torch.nn.common_types"),
    "_size_3_t": ("int | tuple[int, int, int]", "torch.nn.common_types"),
    "_size_4_t": ("int | tuple[int, int, int, int]", "torch.nn.common_types"),
    "_size_5_t": ("int | tuple[int, int, int, int, int]", "torch.nn.common_types"),
    "_size_6_t": ("int | tuple[int, int, int, int, int, int]", "torch.nn.common_types"),
    "_size_any_opt_t": ("int | None | tuple[int | None, ...]", "torch.nn.common_types"),
    "_size_2_opt_t": ("int | None | tuple[int | None, int | None]", "torch.nn.common_types"),
    "_size_3_opt_t": ("int | None | tuple[int | None, int | None, int | None]", "torch.nn.common_types"),
    "_ratio_2_t": ("float | tuple[float, float]", "torch.nn.common_types"),
    "_ratio_3_t": ("float | tuple[float, float, float]", "torch.nn.common_types"),
    "_ratio_any_t": ("float | tuple[float, ...]", "torch.nn.common_types"),
    "_tensor_list_t": ("Tensor | tuple[Tensor, ...]", "torch.nn.common_types"),
    "_maybe_indices_t": ("Tensor | tuple[Tensor, Tensor]", "torch.nn.common_types"),
    # Private aliases of single modules that jedi shows in signatures of common APIs.
    "_shape_t": ("int | list[int] | torch.Size", "torch.nn.modules.normalization"),
    "_tensor_or_tensors": ("Tensor | Iterable[Tensor]", "torch.nn.utils.clip_grad"),
    "_FanMode": ('Literal["fan_in", "fan_out"]', "torch.nn.init"),
    "_NonlinearityType": (
        'Literal["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", '
        '"conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]',
        "torch.nn.init",
    ),
    "_worker_init_fn_t": ("Callable[[int], None]", "torch.utils.data.dataloader"),
    # torch/__init__.py imports these from typing under private names.
    "_Any": ("Any", "torch"),
    "_Callable": ("Callable", "torch"),
    "_TypeIs": ("TypeIs", "torch"),
}

# The values of ``torch.dtype``, ``torch.layout`` and ``torch.memory_format`` that ``torch`` exports: an argument
# written ``torch.float16`` is a dtype (checked against the installed torch, like the aliases).
TORCH_DTYPES = frozenset(
    "bfloat16 bit bits16 bits1x8 bits2x4 bits4x2 bits8 bool cdouble cfloat chalf complex128 complex32 complex64 "
    "double float float16 float32 float4_e2m1fn_x2 float64 float8_e4m3fn float8_e4m3fnuz float8_e5m2 "
    "float8_e5m2fnuz float8_e8m0fnu half int int1 int16 int2 int3 int32 int4 int5 int6 int64 int7 int8 long qint32 "
    "qint8 quint2x4 quint4x2 quint8 short uint1 uint16 uint2 uint3 uint32 uint4 uint5 uint6 uint64 uint7 "
    "uint8".split()
)
TORCH_LAYOUTS = frozenset("jagged sparse_bsc sparse_bsr sparse_coo sparse_csc sparse_csr strided _mkldnn".split())
TORCH_MEMORY_FORMATS = frozenset(
    "channels_last channels_last_3d contiguous_format legacy_contiguous_format preserve_format".split()
)


def torch_constant_kind(qualname: str) -> ValueKind | None:
    """``torch.float16`` -> DTYPE, ``torch.strided`` -> LAYOUT, ``torch.channels_last`` -> MEMORY_FORMAT."""
    module, _, name = qualname.rpartition(".")
    if module != "torch":
        return None
    if name in TORCH_DTYPES:
        return ValueKind.DTYPE
    if name in TORCH_LAYOUTS:
        return ValueKind.LAYOUT
    if name in TORCH_MEMORY_FORMATS:
        return ValueKind.MEMORY_FORMAT
    return None


_ALIAS = re.compile(r"(?<![\w.])(?:(_\w+)(?!\w)|builtins\.(?=[A-Za-z_]))")
_STRING_OR_SPACE = re.compile(r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')|\s+")


def readable(annotation: str) -> str:
    """``_size_2_t | None`` -> ``int | tuple[int, int] | None``; runs of white space (jedi keeps the stub's line
    breaks) become one space, string literals untouched."""
    flat = _STRING_OR_SPACE.sub(lambda match: match.group(1) or " ", annotation).strip()
    return _ALIAS.sub(_expand, flat)


def _expand(match: re.Match[str]) -> str:
    name = match.group(1)
    if name is None:
        return ""  # ``builtins.bool`` in torch.compile's signature, where ``bool`` is shadowed
    alias = TYPE_ALIASES.get(name)
    return alias[0] if alias is not None else name


# What each literal kind may be passed as: the annotations' base names (without ``torch.`` and generics).
_INTS = {"int", "SymInt", "IntLikeType", "SupportsIndex", "SupportsInt"}
_FLOATS = {"float", "SymFloat", "FloatLikeType"}
_NUMBERS = {"Number", "Scalar", "complex"}
_SEQUENCES = {"Sequence", "list", "tuple", "Size", "Iterable", "Collection", "List", "Tuple", "MutableSequence"}
_ACCEPTED_BY: dict[ValueKind, set[str]] = {
    ValueKind.INT: _INTS | _FLOATS | _NUMBERS | {"bool", "BoolLikeType", "device", "Device", "DeviceLikeType"},
    ValueKind.FLOAT: _FLOATS | _NUMBERS,
    ValueKind.COMPLEX: {"complex", "Number", "Scalar"},
    ValueKind.BOOL: {"bool", "SymBool", "BoolLikeType"} | _INTS | _FLOATS | _NUMBERS,
    ValueKind.STR: {"str", "Literal", "device", "Device", "DeviceLikeType", "PathLike", "FileLike", "DispatchKey"},
    ValueKind.BYTES: {"bytes", "FileLike"},
    ValueKind.NONE: {"None", "NoneType", "Optional"},
    ValueKind.SEQUENCE: _SEQUENCES,
    ValueKind.DTYPE: {"dtype"},
    ValueKind.TENSOR: {"Tensor", "TensorBase", "Parameter"} | _SEQUENCES,  # a tensor iterates like a sequence
    ValueKind.LAYOUT: {"layout"},
    ValueKind.MEMORY_FORMAT: {"memory_format"},
}
# Base names whose values are known: a kind they do not list is refused. Any other name accepts anything.
_KNOWN = set().union(*_ACCEPTED_BY.values())
_WORD = re.compile(r"[A-Za-z_][\w.]*")


def accepts(annotation: str, kind: ValueKind) -> bool:
    """Whether an argument of ``kind`` can be passed to a parameter annotated ``annotation`` (readable form)."""
    accepted = _ACCEPTED_BY.get(kind)
    if accepted is None or not annotation.strip():
        return True  # a name we cannot place, an expression, or no annotation: no reason to refuse
    for member in _union_members(annotation):
        base = _base_name(member)
        if base is None or base not in _KNOWN:
            return True  # Any, a TypeVar, a class we do not know: cannot say no
        if base in accepted:
            return True
        if base == "Optional" and accepts(member[member.index("[") + 1 : -1], kind):
            return True
        if base == "Literal" and not any(quote in member for quote in "'\""):
            return True  # ``Literal[1, 2]``: not strings, and not read further
    return False


def _union_members(annotation: str) -> list[str]:
    """The top-level members of ``A | B[C | D]`` and of ``Union[A, B]``."""
    text = annotation.strip()
    if text.startswith("Union[") and text.endswith("]"):
        return [piece for part in split_top_level(text[6:-1], ",") for piece in _union_members(part)]
    return [part.strip() for part in split_top_level(text, "|")]


def _base_name(member: str) -> str | None:
    """``torch.dtype`` -> ``dtype``, ``Sequence[int]`` -> ``Sequence``; None for what is not a name."""
    match = _WORD.match(member)
    if match is None:
        return None
    return match.group(0).rsplit(".", 1)[-1]
