"""Output formats of ``torchls check``: text for people, JSON for scripts, SARIF 2.1.0 for code scanning.

Lines and columns are 1-based; columns count code points (SARIF's ``columnKind`` says so), so Chinese text
before a finding does not shift it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from torchls import __version__
from torchls.batch import FileReport
from torchls.core.findings import Finding, Severity
from torchls.core.rules import ALL_RULES, RULES_BY_CODE

SEVERITY_WORDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "info"}
SARIF_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
INFORMATION_URI = "https://pytorch.org/docs/stable/"


def _position(finding: Finding) -> dict[str, int]:
    span = finding.span
    return {
        "line": span.start.line + 1,
        "column": span.start.column + 1,
        "end_line": span.end.line + 1,
        "end_column": span.end.column + 1,
    }


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
        for finding in report.findings:
            where = _position(finding)
            marker = " [*]" if finding.fix else ""
            lines.append(f"{report.path}:{where['line']}:{where['column']}: {finding.code}{marker} {finding.message}")
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
        for finding in report.findings:
            rule = RULES_BY_CODE.get(finding.code)
            items.append(
                {
                    "path": report.path,
                    **_position(finding),
                    "code": finding.code,
                    "name": rule.name if rule else None,
                    "message": finding.message,
                    "severity": SEVERITY_WORDS[finding.severity],
                    "fix": {
                        "title": finding.fix.title,
                        "edits": [
                            {
                                "line": e.span.start.line + 1,
                                "column": e.span.start.column + 1,
                                "end_line": e.span.end.line + 1,
                                "end_column": e.span.end.column + 1,
                                "new_text": e.new_text,
                            }
                            for e in finding.fix.edits
                        ],
                    }
                    if finding.fix
                    else None,
                    "related": [
                        {"line": r.span.start.line + 1, "column": r.span.start.column + 1, "message": r.message}
                        for r in finding.related
                    ],
                }
            )
    return json.dumps(items, ensure_ascii=False, indent=2)


def _artifact_uri(path: str, base: Path) -> str:
    absolute = Path(path).resolve()
    try:
        return absolute.relative_to(base.resolve()).as_posix()
    except ValueError:
        return absolute.as_uri()


def as_sarif(reports: Sequence[FileReport], base: Path) -> str:
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
        uri = _artifact_uri(report.path, base)
        for finding in report.findings:
            where = _position(finding)
            result = {
                "ruleId": finding.code,
                "ruleIndex": index.get(finding.code, -1),
                "level": SARIF_LEVELS[finding.severity],
                "message": {"text": finding.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                            "region": {
                                "startLine": where["line"],
                                "startColumn": where["column"],
                                "endLine": where["end_line"],
                                "endColumn": where["end_column"],
                            },
                        }
                    }
                ],
            }
            if finding.related:
                result["relatedLocations"] = [
                    {
                        "id": number,
                        "message": {"text": related.message},
                        "physicalLocation": {
                            "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                            "region": {
                                "startLine": related.span.start.line + 1,
                                "startColumn": related.span.start.column + 1,
                            },
                        },
                    }
                    for number, related in enumerate(finding.related)
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
