"""A partial index of a file just opened answers what the block around the cursor proves, never more."""

from __future__ import annotations

import pytest

from torchls.core.first_look import partial_index
from torchls.core.names import ModuleIndex, Value
from torchls.core.parsing import parse_tolerant
from torchls.core.text import Position, SourceText

SOURCE = '''\
"""A model file.

from this docstring import nothing
"""
import torch
import torch.nn as nn
from torch.nn import (
    functional as F,
    init,
)

LAYERS = 3
F2 = F


def make(d):
    return nn.Linear(d, d)


@torch.no_grad()
def 评估(model, x):
    说明 = "装饰器 🎀"; return model(x).softmax(-1)


class 块(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.extra = make(d)

    def forward(self, x):
        说明 = "前向 ➡️"; h = self.fc(x)
        return F.relu(h) + self.extra(x)


def 另一个():
    nn = None
    说明 = "遮蔽 🙈"; return nn


model = nn.Sequential(
    nn.Linear(2, 2),
    说明 := nn.ReLU(),
)
块(4)(torch.randn(2, 4))
'''


def _at(text: str, marker: str, symbol: str) -> Position:
    lines = text.splitlines()
    line = next(i for i, content in enumerate(lines) if marker in content)
    return Position(line, lines[line].index(symbol, lines[line].index(marker)) + 1)


def _full(text: str) -> ModuleIndex:
    return ModuleIndex(parse_tolerant(text), SourceText(text))


@pytest.mark.parametrize(
    ("marker", "symbol", "expected"),
    [
        ("前向", "self.fc", "torch.nn.Linear"),  # the class's __init__ is in the block
        ("return F.relu", "relu", "torch.nn.functional.relu"),  # an import over several lines
        ("装饰器", "softmax", None),  # model's value comes from calls the partial index does not read
        ("@torch.no_grad", "no_grad", "torch.no_grad"),  # a decorator: its block is the function below it
        ("nn.Linear(2, 2)", "Linear", "torch.nn.Linear"),  # a module-level statement over several lines
        ("遮蔽", "nn", None),  # bound again in the function
    ],
)
def test_the_block_around_the_cursor_answers(marker, symbol, expected):
    position = _at(SOURCE, marker, symbol.split(".")[-1])
    index, blanked = partial_index(SOURCE, position.line)
    assert index.partial and not blanked
    target = index.target_at(position)
    assert (target.qualname if target is not None else None) == expected


def test_a_partial_index_proves_nothing_the_full_index_does_not():
    lines = SOURCE.splitlines()
    for line, content in enumerate(lines):
        for column in range(len(content)):
            position = Position(line, column)
            partial = partial_index(SOURCE, line)[0].target_at(position)
            if partial is not None and partial.qualname is not None:
                full = _full(SOURCE).target_at(position)
                assert full is not None and full.qualname == partial.qualname, (line, column, content)


def test_parameters_are_not_read_from_calls_elsewhere():
    position = _at(SOURCE, "前向", "h = ")
    assert _full(SOURCE).value_at("x", position) == Value("torch.Tensor")  # 块(4)(torch.randn(2, 4))
    assert partial_index(SOURCE, position.line)[0].value_at("x", position) is None


def test_a_module_level_binding_hides_the_import():
    text = "import torch.nn.functional as F\nF = None\n\ndef f(x):\n    return F.relu(x)\n"
    index, _ = partial_index(text, 4)
    target = index.target_at(Position(4, text.splitlines()[4].index("relu")))
    assert target is not None and target.qualname is None


def test_a_class_keeps_only_its_init_and_the_method_around_the_cursor():
    from torchls.core.first_look import _block_around, _class_members_kept

    lines = SOURCE.splitlines()
    position = _at(SOURCE, "前向", "self.fc")
    start, end = _block_around(lines, position.line)
    kept = [
        lines[n]
        for first, last in _class_members_kept(lines, start, end, position.line)
        for n in range(first, last + 1)
    ]
    assert any("def __init__" in line for line in kept) and any("def forward" in line for line in kept)
    text = SOURCE.replace(
        "    def forward(self, x):", "    def other(self):\n        return 1\n\n    def forward(self, x):"
    )
    lines = text.splitlines()
    position = _at(text, "前向", "self.fc")
    start, end = _block_around(lines, position.line)
    kept = [
        lines[n]
        for first, last in _class_members_kept(lines, start, end, position.line)
        for n in range(first, last + 1)
    ]
    assert not any("def other" in line for line in kept)


def test_a_class_header_keeps_a_body_to_parse():
    position = _at(SOURCE, "class 块(nn.Module)", "Module")
    index, blanked = partial_index(SOURCE, position.line, with_init=False)
    assert not blanked and index.target_at(position).qualname == "torch.nn.Module"


def test_hovers_in_two_methods_of_one_class_do_not_share_a_partial_index():
    """The session keeps partial indexes by the lines they hold: another method of the same class needs its own."""
    from torchls.session import Session

    text = SOURCE.replace(
        "    def forward(self, x):", "    def other(self, y):\n        return F.gelu(y)\n\n    def forward(self, x):"
    )
    session = Session()
    try:
        for marker, symbol, expected in (
            ("return F.gelu", "gelu", "torch.nn.functional.gelu"),
            ("return F.relu", "relu", "torch.nn.functional.relu"),
        ):
            position = _at(text, marker, symbol)
            index, _ = session.partial_index("file:///t.py", text, 1, position.line, with_init=False)
            assert index.target_at(position).qualname == expected
    finally:
        session.close()


def test_without_init_a_partial_index_does_not_name_the_attributes_it_cannot_see():
    """``self.fc`` is bound in ``__init__`` and ``self.extra`` could be a method: a partial index that left them
    out must not call them ``torch.nn.Module.fc`` (hover would show a card for an API that does not exist)."""
    text = SOURCE.replace("        self.extra = make(d)\n", "").replace(
        "    def forward(self, x):", "    def extra(self, x):\n        return x\n\n    def forward(self, x):"
    )
    for symbol in ("self.fc", "self.extra"):
        position = _at(text, "前向" if symbol == "self.fc" else "return F.relu", symbol.split(".")[-1])
        for with_init in (False, True):
            target = partial_index(text, position.line, with_init)[0].target_at(position)
            assert target is not None and target.qualname in (None, "torch.nn.Linear"), (symbol, with_init)
    assert _full(text).target_at(_at(text, "return F.relu", "extra")).qualname is None  # the class's own method
