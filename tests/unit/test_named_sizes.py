"""Named sizes (``b, t, d = x.shape``): their arithmetic, the layout check ``view`` needs, checked against torch,
and what the checker and the value hover make of them."""

from __future__ import annotations

import ast
import itertools

import pytest
import torch

from torchls.core import shapes, symbols
from torchls.core.checker import check_source
from torchls.core.symbols import Sym
from torchls.core.text import Position, SourceText
from torchls.core.values_at import FileValues, describe

B = Sym.named("b", 1)
T = Sym.named("t", 2)


def test_products_and_exact_divisions():
    assert str(B * T * 4) == "4*b*t"
    assert symbols.divide(T * 64, 4) == T * 16
    assert symbols.divide(B * T, T) == B
    assert symbols.divide(T * 6, 4) is None  # not exact for every t
    assert symbols.multiply(T, None) is None


def test_comparisons_hold_for_every_binding_or_say_unknown():
    assert symbols.compare(T * 16, 16) == 1  # whenever t >= 2
    assert symbols.compare(T * 16, 64) is None  # t = 4 makes them equal
    assert symbols.compare(B * T, B * T) == 0
    assert symbols.differs_always(B * T * 3, B * T * 6)
    assert not symbols.differs_always(B * T, T * 3)


def _named_layout(shape: tuple[int, ...], order: tuple[int, ...], names: dict[int, Sym]):
    """The dims and strides of ``randn(shape).permute(order)`` with some base dims given names."""
    dims = tuple(names.get(i, d) for i, d in enumerate(shape))
    strides = shapes.contiguous_named(dims)
    return tuple(dims[i] for i in order), tuple(strides[i] for i in order)


CASES = [
    # base shape, permutation, named base dims, new shape as a function of the named sizes
    ((2, 4, 3, 5), (0, 2, 1, 3), {0: B, 2: T}, lambda b, t: (b, t, 20)),  # merge heads after a transpose
    ((2, 4, 3, 5), (0, 2, 1, 3), {0: B, 2: T}, lambda b, t: (b, t, 4, 5, 1)),
    ((2, 4, 3, 5), (0, 2, 1, 3), {0: B}, lambda b, t: (b, 3 * 4 * 5)),
    ((2, 3, 4), (0, 2, 1), {0: B}, lambda b, t: (b, 4, 3)),  # same shape again
    ((2, 6, 4), (0, 2, 1), {1: T}, lambda b, t: (2, 4, t, 1)),
    ((3, 8), (1, 0), {0: T}, lambda b, t: (8 * t,)),  # flatten a transposed matrix
    ((3, 8), (1, 0), {0: T}, lambda b, t: (2, 4, t)),  # split the leading dim
]


@pytest.mark.parametrize("base, order, names, new", CASES)
def test_the_named_layout_check_agrees_with_torch(base, order, names, new):
    dims, strides = _named_layout(base, order, names)
    strides_named, impossible = shapes.view_strides_named(dims, strides, new(B, T))
    # Every binding with names of at least 2: torch must agree with what the named check concluded.
    for b, t in itertools.product((2, 3, 5), (2, 4)):
        concrete = tuple(b if names.get(i) is B else t if names.get(i) is T else d for i, d in enumerate(base))
        tensor = torch.randn(concrete).permute(order)
        try:
            viewed = tensor.view(new(b, t))
        except RuntimeError:
            assert impossible, f"torch refused the view for b={b}, t={t}"
            continue
        assert not impossible, f"torch allowed the view for b={b}, t={t}"
        if strides_named is not None:
            substituted = [d if isinstance(d, int) else _value(d, b, t) for d in strides_named]
            assert tuple(substituted) == viewed.stride()


def _value(size: Sym, b: int, t: int) -> int:
    total = size.coef
    for name, _ in size.atoms:
        total *= {"b": b, "t": t}[name]
    return total


MODEL = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def attend(x, heads=4):
    # 中文注释 🙂 before the code: x is (batch, time, features), whatever the batch
    b, t, d = x.shape
    q = x.view(b, t, heads, d // heads).transpose(1, 2)
    out = (q @ q.transpose(-2, -1)).softmax(-1) @ q
    return out.transpose(1, 2).view(b, t, d)


loader = DataLoader(TensorDataset(torch.randn(100, 10, 64)), batch_size=32)
for (batch,) in loader:
    attend(batch)
"""


def test_merging_heads_with_view_is_found_whatever_the_batch():
    findings = check_source(MODEL, select=["TL104"]).findings
    assert [(f.code, f.span.start.line + 1) for f in findings] == [("TL104", 10)]


def test_the_fixed_program_is_silent():
    fixed = MODEL.replace("out.transpose(1, 2).view(b, t, d)", "out.transpose(1, 2).reshape(b, t, d)")
    assert check_source(fixed).findings == []


def test_hover_shows_the_names_the_code_gives():
    source = SourceText(MODEL)
    values = FileValues(ast.parse(MODEL), source)
    line = MODEL.splitlines().index("    out = (q @ q.transpose(-2, -1)).softmax(-1) @ q")
    found = values.at(Position(line, MODEL.splitlines()[line].index("out")))
    assert found is not None
    assert describe(found, source).startswith("`out`: Tensor (batch, 4, 10, 16)")
