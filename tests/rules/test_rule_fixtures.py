"""Every rule against its fixture: the marked lines and nothing else; fixes give the `.fixed.py` file.

A fixture ``tests/fixtures/rules/TL301.py`` marks each line that must be reported with ``# error: [TL301]`` and
has a ``# near misses`` section of look-alike code that must stay silent. The test fails on a missing and on an
extra finding. A fixable rule also has ``TL301.fixed.py``: applying every fix to the fixture must give exactly
that file, and checking it again must report only the findings that had no fix.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchls.core.checker import check_source
from torchls.core.fixes import apply_fixes
from torchls.core.rules import ALL_RULES

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
MARKER = re.compile(r"#\s*error:\s*\[([A-Z0-9,\s]+)\]")


def expected_findings(text: str, code: str) -> set[int]:
    lines = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = MARKER.search(line)
        if match and code in {c.strip() for c in match.group(1).split(",")}:
            lines.add(number)
    return lines


def fixture(code: str) -> str:
    path = FIXTURES / f"{code}.py"
    assert path.exists(), f"every rule needs a fixture: {path}"
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_fixture_reports_exactly_the_marked_lines(rule):
    text = fixture(rule.code)
    assert re.search(r"^# near misses", text, re.MULTILINE | re.IGNORECASE), "a fixture needs a near-miss section"
    expected = expected_findings(text, rule.code)
    assert expected, "a fixture needs at least one marked line"
    result = check_source(text, select=[rule.code])
    assert result.syntax_error is None
    actual = {f.span.start.line + 1 for f in result.findings}
    missing, extra = sorted(expected - actual), sorted(actual - expected)
    lines = text.splitlines()
    report = [f"missing line {n}: {lines[n - 1].strip()}" for n in missing]
    report += [f"extra line {n}: {lines[n - 1].strip()}" for n in extra]
    assert not report, "\n".join(report)


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.fixable], ids=lambda rule: rule.code)
def test_fixes_give_the_fixed_file(rule):
    text = fixture(rule.code)
    fixed_path = FIXTURES / f"{rule.code}.fixed.py"
    assert fixed_path.exists(), f"a fixable rule needs {fixed_path.name}"
    findings = check_source(text, select=[rule.code]).findings
    fixes = [f.fix for f in findings if f.fix is not None]
    assert fixes, "the fixture should exercise the fix"
    new_text, applied = apply_fixes(text, fixes)
    assert applied == len(fixes)
    assert new_text == fixed_path.read_text(encoding="utf-8")
    unfixed = sorted(f.message for f in findings if f.fix is None)
    again = check_source(new_text, select=[rule.code]).findings
    assert sorted(f.message for f in again) == unfixed, "after the fixes only the unfixable findings remain"
