"""Output formats of ``torchls check``: text for people, JSON for scripts, SARIF 2.1.0 for code scanning.

Lines and columns are 1-based; columns count code points (SARIF's ``columnKind`` says so), so Chinese text
before a finding does not shift it.

In a notebook a place is (cell, line, column): the cell is its 1-based position among *all* the notebook's cells
(markdown cells counted, as Jupyter and VS Code number them), line and column are 1-based within the cell. Text
prints ``train.ipynb:cell 5:2:9: TL301 ...``; JSON adds ``"cell"`` to the finding, to each fix edit and to each
related location (which may lie in another cell). SARIF: see :func:`as_sarif`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from torchls import __version__
from torchls.batch import FileReport
from torchls.core.findings import Finding, Severity
from torchls.core.rules import ALL_RULES, RULES_BY_CODE
from torchls.core.text import Position, Span

SEVERITY_WORDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "info"}
SARIF_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
INFORMATION_URI = "https://pytorch.org/docs/stable/"


@dataclass(frozen=True, slots=True)
class _Place:
    """A span in a Python file (``cell`` None), or in a notebook's cell (``cell`` 0-based)."""

    span: Span
    cell: int | None = None

    def fields(self, end: bool = True) -> dict[str, int]:
        """The JSON fields of the place, 1-based."""
        where = {"cell": self.cell + 1} if self.cell is not None else {}
        where.update(line=self.span.start.line + 1, column=self.span.start.column + 1)
        if end:
            where.update(end_line=self.span.end.line + 1, end_column=self.span.end.column + 1)
        return where

    def text(self) -> str:
        where = f"{self.span.start.line + 1}:{self.span.start.column + 1}"
        return f"cell {self.cell + 1}:{where}" if self.cell is not None else where


@dataclass(frozen=True, slots=True)
class _Located:
    finding: Finding
    where: _Place
    related: tuple[tuple[_Place, str], ...]  # (place, message)
    edits: tuple[tuple[_Place, str], ...]  # (place, new text)


def _located(report: FileReport) -> list[_Located]:
    """The report's findings with their places in the file, or in the notebook's cells."""
    if report.notebook is None:
        return [
            _Located(
                f,
                _Place(f.span),
                tuple((_Place(r.span), r.message) for r in f.related),
                tuple((_Place(e.span), e.new_text) for e in f.fix.edits) if f.fix else (),
            )
            for f in report.findings
        ]
    return [
        _Located(
            c.finding,
            _Place(c.where.span, c.where.cell),
            tuple((_Place(r.where.span, r.where.cell), r.message) for r in c.related),
            tuple((_Place(e.where.span, e.where.cell), e.new_text) for e in c.edits),
        )
        for c in report.notebook.findings
    ]


def file_problems(reports: Sequence[FileReport]) -> list[str]:
    """Unreadable files and syntax errors, one line each (on stderr whatever the format)."""
    lines = []
    for report in reports:
        if report.read_error:
            lines.append(f"{report.path}: {report.read_error}")
        if report.syntax_error:
            line, _, message = report.syntax_error.partition(": ")
            lines.append(f"{report.path}:{line}: 语法错误（{message}），只检查了能解析的行")
    return lines


def as_text(reports: Sequence[FileReport]) -> str:
    lines = []
    for report in reports:
        for located in _located(report):
            finding = located.finding
            marker = " [*]" if finding.fix else ""
            lines.append(f"{report.path}:{located.where.text()}: {finding.code}{marker} {finding.message}")
    return "\n".join(lines)


def summary(reports: Sequence[FileReport]) -> str:
    findings = sum(len(r.findings) for r in reports)
    fixable = sum(1 for r in reports for f in r.findings if f.fix)
    fixed = sum(r.fixed for r in reports)
    parts = [f"检查了 {len(reports)} 个文件，发现 {findings} 个问题"]
    if fixable:
        parts.append(f"其中 {fixable} 个可用 --fix 自动修复（标 [*]）")
    if fixed:
        parts.append(f"已自动修复 {fixed} 个")
    skipped = sum(1 for r in reports if r.read_error)
    if skipped:
        parts.append(f"{skipped} 个文件无法读取，已跳过")
    return "，".join(parts) + "。"


