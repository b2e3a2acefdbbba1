from __future__ import annotations

import pytest

from torchls.core.text import Position, SourceText, column_to_units, units_to_column, utf8_offset_to_column

LINE = '说明 = "张量 🎲"; x = torch.randn(3)'


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@pytest.mark.parametrize("column", range(len(LINE) + 1))
def test_utf16_round_trip_on_chinese_and_emoji(column):
    units = _utf16(LINE[:column])
    assert units_to_column(LINE, units, "utf-16") == column
    assert column_to_units(LINE, column, "utf-16") == units


@pytest.mark.parametrize("column", range(len(LINE) + 1))
def test_utf8_offsets_from_ast_become_code_points(column):
    assert utf8_offset_to_column(LINE, len(LINE[:column].encode("utf-8"))) == column
    assert column_to_units(LINE, column, "utf-8") == len(LINE[:column].encode("utf-8"))


def test_utf32_is_code_points():
    assert units_to_column(LINE, 5, "utf-32") == 5


def test_offset_inside_a_surrogate_pair_lands_on_the_emoji():
    emoji = LINE.index("🎲")
    inside = _utf16(LINE[:emoji]) + 1
    assert units_to_column(LINE, inside, "utf-16") == emoji


def test_positions_past_the_end_clamp():
    source = SourceText("abc\n你好")
    assert source.position_from_units(1, 99) == Position(1, 2)
    assert source.position_from_units(7, 3) == Position(7, 0)
    assert source.line(7) == ""
    assert SourceText("").position_from_units(0, 5) == Position(0, 0)


def test_all_line_endings_split_lines():
    assert SourceText("a\r\nb\rc\nd").lines == ["a", "b", "c", "d"]
