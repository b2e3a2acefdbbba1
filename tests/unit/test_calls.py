"""The call context under the cursor, read from the tokens of half-typed code."""

from __future__ import annotations

import pytest

from torchls.core.calls import attribute_context, call_context, dotted_partial
from torchls.core.text import Position

CURSOR = "‸"


def context(marked: str):
    before, _ = marked.split(CURSOR)
    lines = before.split("\n")
    full = marked.replace(CURSOR, "").split("\n")
    return call_context(full, Position(len(lines) - 1, len(lines[-1])))


def test_positional_argument_being_typed():
    call = context('说明 = "🎯"; conv = nn.Conv2d(3, 64, ‸)')
    assert call.callee == "nn.Conv2d"
    assert (call.argument_index, call.positional_count, call.keyword, call.typing_name) == (2, 2, None, None)
    assert call.callee_end == Position(0, len('说明 = "🎯"; conv = nn.Conv2d'))


def test_name_being_typed_may_become_a_keyword():
    call = context("nn.Conv2d(3, 64, ker‸")
    assert call.typing_name == "ker" and call.keyword is None


def test_keyword_value_and_used_keywords():
    call = context("nn.Conv2d(3, 8, kernel_size=3, padding_mode=‸")
    assert call.keyword == "padding_mode"
    assert call.used_keywords == frozenset({"kernel_size"})
    assert call.positional_count == 2 and call.argument_index == 3


def test_inside_the_quotes_of_a_value():
    call = context("F.interpolate(x, mode='bil‸")
    assert call.keyword == "mode" and call.in_string and call.string_prefix == "bil"


def test_a_call_across_lines_with_comments():
    call = context("loss = nn.CrossEntropyLoss(\n    weight=w,  # 权重 ⚖️\n    label_smoothing=0.1,\n    ‸")
    assert call.callee == "nn.CrossEntropyLoss"
    assert call.used_keywords == frozenset({"weight", "label_smoothing"})
    assert call.argument_index == 2 and call.positional_count == 0


def test_the_innermost_open_call_wins_and_closed_ones_are_skipped():
    assert context("torch.cat([x.view(2, 3), y], ‸").callee == "torch.cat"
    inner = context("torch.cat([x.view(2, ‸")
    assert inner.callee == "x.view" and inner.argument_index == 1


@pytest.mark.parametrize(
    "marked",
    [
        "y = x‸",
        "foo()(‸",
        "(a + b)(‸",
        "items = [1, ‸",
        "print(x)‸",
        "if (‸",
        "class Net(nn.‸",
        "def forward(self, x: torch.‸",
    ],
)
def test_outside_a_named_call_there_is_no_context(marked):
    assert context(marked) is None


def test_attribute_context_reads_unicode_names():
    assert attribute_context('说明 = "🎲"; y = 神经网络.Con') == ("神经网络", "Con")
    assert attribute_context("y = torch.nn.") == ("torch.nn", "")
    assert attribute_context("y = f(x).view") is None
    assert attribute_context("# torch.") is None
    assert attribute_context('s = "torch.') is None


def test_dotted_partial_after_any_expression():
    assert dotted_partial("y = f(x).me") == "me"
    assert dotted_partial("batch[0].") == ""
    assert dotted_partial("y = 1.") is None
    assert dotted_partial("# f(x).") is None


def _statement_start(text: str, line: int) -> int | None:
    from torchls.core.names import ModuleIndex
    from torchls.core.parsing import parse_tolerant
    from torchls.core.text import SourceText

    return ModuleIndex(parse_tolerant(text), SourceText(text)).statement_line_before(line)


def test_a_docstring_before_the_call_does_not_confuse_the_tokens():
    """Forty lines back may be the middle of a docstring; reading from a statement start never is."""
    body = "\n".join(f"    第 {n} 行说明 'quoted' (" for n in range(45))
    text = f'import torch\n\ndef f(x):\n    """\n{body}\n    """\n    return torch.cat((x, x), dim=-1)\n'
    lines = text.split("\n")
    line = len(lines) - 2
    column = lines[line].index("dim")
    assert call_context(lines, Position(line, column)) is None  # the 40-line window starts inside the docstring
    call = call_context(lines, Position(line, column), _statement_start(text, line))
    assert call is not None and call.callee == "torch.cat" and call.argument_index == 1


def test_a_window_that_dedents_keeps_its_tokens_and_columns():
    text = "import torch\n\ndef f():\n    return 1\ny = torch.cat(\n    [a, b],\n    "
    lines = text.split("\n")
    position = Position(len(lines) - 1, 4)
    call = call_context(lines, position, 3)  # from ``return 1``: indented, then the window dedents
    assert call.callee == "torch.cat" and call.argument_index == 1
    assert call.callee_end == Position(4, len("y = torch.cat"))
