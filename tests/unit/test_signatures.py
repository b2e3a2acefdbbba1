"""Counting and choosing in signature help (:mod:`torchls.core.overloads`), on jedi's own text of torch's
signatures: the active parameter, the overload, and the rebuilt label with its parameter offsets.

The signature texts below are what jedi 0.19 returns for torch 2.13 (``Name.get_signatures()[i].to_string()``);
the end-to-end tests in ``tests/lsp/test_signature_help.py`` ask the real jedi.
"""

from __future__ import annotations

import pytest

from torchls.core.calls import Argument, ValueKind, call_context
from torchls.core.overloads import ParameterKind, Signature, active_parameter, choose_overload, parse_signature
from torchls.core.text import Position, column_to_units

VIEW = [
    "view(self, dtype: _dtype) -> Tensor",
    "view(self, size: Sequence[_int | SymInt]) -> Tensor",
    "view(self, *size: _int | SymInt) -> Tensor",
]
MAX = [
    "max(input: Tensor, *, out: Tensor | None=None) -> Tensor",
    "max(input: Tensor, other: Tensor, *, out: Tensor | None=None) -> Tensor",
    "max(input: Tensor, dim: _int, keepdim: _bool=False, *, "
    "out: Tensor | tuple[Tensor, ...] | list[Tensor] | None=None) -> torch.return_types.max",
]
MAX_IN_THE_HANDBOOK = "torch.max(input, dim, keepdim=False, *, out=None)"
INTERPOLATE = (
    "interpolate(input: Tensor, size: int | Sequence[int] | None=..., "
    "scale_factor: float | Sequence[float] | None=..., "
    "mode: str=..., align_corners: bool | None=..., recompute_scale_factor: bool | None=..., antialias: bool=...)"
    " -> Tensor"
)
CONV2D = (
    "Conv2d(in_channels: int, out_channels: int, kernel_size: _size_2_t, stride: _size_2_t=1, "
    'padding: str | _size_2_t=0, dilation: _size_2_t=1, groups: int=1, bias: bool=True, padding_mode: Literal["zeros", '
    '"reflect", "replicate", "circular"]="zeros", device=None, dtype=None)'
)
SOFTMAX = "softmax(self, dim: _int, dtype: _dtype | None=None) -> Tensor"
RANDN = (
    "randn(*size: _int | SymInt, generator: Generator | None, names: Sequence[str | EllipsisType | None] | None, "
    "dtype: _dtype | None=None, layout: _layout | None=None) -> Tensor"
)
PAD = 'pad(input: Tensor, pad: Sequence[int], mode: str="constant", value: float | None=None) -> Tensor'

CURSOR = "‸"


def call(marked: str):
    before, _ = marked.split(CURSOR)
    lines = before.split("\n")
    found = call_context(marked.replace(CURSOR, "").split("\n"), Position(len(lines) - 1, len(lines[-1])))
    assert found is not None, marked
    return found


def active_name(signature: Signature, marked: str) -> str | None:
    index = active_parameter(signature, call(marked))
    return signature.parameters[index].name if index is not None else None


def chosen(raws: list[str], marked: str, public: str, bound: bool = False, preferred: str | None = None) -> Signature:
    signatures = [parse_signature(raw, public, bound) for raw in raws]
    usual = parse_signature(preferred, bound=True) if preferred else None
    return signatures[choose_overload(signatures, call(marked), preferred=usual)]


# ------------------------------------------------------------------------------------------ the label


def test_a_bound_method_loses_self_and_the_label_is_readable():
    signature = parse_signature(SOFTMAX, "torch.Tensor.softmax", bound=True)
    assert signature.label == "torch.Tensor.softmax(dim: int, dtype: torch.dtype | None=None) -> Tensor"
    assert [p.name for p in signature.parameters] == ["dim", "dtype"]
    for parameter in signature.parameters:
        assert signature.label[slice(*parameter.span)].startswith(parameter.name)


def test_called_through_the_class_self_is_a_parameter():
    signature = parse_signature(SOFTMAX, "torch.Tensor.softmax", bound=False)
    assert [p.name for p in signature.parameters] == ["self", "dim", "dtype"]
    assert active_name(signature, "torch.Tensor.softmax(x, ‸") == "dim"


def test_markers_are_no_parameters_and_set_the_kinds():
    signature = parse_signature("f(a, /, b, *, c: _int=1, **rest) -> None")
    assert [(p.name, p.kind) for p in signature.parameters] == [
        ("a", ParameterKind.POSITIONAL_ONLY),
        ("b", ParameterKind.POSITIONAL_OR_KEYWORD),
        ("c", ParameterKind.KEYWORD_ONLY),
        ("rest", ParameterKind.VAR_KEYWORD),
    ]
    assert signature.label == "f(a, /, b, *, c: int=1, **rest) -> None"
    assert [signature.label[slice(*p.span)] for p in signature.parameters] == ["a", "b", "c: int=1", "**rest"]


