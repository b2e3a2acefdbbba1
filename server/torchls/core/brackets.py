"""Reading signature and annotation text: where a bracket closes and where a separator splits, at the top level.

jedi writes signatures as text (``view(self, *size: _int) -> Tensor``), and so do the knowledge base's entries.
Their defaults may hold commas, brackets and quotes (``sep=", ("``), so every reader of that text scans it here,
outside string literals, counting ``()``, ``[]`` and ``{}`` alike.
"""

from __future__ import annotations

from collections.abc import Iterator

_OPENING = "([{"
_CLOSING = ")]}"


class _Scan:
    """The characters of ``text`` from ``start`` that are outside string literals (escapes count); once iterated,
    ``quote`` says whether a string was left open."""

    def __init__(self, text: str, start: int = 0) -> None:
        self.text, self.start = text, start
        self.quote: str | None = None

    def __iter__(self) -> Iterator[tuple[int, str]]:
        escaped = False
        for index in range(self.start, len(self.text)):
            char = self.text[index]
            if self.quote is not None:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == self.quote:
                    self.quote = None
                continue
            if char in "'\"":
                self.quote = char
                continue
            yield index, char


def outside_strings(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(index, char)`` for each character from ``start`` that is not inside a string literal (escapes count)."""
    return iter(_Scan(text, start))


def closing_bracket(text: str, open_at: int) -> int:
    """The index of the bracket that closes the one at ``open_at``; -1 when it does not close."""
    depth = 0
    for index, char in outside_strings(text, open_at):
        if char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            depth -= 1
            if depth == 0:
                return index
    return -1


def top_level_index(text: str, wanted: str, start: int = 0) -> int:
    """The first ``wanted`` at or after ``start`` outside brackets and strings; -1 if none."""
    depth = 0
    for index, char in outside_strings(text, start):
        if char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            depth -= 1
        elif char == wanted and depth == 0:
            return index
    return -1


def split_top_level(text: str, separator: str) -> list[str]:
    """``text`` split at each ``separator`` outside brackets and strings (the pieces as they are, not stripped)."""
    parts, depth, start = [], 0, 0
    for index, char in outside_strings(text):
        if char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def balanced(text: str) -> bool:
    """True when every bracket in ``text`` closes in order and every string literal ends."""
    depth = 0
    scan = _Scan(text)
    for _index, char in scan:
        if char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and scan.quote is None
