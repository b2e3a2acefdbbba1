"""Jupyter notebook files (``.ipynb``, nbformat 4): the cells for the analysis, where each cell's source lies in
the file's text, and a writer that changes only the sources it is given.

The writer never re-serialises the notebook: it replaces the JSON value of a changed cell's ``source`` in the
file's text and leaves every other byte alone, so outputs, metadata, key order, indentation and the trailing
newline stay exactly as Jupyter (or whoever) wrote them. The new value keeps the old one's form: a string stays a
string, a list of lines (what nbformat writes: ``json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False)``)
stays a list of lines laid out like the old list, with ``\\u`` escapes only when the file uses them.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from json.decoder import scanstring

from torchls.core.notebook import Cell
from torchls.core.text import Position

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_DECODER = json.JSONDecoder()


class InvalidNotebook(ValueError):
    """The text is not a notebook this module can read; the message says why, in Chinese."""


@dataclass(frozen=True, slots=True)
class SourceValue:
    """Where a cell's ``source`` value lies in the file: ``text[start:end]``; each of its strings'
    ``(opening quote, end after the closing quote)`` offsets and decoded lengths."""

    start: int
    end: int
    strings: tuple[tuple[int, int], ...]
    lengths: tuple[int, ...]
    is_list: bool


@dataclass(frozen=True, slots=True)
class NotebookFile:
    text: str
    cells: tuple[Cell, ...]
    sources: tuple[SourceValue, ...]  # parallel to ``cells``
    language: str | None  # the kernel's language when the metadata names one
    ensure_ascii: bool  # the file escapes non-ASCII text as ``\uXXXX``
    line_starts: tuple[int, ...]  # offsets of the file's lines

    @property
    def is_python(self) -> bool:
        return self.language is None or self.language.lower().startswith(("python", "ipython"))

    def file_position(self, cell: int, position: Position) -> Position:
        """Where a position in a cell's source lies in the file's text (0-based line, code-point column)."""
        source = self.cells[cell].source
        offset = _offset(source, position)
        value = self.sources[cell]
        for number, ((quote, _), length) in enumerate(zip(value.strings, value.lengths, strict=True)):
            if offset < length or number == len(value.strings) - 1:
                return self._text_position(_raw_offset(self.text, quote, min(offset, length)))
            offset -= length
        return self._text_position(value.start)

    def _text_position(self, offset: int) -> Position:
        line = bisect.bisect_right(self.line_starts, offset) - 1
        return Position(line, offset - self.line_starts[line])

    def with_sources(self, sources: Mapping[int, str]) -> str:
        """The file's text with the given cells' sources replaced and nothing else changed."""
        text = self.text
        changed = [(index, source) for index, source in sources.items() if source != self.cells[index].source]
        for index, source in sorted(changed, key=lambda item: self.sources[item[0]].start, reverse=True):
            value = self.sources[index]
            text = text[: value.start] + self.source_json(index, source) + text[value.end :]
        return text

    def source_json(self, index: int, source: str) -> str:
        """``source`` as the JSON value of cell ``index``'s ``source``, in the form and layout the file uses."""
        value = self.sources[index]
        if not value.is_list:
            return json.dumps(source, ensure_ascii=self.ensure_ascii)
        items = [json.dumps(line, ensure_ascii=self.ensure_ascii) for line in source.splitlines(keepends=True)]
        if not items:
            return "[]"
        opening, separator, closing = self._list_layout(value)
        return "[" + opening + separator.join(items) + closing + "]"

    def _list_layout(self, value: SourceValue) -> tuple[str, str, str]:
        """(after ``[``, between items, before ``]``) as the file lays out a list of lines."""
        text, strings = self.text, value.strings
        if strings:
            opening = text[value.start + 1 : strings[0][0]]
            closing = text[strings[-1][1] : value.end - 1]
            if len(strings) > 1:
                return opening, text[strings[0][1] : strings[1][0]], closing
            return opening, ("," + opening) if "\n" in opening else ", ", closing
        if "\n" not in text.strip():
            return "", ", ", ""
        line_start = text.rfind("\n", 0, value.start) + 1
        indent = text[line_start : line_start + len(text[line_start:]) - len(text[line_start:].lstrip(" \t"))]
        second_line = text[text.find("\n") + 1 :]
        unit = second_line[: len(second_line) - len(second_line.lstrip(" \t"))] or " "
        return "\n" + indent + unit, ",\n" + indent + unit, "\n" + indent