def test_defaults_holding_commas_and_parentheses_do_not_split_parameters():
    signature = parse_signature('join(sep: str=", (", *parts: _str, end: str=")") -> str')
    assert [p.name for p in signature.parameters] == ["sep", "parts", "end"]
    assert [signature.label[slice(*p.span)] for p in signature.parameters] == [
        'sep: str=", ("',
        "*parts: str",
        'end: str=")"',
    ]


def test_conv2d_aliases_are_spelled_out_and_the_offsets_follow():
    signature = parse_signature(CONV2D, "torch.nn.Conv2d")
    assert signature.label.startswith(
        "torch.nn.Conv2d(in_channels: int, out_channels: int, kernel_size: int | tuple[int, int], "
        "stride: int | tuple[int, int]=1, padding: str | int | tuple[int, int]=0"
    )
    pieces = {p.name: signature.label[slice(*p.span)] for p in signature.parameters}
    assert pieces["padding_mode"] == 'padding_mode: Literal["zeros", "reflect", "replicate", "circular"]="zeros"'
    assert pieces["dtype"] == "dtype=None"


def test_offsets_stay_right_in_utf16_after_the_label_is_rewritten():
    """A default with Chinese and an emoji before the parameter, then an alias that changes length after it."""
    signature = parse_signature('f(mode: Literal["最近邻 🎯"]="最近邻 🎯", size: _size_2_t=1, dim: _int=0)', "torch.f")
    units = signature.label.encode("utf-16-le")
    expected_pieces = ['mode: Literal["最近邻 🎯"]="最近邻 🎯"', "size: int | tuple[int, int]=1", "dim: int=0"]
    for parameter, expected in zip(signature.parameters, expected_pieces, strict=True):
        start, end = (column_to_units(signature.label, offset, "utf-16") for offset in parameter.span)
        assert units[2 * start : 2 * end].decode("utf-16-le") == expected


def test_multi_line_annotations_become_one_line():
    signature = parse_signature("export(model: torch.nn.Module\n    | torch.jit.ScriptModule, args: tuple=()) -> None")
    assert signature.label == "export(model: torch.nn.Module | torch.jit.ScriptModule, args: tuple=()) -> None"


# ------------------------------------------------------------------------------------------ the active parameter


@pytest.mark.parametrize(
    ("marked", "expected"),
    [
        ("F.interpolate(‸", "input"),
        ("F.interpolate(x, ‸", "size"),
        ("F.interpolate(x, sz‸", "size"),  # a name before any keyword may be a positional value
        # A keyword already written is skipped: the next is the first parameter not given yet.
        ("F.interpolate(x, scale_factor=2, ‸", "size"),
        ("F.interpolate(x, size=None, scale_factor=2, ‸", "mode"),
        ("F.interpolate(\n    x,  # 特征图 🖼️\n    scale_factor=2,\n    ‸", "size"),
        ("F.interpolate(x, scale_factor=2, mo‸", "mode"),  # after a keyword, a name being typed is one
        ("F.interpolate(x, scale_factor=2, mode=‸", "mode"),
        ("F.interpolate(x, mode='bil‸", "mode"),
        ("F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False, antialias=True, ‸", "size"),
        ("F.interpolate(x, 2, ‸", "scale_factor"),
        ("F.interpolate(F.pad(x, (1, 1)), ‸", "size"),  # the inner call's arguments are its own
        ("F.interpolate(x, size=(32, 32), mode=f'{a, b}', ‸", "scale_factor"),
    ],
)
def test_the_active_parameter_of_interpolate(marked, expected):
    assert active_name(parse_signature(INTERPOLATE, "torch.nn.functional.interpolate"), marked) == expected


def test_conv2d_after_a_keyword_goes_on_to_stride():
    signature = parse_signature(CONV2D, "torch.nn.Conv2d")
    assert active_name(signature, "nn.Conv2d(3, 64, kernel_size=3, ‸") == "stride"
    assert active_name(signature, "nn.Conv2d(3, 64, 3, ‸") == "stride"
    assert active_name(signature, "nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, ‸") == "dilation"
    assert active_name(signature, "nn.Conv2d(in_channels=3, out_channels=8, ‸") == "kernel_size"


def test_star_args_take_every_further_positional_and_keyword_only_parameters_follow():
    randn = parse_signature(RANDN, "torch.randn")
    assert active_name(randn, "torch.randn(‸") == "size"
    assert active_name(randn, "torch.randn(2, 3, 4, ‸") == "size"
    assert active_name(randn, "torch.randn(2, 3, dtype=torch.float16, ‸") == "generator"
    assert active_name(randn, "torch.randn(2, 3, dtype=‸") == "dtype"
    assert active_name(randn, "torch.randn(*shape, ‸") == "size"


def test_keyword_only_after_the_star():
    by_dim = parse_signature(MAX[2], "torch.max")
    assert active_name(by_dim, "torch.max(x, 1, ‸") == "keepdim"
    assert active_name(by_dim, "torch.max(x, 1, True, ‸") == "out"  # no positional place left
    assert active_name(by_dim, "torch.max(x, 1, keepdim=True, ‸") == "out"
    assert active_name(by_dim, "torch.max(x, dim=‸") == "dim"
    assert active_name(by_dim, "torch.max(x, dim‸") == "dim"


def test_a_keyword_the_signature_lacks_goes_to_kwargs_or_nowhere():
    assert active_name(parse_signature("f(a, **options)"), "f(1, colour=‸") == "options"
    assert active_name(parse_signature("f(a, b=1)"), "f(1, colour=‸") is None
    assert active_name(parse_signature("f(a, b=1)"), "f(1, 2, ‸") is None  # nothing is left to give


def test_strings_with_commas_and_parentheses_count_as_one_argument():
    pad = parse_signature(PAD, "torch.nn.functional.pad")
    assert active_name(pad, 'F.pad(x, (1, 1), "con, (st)", ‸') == "value"


# ------------------------------------------------------------------------------------------ the overload


def test_view_after_an_int_is_the_star_size_overload():
    assert chosen(VIEW, "x.view(-1, ‸", "torch.Tensor.view", bound=True).label.startswith("torch.Tensor.view(*size")
    assert chosen(VIEW, "x.view(-1‸", "torch.Tensor.view", bound=True).label.startswith("torch.Tensor.view(*size")


def test_view_with_a_sequence_or_a_dtype():
    sequence = chosen(VIEW, "x.view((2, 3)‸", "torch.Tensor.view", bound=True)
    assert sequence.label.startswith("torch.Tensor.view(size: Sequence")
    signatures = [parse_signature(raw, "torch.Tensor.view", True) for raw in VIEW]
    dtype = call("x.view(torch.int32‸")
    # ``torch.int32`` is a dtype once the file's imports say ``torch`` is torch: the caller's kind_of tells.
    picked = choose_overload(signatures, dtype, lambda a: ValueKind.DTYPE if a.name == "torch.int32" else a.kind)
    assert signatures[picked].label.startswith("torch.Tensor.view(dtype")


def test_view_with_nothing_written_prefers_the_handbooks_form():
    usual = chosen(VIEW, "x.view(‸", "torch.Tensor.view", bound=True, preferred="torch.Tensor.view(*shape)")
    assert usual.label.startswith("torch.Tensor.view(*size")


def test_torch_max_second_argument():
    # Two overloads take a second positional argument; the handbook's usual form is the one with ``dim``.
    by_dim = chosen(MAX, "torch.max(output, ‸", "torch.max", preferred=MAX_IN_THE_HANDBOOK)
    assert by_dim.label.startswith("torch.max(input: Tensor, dim: int")
    # Without it, both fit and jedi's order decides: this is what the handbook's form is for.
    assert chosen(MAX, "torch.max(output, ‸", "torch.max").label.startswith("torch.max(input: Tensor, other")
    # What is written decides before the handbook does.
    assert chosen(MAX, "torch.max(output, 1‸", "torch.max").label.startswith("torch.max(input: Tensor, dim")
    assert chosen(MAX, "torch.max(output, 1, ‸", "torch.max").label.startswith("torch.max(input: Tensor, dim")
    keepdim = chosen(MAX, "torch.max(output, keepdim=True, ‸", "torch.max", preferred=MAX_IN_THE_HANDBOOK)
    assert keepdim.label.startswith("torch.max(input: Tensor, dim")
    other = chosen(MAX, "torch.max(output, other=y, ‸", "torch.max", preferred=MAX_IN_THE_HANDBOOK)
    assert other.label.startswith("torch.max(input: Tensor, other")
    # Another keyword is coming: an overload that still has one to give beats the one that has none left.
    more = chosen(MAX, "torch.max(output, out=y, ‸", "torch.max", preferred=MAX_IN_THE_HANDBOOK)
    assert more.label.startswith("torch.max(input: Tensor, dim")


def test_a_name_that_is_a_tensor_picks_the_tensor_overload():
    signatures = [parse_signature(raw, "torch.max") for raw in MAX]
    picked = choose_overload(
        signatures,
        call("torch.max(output, other_output‸"),
        lambda a: ValueKind.TENSOR if a.kind is ValueKind.NAME else a.kind,
        preferred=parse_signature(MAX_IN_THE_HANDBOOK, bound=True),
    )
    assert signatures[picked].label.startswith("torch.max(input: Tensor, other")


def test_when_nothing_fits_the_first_overload_is_shown():
    signatures = [parse_signature(raw, "torch.max") for raw in MAX]
    assert choose_overload(signatures, call("torch.max(x, 1, 2, 3, 4, ‸")) in (0, 1, 2)
    assert choose_overload([], call("torch.max(‸")) == 0


def test_an_argument_kind_reader_sees_every_argument():
    seen: list[Argument] = []

    def kind_of(argument: Argument) -> ValueKind:
        seen.append(argument)
        return argument.kind

    signatures = [parse_signature(raw, "torch.Tensor.view", True) for raw in VIEW]
    choose_overload(signatures, call("x.view(a, b, c‸"), kind_of)
    assert {argument.name for argument in seen} == {"a", "b", "c"}
