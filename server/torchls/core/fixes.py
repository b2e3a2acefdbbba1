"""Applying fixes to text: the ``--fix`` of ``torchls check`` and the fixture tests use this."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from torchls.core.findings import Fix
from torchls.core.text import SourceText


def _offset(source: SourceText, line: int, column: int, starts: list[int]) -> int:
    return starts[line] + min(column, len(source.line(line)))


def apply_fixes(text: str, fixes: Iterable[Fix]) -> tuple[str, int]:
    """``text`` with every fix applied whose edits do not overlap an earlier fix's; returns (text, fixes applied).

    Line endings are kept as they are in ``text``.
    """
    source = SourceText(text)
    starts = [0]
    for raw in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(raw))
    taken: list[tuple[int, int]] = []
    edits: list[tuple[int, int, str]] = []
    applied = 0
    for fix in fixes:
        spans = [
            (
                _offset(source, e.span.start.line, e.span.start.column, starts),
                _offset(source, e.span.end.line, e.span.end.column, starts),
                e.new_text,
            )
            for e in fix.edits
        ]
        if any(overlaps(start, end, taken) for start, end, _ in spans):
            continue
        taken.extend((start, end) for start, end, _ in spans)
        edits.extend(spans)
        applied += 1
    for start, end, new_text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + new_text + text[end:]
    return text, applied


def overlaps(start: Any, end: Any, taken: Sequence[tuple[Any, Any]]) -> bool:
    """True when the half-open range ``start``-``end`` overlaps one in ``taken`` (two insertions at the same place
    count as overlapping); the bounds are offsets or any ordered keys such as (cell, line, column)."""
    return any(
        (start < other_end and other_start < end) or start == end == other_start for other_start, other_end in taken
    )