def read_notebook(text: str) -> NotebookFile:
    """The notebook in ``text``; raises :class:`InvalidNotebook` for anything that is not an nbformat 4 notebook."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidNotebook(f"JSON 解析失败（第 {error.lineno} 行第 {error.colno} 列：{error.msg}）") from None
    except RecursionError:
        raise InvalidNotebook("JSON 嵌套太深") from None
    if not isinstance(data, dict):
        raise InvalidNotebook("顶层不是 JSON 对象")
    raw_cells = data.get("cells")
    if not isinstance(raw_cells, list):
        version = data.get("nbformat")
        old = f"（nbformat {version} 的旧格式，请先用 Jupyter 另存为 nbformat 4）" if isinstance(version, int) else ""
        raise InvalidNotebook("没有 cells 列表" + old)
    cells = []
    for number, cell in enumerate(raw_cells, start=1):
        if not isinstance(cell, dict):
            raise InvalidNotebook(f"第 {number} 个单元格不是 JSON 对象")
        kind, source = cell.get("cell_type"), cell.get("source")
        if not isinstance(kind, str):
            raise InvalidNotebook(f"第 {number} 个单元格没有字符串 cell_type")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise InvalidNotebook(f"第 {number} 个单元格的 source 不是字符串或字符串列表")
        cell_id = cell.get("id")
        cells.append(Cell(kind, source, cell_id if isinstance(cell_id, str) else None))
    sources = _source_values(text)
    if len(sources) != len(cells):  # duplicate "cells" keys: json keeps the last, so does the walk; never differs
        raise InvalidNotebook("cells 列表无法定位")
    ensure_ascii = text.isascii() and not json.dumps(raw_cells, ensure_ascii=False).isascii()
    starts = (0, *(match.end() for match in _LINE_BREAK.finditer(text)))
    return NotebookFile(text, tuple(cells), tuple(sources), _language(data.get("metadata")), ensure_ascii, starts)


def _language(metadata: object) -> str | None:
    if not isinstance(metadata, dict):
        return None
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        section = metadata.get(key)
        if isinstance(section, dict) and isinstance(section.get(field), str):
            return section[field]
    return None


# The walk below runs on text that ``json.loads`` already accepted, so it can trust the grammar.


def _skip(text: str, index: int) -> int:
    return _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]


def _skip_value(text: str, index: int) -> int:
    return _DECODER.raw_decode(text, index)[1]


def _walk_object(text: str, index: int, on_member: Callable[[str, int], int]) -> int:
    """``text[index]`` is ``{``: call ``on_member(key, value offset)`` (which returns the value's end) for each
    member; returns the offset after ``}``."""
    index = _skip(text, index + 1)
    while text[index] != "}":
        key, index = scanstring(text, index + 1)
        index = _skip(text, _skip(text, index) + 1)  # past ':'
        index = _skip(text, on_member(key, index))
        if text[index] == ",":
            index = _skip(text, index + 1)
    return index + 1


def _walk_array(text: str, index: int, on_item: Callable[[int], int]) -> int:
    """``text[index]`` is ``[``: call ``on_item(offset)`` for each item; returns the offset after ``]``."""
    index = _skip(text, index + 1)
    while text[index] != "]":
        index = _skip(text, on_item(index))
        if text[index] == ",":
            index = _skip(text, index + 1)
    return index + 1


def _source_values(text: str) -> list[SourceValue]:
    found: list[SourceValue] = []

    def string(start: int, strings: list[tuple[int, int]], lengths: list[int]) -> int:
        decoded, end = scanstring(text, start + 1)
        strings.append((start, end))
        lengths.append(len(decoded))
        return end

    def source(start: int) -> SourceValue:
        strings: list[tuple[int, int]] = []
        lengths: list[int] = []
        if text[start] == "[":
            end = _walk_array(text, start, lambda item: string(item, strings, lengths))
        else:
            end = string(start, strings, lengths)
        return SourceValue(start, end, tuple(strings), tuple(lengths), text[start] == "[")

    def cell(start: int) -> int:
        value: list[SourceValue] = []

        def member(key: str, offset: int) -> int:
            if key != "source":
                return _skip_value(text, offset)
            value[:] = [source(offset)]
            return value[0].end

        end = _walk_object(text, start, member)
        found.append(value[0])
        return end

    def top(key: str, offset: int) -> int:
        if key != "cells":
            return _skip_value(text, offset)
        found.clear()
        return _walk_array(text, offset, cell)

    _walk_object(text, _skip(text, 0), top)
    return found


def _offset(source: str, position: Position) -> int:
    """The string offset of a (line, code-point column) position in ``source`` (lines end at \\r\\n, \\r, \\n)."""
    starts = [0] + [match.end() for match in _LINE_BREAK.finditer(source)]
    if position.line >= len(starts):
        return len(source)
    line_end = starts[position.line + 1] if position.line + 1 < len(starts) else len(source)
    line_text = source[starts[position.line] : line_end].rstrip("\r\n")
    return starts[position.line] + min(position.column, len(line_text))


def _raw_offset(text: str, quote: int, count: int) -> int:
    """The offset in ``text`` of the ``count``-th decoded character of the JSON string whose quote is at ``quote``."""
    index = quote + 1
    for _ in range(count):
        if text[index] != "\\":
            index += 1
        elif text[index + 1] != "u":
            index += 2
        elif 0xD800 <= int(text[index + 2 : index + 6], 16) < 0xDC00 and text.startswith("\\u", index + 6):
            index += 12  # a surrogate pair: one character
        else:
            index += 6
    return index