def as_json(reports: Sequence[FileReport]) -> str:
    items = []
    for report in reports:
        for located in _located(report):
            finding = located.finding
            rule = RULES_BY_CODE.get(finding.code)
            items.append(
                {
                    "path": report.path,
                    **located.where.fields(),
                    "code": finding.code,
                    "name": rule.name if rule else None,
                    "message": finding.message,
                    "severity": SEVERITY_WORDS[finding.severity],
                    "fix": {
                        "title": finding.fix.title,
                        "edits": [{**place.fields(), "new_text": new_text} for place, new_text in located.edits],
                    }
                    if finding.fix
                    else None,
                    "related": [{**place.fields(end=False), "message": message} for place, message in located.related],
                }
            )
    return json.dumps(items, ensure_ascii=False, indent=2)


def _artifact_uri(path: str, base: Path) -> str:
    absolute = Path(path).resolve()
    try:
        return absolute.relative_to(base.resolve()).as_posix()
    except ValueError:
        return absolute.as_uri()


def _region(report: FileReport, place: _Place, end: bool = True) -> dict[str, object]:
    """A SARIF region: in a Python file its line and column; in a notebook the place in the ``.ipynb`` file's own
    text, where the cell's line lies inside its JSON string, with the cell and the place in it as properties."""
    span = place.span
    if place.cell is None or report.notebook is None:
        start, stop = span.start, span.end
        cell = None
    else:
        positions = report.notebook.file_positions
        start = Position(*positions[(place.cell, span.start.line, span.start.column)])
        stop = Position(*positions.get((place.cell, span.end.line, span.end.column), (start.line, start.column)))
        cell = {"cell": place.cell + 1, "cellRegion": _sarif_region(span.start, span.end if end else None)}
    region = {"region": _sarif_region(start, stop if end else None)}
    return {**region, "properties": cell} if cell else region


def _sarif_region(start: Position, end: Position | None) -> dict[str, int]:
    region = {"startLine": start.line + 1, "startColumn": start.column + 1}
    if end is not None:
        region.update(endLine=end.line + 1, endColumn=end.column + 1)
    return region


def as_sarif(reports: Sequence[FileReport], base: Path) -> str:
    """SARIF 2.1.0. SARIF has no notion of notebook cells, and a region's lines and columns count in the
    artifact's own text (SARIF 2.1.0 §3.30), which for a notebook is its JSON. So a notebook's result points at
    the ``.ipynb`` file's text, where the cell's line lies inside its ``source`` string, as SonarSource's Python
    analyser maps notebook issues to the file's JSON lines (sonar-python ``IpynbNotebookParser``); that is what a
    service that shows the file (GitHub code scanning annotates the file's lines) can point at. The cell and the
    place within it, as ``torchls check`` prints them, travel in the physical location's ``properties``
    (``cell``, 1-based among all cells, and ``cellRegion``), which SARIF allows on every object."""
    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary()},
            "fullDescription": {"text": (rule.__doc__ or "").strip()},
            "defaultConfiguration": {"level": SARIF_LEVELS[rule.severity]},
            "properties": {"fixable": rule.fixable, "knowledgeEntry": rule.kb_entry},
        }
        for rule in ALL_RULES
    ]
    index = {rule.code: i for i, rule in enumerate(ALL_RULES)}
    results = []
    for report in reports:
        artifact = {"uri": _artifact_uri(report.path, base), "uriBaseId": "%SRCROOT%"}
        for located in _located(report):
            finding = located.finding
            result = {
                "ruleId": finding.code,
                "ruleIndex": index.get(finding.code, -1),
                "level": SARIF_LEVELS[finding.severity],
                "message": {"text": finding.message},
                "locations": [{"physicalLocation": {"artifactLocation": artifact, **_region(report, located.where)}}],
            }
            if located.related:
                result["relatedLocations"] = [
                    {
                        "id": number,
                        "message": {"text": message},
                        "physicalLocation": {"artifactLocation": artifact, **_region(report, place, end=False)},
                    }
                    for number, (place, message) in enumerate(located.related)
                ]
            results.append(result)
    notifications = [
        {"level": "error", "message": {"text": f"{r.path}: {r.read_error}"}} for r in reports if r.read_error
    ]
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torchls",
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "originalUriBaseIds": {"%SRCROOT%": {"uri": base.resolve().as_uri() + "/"}},
                "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notifications}],
                "results": results,
            }
        ],
    }
    return json.dumps(sarif, ensure_ascii=False, indent=2)
