"""Source text and positions.

Three column units meet in this project:

- editors send LSP positions in UTF-16 code units by default (or UTF-8 / UTF-32 when negotiated);
- Python's ``ast`` reports ``col_offset`` in UTF-8 *bytes*;
- jedi and ``str`` indexing count code points.

Inside torchls every column is a code point. This module is the only place where the other two units are
converted, one function each way, so Chinese text or an emoji before a symbol never shifts a position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Encoding = Literal["utf-8", "utf-16", "utf-32"]


def _unit_length(char: str, encoding: Encoding) -> int:
    code = ord(char)
    if encoding == "utf-16":
        return 2 if code > 0xFFFF else 1
    if encoding == "utf-8":
        if code < 0x80:
            return 1
        if code < 0x800:
            return 2
        return 3 if code < 0x10000 else 4
    return 1


def units_to_column(line: str, units: int, encoding: Encoding = "utf-16") -> int:
    """Convert an offset in ``encoding`` code units into a code-point column of ``line``.

    Offsets past the end of the line clamp to its length; an offset inside a surrogate pair or a multi-byte
    sequence lands on the character that contains it.
    """
    if units <= 0:
        return 0
    if encoding == "utf-32" or line.isascii():
        return min(units, len(line))
    consumed = 0
    for column, char in enumerate(line):
        consumed += _unit_length(char, encoding)
        if consumed > units:
            return column
        if consumed == units:
            return column + 1
    return len(line)


def column_to_units(line: str, column: int, encoding: Encoding = "utf-16") -> int:
    """Convert a code-point column of ``line`` into an offset in ``encoding`` code units."""
    column = max(0, min(column, len(line)))
    if encoding == "utf-32" or line.isascii():
        return column
    return sum(_unit_length(char, encoding) for char in line[:column])


def utf8_offset_to_column(line: str, byte_offset: int) -> int:
    """Convert an ``ast`` ``col_offset`` (UTF-8 bytes) into a code-point column."""
    return units_to_column(line, byte_offset, "utf-8")


@dataclass(frozen=True, slots=True)
class Position:
    """A place in a document: 0-based line and 0-based code-point column."""

    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open range of code-point positions on possibly several lines."""

    start: Position
    end: Position

    def contains(self, position: Position) -> bool:
        """True when ``position`` is inside the span; the end counts, so a cursor right after a name hits it."""
        return (
            (self.start.line, self.start.column)
            <= (position.line, position.column)
            <= (
                self.end.line,
                self.end.column,
            )
        )


class SourceText:
    """An immutable document text split into lines, with position helpers.

    Lines keep no line terminators; ``\\r\\n``, ``\\r`` and ``\\n`` all end a line, as in the LSP spec.
    """

    __slots__ = ("lines", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")

    def line(self, index: int) -> str:
        """The text of line ``index``, or an empty string past either end of the document."""
        if 0 <= index < len(self.lines):
            return self.lines[index]
        return ""

    def position_from_units(self, line: int, units: int, encoding: Encoding = "utf-16") -> Position:
        """A client position (line, code units) as a code-point position clamped to the document."""
        return Position(line, units_to_column(self.line(line), units, encoding))

    def has_position(self, line: int, units: int, encoding: Encoding = "utf-16") -> bool:
        """True when a client position lies within the document (at most at the end of its line)."""
        return 0 <= line < len(self.lines) and 0 <= units <= column_to_units(
            self.lines[line], len(self.lines[line]), encoding
        )

    def units_from_position(self, position: Position, encoding: Encoding = "utf-16") -> tuple[int, int]:
        """A code-point position as a client (line, code units) pair."""
        return position.line, column_to_units(self.line(position.line), position.column, encoding)

    def position_from_ast(self, lineno: int, col_offset: int) -> Position:
        """An ``ast`` node's (1-based line, UTF-8 byte offset) as a code-point position."""
        line = lineno - 1
        return Position(line, utf8_offset_to_column(self.line(line), col_offset))

    def span_from_ast(self, node: object) -> Span | None:
        """The span of an ``ast`` node that carries positions, else None."""
        lineno = getattr(node, "lineno", None)
        end_lineno = getattr(node, "end_lineno", None)
        if lineno is None or end_lineno is None:
            return None
        return Span(
            self.position_from_ast(lineno, node.col_offset),  # type: ignore[attr-defined]
            self.position_from_ast(end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )
