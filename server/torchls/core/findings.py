"""What a rule reports: a finding with its place, message, severity, related places and an optional safe fix."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from torchls.core.text import Span


class Severity(enum.IntEnum):
    ERROR = 1  # the code fails at run time, or computes something provably wrong
    WARNING = 2  # almost certainly a mistake
    INFO = 3  # a risk worth knowing about


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text of ``span`` with ``new_text`` (code-point positions)."""

    span: Span
    new_text: str


@dataclass(frozen=True, slots=True)
class Fix:
    """A safe fix: applying ``edits`` removes the finding and changes nothing else the code means."""

    title: str  # a Chinese imperative: "改为 reshape"
    edits: tuple[Edit, ...]


@dataclass(frozen=True, slots=True)
class Related:
    """Another place that explains a finding, such as where a softmax was applied."""

    span: Span
    message: str


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    message: str
    span: Span
    severity: Severity
    fix: Fix | None = None
    related: tuple[Related, ...] = ()

    @property
    def sort_key(self) -> tuple[int, int, str]:
        return (self.span.start.line, self.span.start.column, self.code)
