"""A notebook's code cells analysed as one program, in execution (document) order.

The editor's notebook support and ``torchls check`` on ``.ipynb`` files both go through here: the cells come in
as :class:`Cell` values (kind, source, an optional id), :func:`build_program` joins the code cells into one
program text, and :class:`NotebookProgram` maps every program position to (cell, line, column) and back.
:func:`check_cells` runs the checker on the program and returns each finding, its related locations and its fix
edits in cell coordinates.

Coordinates: a cell is named by its index among *all* the notebook's cells (markdown and raw cells counted, as
editors number them); lines and columns inside a cell are 0-based code points, like every :class:`Span`.
(``torchls check`` prints them 1-based: ``train.ipynb:cell 5:2:9``.)

Each code cell starts on a new program line and keeps its lines in order, so a program line is exactly one cell
line. IPython syntax is masked line by line so that it neither breaks the parse nor moves any other line or
column; findings on masked lines are never reported and fixes that would edit them are dropped:

- line magics (``%matplotlib inline``, ``%pip install x``), shell escapes (``!pip install x``), help (``x?``,
  ``??x``, ``np.mean?``) and autocall escapes (``/f x``, ``,f a b``, ``;f a b``) at the start of a statement
  become ``pass`` at the same indentation (lines continued with a backslash become empty);
- ``files = !ls`` and ``result = %sql ...`` still bind their name, to a value the analysis does not know;
- ``%time STATEMENT`` keeps the statement: IPython runs it once in the notebook's namespace, so what it binds is
  real. The statement moves to the magic's column in the program and the line map shifts its columns back.
  ``%timeit STATEMENT`` is masked: timeit runs the code inside its own timing function, so nothing it binds
  reaches the notebook, and its options (``-n 100 -r 3``) come first;
- a cell magic on a cell's first non-empty line: ``%%time``, ``%%capture``, ``%%prun`` and ``%%debug`` run their
  body as Python in the notebook's namespace, so only the magic line is masked; every other cell magic
  (``%%bash``, ``%%writefile``, ``%%html``, ``%%javascript``, ``%%timeit``, unknown ones) makes the whole cell
  not Python: every line of it is masked;
- a cell whose first line is indented is dedented as IPython does (its columns shift back in the line map);
- top-level ``await``, ``async for`` and ``async with`` need nothing: ``ast.parse`` accepts them;
- a cell that still does not parse is repaired on its own as the editor repairs a file (core/parsing.py), so a
  syntax error stays in its cell instead of swallowing the next one; its error is in ``syntax_errors``.

Lines inside strings and brackets are never taken for magics. Markdown and raw cells contribute no lines.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from torchls.core.findings import Edit, Finding, Fix
from torchls.core.fixes import apply_fixes, overlaps
from torchls.core.parsing import UNKNOWN_VALUE, repair_lines
from torchls.core.text import Position, SourceText, Span

if TYPE_CHECKING:  # the language server builds notebook programs long before it checks one
    from torchls.core.checker import Checker

CODE = "code"

# Cell magics whose body IPython runs as Python in the notebook's namespace.
PYTHON_CELL_MAGICS = frozenset({"time", "capture", "prun", "debug"})
_KEPT_LINE_MAGIC = re.compile(r"%time(?:[ \t]+)(?=\S)")
_HELP = re.compile(r"\?{0,2}%{0,2}[A-Za-z_*][\w*]*(?:\.[A-Za-z_*][\w*]*)*(?:\(\))?\?{0,2}")
_ASSIGNED_ESCAPE = re.compile(r"([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[!%]")
_ESCAPES = ("%", "!", "/", ",", ";")
_CELL_MAGIC = re.compile(r"%%([A-Za-z_][\w.]*)")


@dataclass(frozen=True, slots=True)
class Cell:
    """One notebook cell as the analysis needs it; ``id`` (the nbformat cell id, an editor's cell URI) is only
    carried along for the caller."""

    kind: str  # "code", "markdown" or "raw"
    source: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class CellSpan:
    cell: int  # index of the cell in the notebook, every kind counted
    span: Span  # in the cell's own text


@dataclass(frozen=True, slots=True)
class CellRelated:
    where: CellSpan
    message: str


@dataclass(frozen=True, slots=True)
class CellEdit:
    where: CellSpan
    new_text: str


@dataclass(frozen=True, slots=True)
class CellFinding:
    """A finding of the program, placed in the cells."""

    finding: Finding  # as the checker reported it, in program coordinates
    where: CellSpan
    related: tuple[CellRelated, ...] = ()
    edits: tuple[CellEdit, ...] = ()  # the fix in cell coordinates; empty without a (translatable) fix

    @property
    def fixable(self) -> bool:
        return bool(self.edits)


@dataclass(frozen=True, slots=True)
class CellSyntaxError:
    cell: int
    line: int  # 0-based, in the cell
    message: str


@dataclass(frozen=True, slots=True)
class _Origin:
    """Where a program line comes from: cell ``cell``'s line ``line``; program columns from ``indent`` on are
    ``shift`` columns further right in the cell (a kept ``%time`` statement, a dedented cell)."""

    cell: int
    line: int
    indent: int = 0
    shift: int = 0


class NotebookProgram:
    """The program of a notebook's code cells and the map between its positions and the cells'."""

    __slots__ = (
        "_first_line",
        "_origins",
        "cells",
        "magic_lines",
        "masked_lines",
        "syntax_errors",
        "text",
        "typed_text",
    )

    def __init__(
        self,
        cells: tuple[Cell, ...],
        lines: list[str],
        origins: list[_Origin],
        masked: frozenset[int],
        errors: tuple[CellSyntaxError, ...],
        typed: list[str] | None = None,
        magic: frozenset[int] = frozenset(),
    ) -> None:
        self.cells = cells
        self.magic_lines = magic  # the masked lines that hold IPython syntax (the others hold a repaired error)
        self.text = "\n".join(lines)
        # The same lines before each cell's syntax errors were repaired (IPython syntax still masked): what the
        # editor's features read tokens from, as they do from a file being typed (``nn.Linear(`` unclosed).
        self.typed_text = "\n".join(typed) if typed is not None else self.text
        self.masked_lines = masked  # program lines that hold IPython syntax or a repaired syntax error
        self.syntax_errors = errors
        self._origins = origins
        self._first_line: dict[int, int] = {}
        for number, origin in enumerate(origins):
            self._first_line.setdefault(origin.cell, number)

    def cell_position(self, position: Position) -> tuple[int, Position] | None:
        """(cell index, position in the cell) of a program position; None past the program's end."""
        if not 0 <= position.line < len(self._origins):
            return None
        origin = self._origins[position.line]
        column = position.column + origin.shift if position.column >= origin.indent else position.column
        return origin.cell, Position(origin.line, column)

    def program_position(self, cell: int, position: Position) -> Position | None:
        """The program position of a position in cell ``cell``; None for a cell that is not in the program."""
        first = self._first_line.get(cell)
        if first is None:
            return None
        line = first + position.line
        if line >= len(self._origins) or self._origins[line].cell != cell:
            return None
        origin = self._origins[line]
        column = position.column
        if column >= origin.indent:
            column = max(origin.indent, column - origin.shift)
        return Position(line, column)

    def is_masked(self, cell: int, line: int, magic_only: bool = False) -> bool:
        """True when line ``line`` of cell ``cell`` is not analysed (IPython syntax, a repaired error; with
        ``magic_only``, IPython syntax only)."""
        where = self.program_position(cell, Position(line, 0))
        return where is None or where.line in (self.magic_lines if magic_only else self.masked_lines)

    def cell_span(self, span: Span) -> CellSpan | None:
        """A program span in its cell; a span that runs into the next cell ends at the end of its own cell."""
        start = self.cell_position(span.start)
        end = self.cell_position(span.end)
        if start is None:
            return None
        if end is None or end[0] != start[0]:
            lines = SourceText(self.cells[start[0]].source).lines
            end = (start[0], Position(len(lines) - 1, len(lines[-1])))
        return CellSpan(start[0], Span(start[1], end[1]))

    def cell_edits(self, fix: Fix) -> tuple[CellEdit, ...] | None:
        """The fix's edits in cell coordinates; None when an edit touches a masked line or spans two cells."""
        edits = []
        for edit in fix.edits:
            lines = range(edit.span.start.line, edit.span.end.line + 1)
            if any(line in self.masked_lines for line in lines):
                return None
            start, end = self.cell_position(edit.span.start), self.cell_position(edit.span.end)
            if start is None or end is None or start[0] != end[0]:
                return None
            edits.append(CellEdit(CellSpan(start[0], Span(start[1], end[1])), edit.new_text))
        return tuple(edits)

    def locate(self, finding: Finding) -> CellFinding | None:
        """``finding`` in cell coordinates; None for a finding on a masked line (never reported)."""
        if finding.span.start.line in self.masked_lines:
            return None
        where = self.cell_span(finding.span)
        if where is None:
            return None
        related = tuple(
            CellRelated(place, r.message) for r in finding.related if (place := self.cell_span(r.span)) is not None
        )
        edits = (self.cell_edits(finding.fix) if finding.fix else None) or ()
        if finding.fix and not edits:  # a fix that would edit IPython syntax: the finding stands, the fix goes
            finding = replace(finding, fix=None)
        return CellFinding(finding, where, related, edits)

    def fixed_sources(self, findings: Iterable[CellFinding]) -> tuple[dict[int, str], int]:
        """The new source of every cell the findings' fixes change, and how many fixes that applies.

        A fix whose edits overlap an earlier fix's is skipped, as :func:`core.fixes.apply_fixes` does.
        """
        taken: list[tuple[_Key, _Key]] = []
        accepted: list[CellEdit] = []
        applied = 0
        for finding in findings:
            ranges = [
                (_key(e.where.cell, e.where.span.start), _key(e.where.cell, e.where.span.end)) for e in finding.edits
            ]
            if not ranges or any(overlaps(start, end, taken) for start, end in ranges):
                continue
            taken.extend(ranges)
            accepted.extend(finding.edits)
            applied += 1
        sources = {}
        for cell, edits in edits_by_cell(accepted).items():
            text, _ = apply_fixes(self.cells[cell].source, [Fix("", tuple(edits))])
            if text != self.cells[cell].source:
                sources[cell] = text
        return sources, applied


_Key = tuple[int, int, int]  # (cell, line, column): ordered like the program


def _key(cell: int, position: Position) -> _Key:
    return cell, position.line, position.column


def edits_by_cell(edits: Iterable[CellEdit]) -> dict[int, list[Edit]]:
    """Cell edits grouped per cell, as edits of that cell's text (one text edit per cell document)."""
    grouped: dict[int, list[Edit]] = {}
    for edit in edits:
        grouped.setdefault(edit.where.cell, []).append(Edit(edit.where.span, edit.new_text))
    return grouped


def build_program(cells: Sequence[Cell]) -> NotebookProgram:
    """The program of ``cells``' code cells, with IPython syntax masked (see the module docstring)."""
    cells = tuple(cells)
    lines: list[str] = []
    typed: list[str] = []
    origins: list[_Origin] = []
    masked: set[int] = set()
    magic: set[int] = set()
    errors = []
    for index, cell in enumerate(cells):
        if cell.kind != CODE:
            continue
        prepared = _prepared_cell(cell.source)
        if prepared.error is not None:
            line, _, message = prepared.error.partition(": ")
            errors.append(CellSyntaxError(index, int(line) - 1 if line.isdigit() else 0, message))
        first = len(lines)
        lines.extend(prepared.repaired)
        typed.extend(prepared.typed)
        for number in range(len(prepared.repaired)):
            indent, shift = prepared.shifts.get(number, (0, 0))
            origins.append(_Origin(index, number, indent, shift))
        masked.update(first + number for number in prepared.masked)
        magic.update(first + number for number in prepared.magic)
    return NotebookProgram(cells, lines, origins, frozenset(masked), tuple(errors), typed, frozenset(magic))


@dataclass(frozen=True, slots=True)
class _PreparedCell:
    repaired: tuple[str, ...]  # the lines the analysis reads
    typed: tuple[str, ...]  # the lines before syntax errors were repaired (IPython syntax masked)
    masked: frozenset[int]  # IPython syntax and repaired errors
    magic: frozenset[int]  # IPython syntax only
    shifts: dict[int, tuple[int, int]]
    error: str | None


@functools.lru_cache(maxsize=4096)
def _prepared_cell(source: str) -> _PreparedCell:
    """One code cell masked and repaired; kept by source, since a keystroke changes one cell and the notebook's
    program is rebuilt from all of them (a 50-cell notebook: 20 ms of masking and parsing, 1 ms with this)."""
    cell_lines, cell_masked, shifts = mask_ipython(SourceText(source).lines)
    repaired, blanked, error = repair_lines("\n".join(cell_lines))
    typed = cell_lines if len(cell_lines) == len(repaired) else repaired
    return _PreparedCell(
        tuple(repaired), tuple(typed), frozenset(cell_masked | blanked), frozenset(cell_masked), shifts, error
    )


def mask_ipython(lines: Sequence[str]) -> tuple[list[str], set[int], dict[int, tuple[int, int]]]:
    """One code cell's lines with IPython syntax masked: (program lines, masked line numbers, column shifts).

    A shift ``{line: (indent, shift)}`` says that program columns from ``indent`` on are ``shift`` columns
    further right in the cell.
    """
    out = list(lines)
    masked: set[int] = set()
    shifts: dict[int, tuple[int, int]] = {}
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return out, masked, shifts
    magic = _CELL_MAGIC.match(lines[first])
    if magic:
        body_is_python = magic.group(1) in PYTHON_CELL_MAGICS
        for number in range(first, len(lines)) if not body_is_python else (first,):
            if out[number].strip():
                out[number] = ""
                masked.add(number)
        if not body_is_python:
            return out, masked, shifts
    dedent = _leading_indent(lines, first + 1 if magic else first)
    if dedent:
        for number, line in enumerate(out):
            if number not in masked and line.startswith(dedent):
                out[number] = line[len(dedent) :]
                shifts[number] = (0, len(dedent))
    scanner = _Scanner()
    continued_escape = False
    for number, line in enumerate(out):
        if number in masked:
            continue
        if continued_escape:
            out[number] = ""
            masked.add(number)
            continued_escape = line.rstrip().endswith("\\")
            continue
        if scanner.at_statement_start():
            replaced = _mask_statement(line)
            if replaced is not None:
                new_line, keep_from = replaced
                if keep_from is None:
                    out[number] = new_line
                    masked.add(number)
                    continued_escape = line.rstrip().endswith("\\")
                    continue
                indent = len(line) - len(line.lstrip())
                _, previous = shifts.get(number, (0, 0))
                shifts[number] = (indent, previous + keep_from - indent)
                out[number] = new_line
                line = new_line
        scanner.feed(line)
    return out, masked, shifts


def _leading_indent(lines: Sequence[str], first: int) -> str:
    """The indentation IPython strips from a cell whose first code line is indented, else ``""``."""
    line = next((line for line in lines[first:] if line.strip()), "")
    return line[: len(line) - len(line.lstrip())]


def _mask_statement(line: str) -> tuple[str, int | None] | None:
    """What a line that starts a statement becomes when it is IPython syntax: (new line, None) when masked,
    (new line, cell column where the kept statement starts) for ``%time STATEMENT``; None for plain Python."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if not stripped or stripped.startswith("#"):
        return None
    kept = _KEPT_LINE_MAGIC.match(stripped)
    if kept:
        return indent + stripped[kept.end() :], len(indent) + kept.end()
    if stripped.startswith(_ESCAPES):
        return indent + "pass", None
    assigned = _ASSIGNED_ESCAPE.match(stripped)
    if assigned:
        return f"{indent}{assigned.group(1)} = {UNKNOWN_VALUE}", None
    if "?" in stripped and _HELP.fullmatch(stripped.rstrip()):
        return indent + "pass", None
    return None


_OPENERS, _CLOSERS = "([{", ")]}"


class _Scanner:
    """Just enough of Python's tokenizer to know whether the next line starts a statement: not inside a
    string, a bracket or a backslash continuation."""

    __slots__ = ("continued", "depth", "quote")

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None
        self.continued = False

    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        self.continued = False
        index = 0
        while index < len(line):
            char = line[index]
            if self.quote is not None:
                if char == "\\":
                    index += 2
                    continue
                if line.startswith(self.quote, index):
                    index += len(self.quote)
                    self.quote = None
                    continue
                index += 1
                continue
            if char == "#":
                return
            if char in "'\"":
                self.quote = line[index : index + 3] if line[index : index + 3] in ("'''", '"""') else char
                index += len(self.quote)
                continue
            if char in _OPENERS:
                self.depth += 1
            elif char in _CLOSERS:
                self.depth = max(0, self.depth - 1)
            elif char == "\\" and index == len(line) - 1:
                self.continued = True
            index += 1
        if self.quote is not None and len(self.quote) == 1 and not line.endswith("\\"):
            self.quote = None  # an unterminated one-line string: the line is broken, the next one starts afresh


@dataclass(frozen=True, slots=True)
class NotebookCheck:
    program: NotebookProgram
    findings: list[CellFinding]
    syntax_errors: tuple[CellSyntaxError, ...]


def check_cells(cells: Sequence[Cell], checker: Checker) -> NotebookCheck:
    """Check a notebook's cells as one program; findings on masked lines are left out.

    Every cell parses on its own once masked and repaired, so the program parses too: its syntax errors are the
    cells' own (``syntax_errors``)."""
    program = build_program(cells)
    result = checker.check(program.text)
    findings = [located for f in result.findings if (located := program.locate(f)) is not None]
    return NotebookCheck(program, findings, program.syntax_errors)
