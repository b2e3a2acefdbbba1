"""The call context under the cursor, read from the tokens of half-typed code."""

from __future__ import annotations

import pytest

from torchls.core.calls import ValueKind, attribute_context, call_context, call_of_callee, dotted_partial
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


# ------------------------------------------------------------------------------------------ the arguments written


def kinds(marked: str) -> list[tuple[str | None, ValueKind]]:
    call = context(marked)
    return [(argument.keyword, argument.kind) for argument in call.arguments]


def test_the_kind_of_each_argument_written():
    marked = (
        "f(-1, 1e-3, 0x1F, 3j, 'a, (b)', b'x', f'{a, b}', True, None, torch.float16, (1, 2), (3), [1], (), "
        "*shape, **options, g(x, y), x[0], ‸"
    )
    assert [kind for _, kind in kinds(marked)] == [
        ValueKind.INT,
        ValueKind.FLOAT,
        ValueKind.INT,
        ValueKind.COMPLEX,
        ValueKind.STR,
        ValueKind.BYTES,
        ValueKind.STR,
        ValueKind.BOOL,
        ValueKind.NONE,
        ValueKind.NAME,
        ValueKind.SEQUENCE,
        ValueKind.OTHER,  # ``(3)`` is a parenthesized 3, not a tuple
        ValueKind.SEQUENCE,
        ValueKind.SEQUENCE,
        ValueKind.STARRED,
        ValueKind.DOUBLE_STARRED,
        ValueKind.OTHER,
        ValueKind.OTHER,
    ]
    assert context(marked).arguments[9].name == "torch.float16"
    assert context(marked).argument_index == 18


def test_strings_holding_commas_and_parentheses_are_one_argument():
    call = context('说明 = "🎯"; y = F.pad(x, (1, 1), mode="a, (b)", value=0, ‸')
    assert call.callee == "F.pad"
    assert (call.argument_index, call.positional_count) == (4, 2)
    assert call.used_keywords == frozenset({"mode", "value"})


def test_a_nested_call_inside_an_argument_is_one_argument_and_its_keywords_are_its_own():
    call = context("torch.max(F.softmax(out, dim=1), ‸")
    assert call.callee == "torch.max"
    assert call.argument_index == 1 and call.used_keywords == frozenset()
    assert call.arguments[0].kind is ValueKind.OTHER and call.arguments[0].keyword is None


def test_the_commas_and_defaults_of_a_lambda_belong_to_the_lambda():
    call = context("sorted(items, key=lambda a, b=1: a, ‸")
    assert call.argument_index == 2
    assert call.used_keywords == frozenset({"key"})


def test_a_keyword_being_typed_with_and_without_its_equals_sign():
    with_equals = context("torch.max(x, dim=‸")
    assert with_equals.keyword == "dim" and with_equals.current.keyword == "dim"
    assert with_equals.current.kind is ValueKind.EMPTY
    without = context("torch.max(x, dim‸")
    assert without.keyword is None and without.typing_name == "dim"
    assert without.current.kind is ValueKind.NAME and without.current.name == "dim"
    same_name = context("F.softmax(x, dim=dim‸")  # the value may be named like its keyword
    assert same_name.keyword == "dim" and same_name.current.name == "dim"


def test_only_a_name_opening_the_argument_makes_a_keyword():
    call = context("f(a.b == c, ‸")
    assert call.used_keywords == frozenset() and call.positional_count == 1


def test_the_value_being_typed():
    assert context("x.view(-1‸").current.kind is ValueKind.INT
    assert context("x.view(torch.int32‸").current.name == "torch.int32"
    inside = context("F.interpolate(x, mode='bil‸").current
    assert inside.keyword == "mode" and inside.kind is ValueKind.STR


def test_where_the_receiver_ends():
    call = context('说明 = "🎯"; y = self.fc.forward(‸')
    assert call.callee == "self.fc.forward"
    assert call.receiver_end == Position(0, len('说明 = "🎯"; y = self.fc'))
    assert context("torch.max(‸").receiver_end == Position(0, len("torch"))
    assert context("max(‸").receiver_end is None


# ------------------------------------------------------------------------------------------ the call of a callee


@pytest.mark.parametrize(
    ("lines", "callee_end", "callee", "written"),
    [
        (["y = x.view(x.size(0), -1)"], Position(0, 10), "x.view", [(None, ValueKind.OTHER), (None, ValueKind.INT)]),
        (
            ["p = F.softmax(", "    x, dim=-1)"],
            Position(0, 13),
            "F.softmax",
            [(None, ValueKind.NAME), ("dim", ValueKind.INT)],
        ),
        (["v = torch.max (t, 1"], Position(0, 13), "torch.max", [(None, ValueKind.NAME), (None, ValueKind.INT)]),
        (["f = torch.max"], Position(0, 13), "torch.max", []),  # not called: read as a call with no arguments
    ],
)
def test_the_call_of_a_callee_has_every_argument_written(lines, callee_end, callee, written):
    found = call_of_callee(lines, callee_end)
    assert found is not None and found.callee == callee
    arguments = [*found.arguments, found.current]
    assert [(a.keyword, a.kind) for a in arguments if a.kind is not ValueKind.EMPTY] == written


def test_a_name_passed_as_an_argument_does_not_take_the_arguments_of_the_call_around_it():
    found = call_of_callee(["y = f(x.view, 1)"], Position(0, 12))
    assert found is not None and found.callee == "x.view"
    assert not found.arguments and found.current.kind is ValueKind.EMPTY


def test_a_long_identifier_before_the_cursor_costs_no_more_than_a_short_one():
    """A 200k-character line (a pasted blob, a generated literal) once took minutes per keystroke: the patterns anchored
    at the cursor were tried from every start before it. Each is now tried only where a name or a dot begins."""
    import time

    line = "x = " + "a" * 200_000
    started = time.perf_counter()
    assert attribute_context(line) is None and dotted_partial(line) is None
    assert attribute_context(line + ".va") is None  # a receiver that long is not a plain name anyone typed
    assert attribute_context("y = " + "b." * 50_000 + "c") is None
    assert time.perf_counter() - started < 2.0  # was about 10 minutes; tens of microseconds now
    assert attribute_context("说明 = 1; 神经网络.Con") == ("神经网络", "Con")
