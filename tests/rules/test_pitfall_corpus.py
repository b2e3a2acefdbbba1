"""The realistic pitfall corpus (tests/fixtures/pitfalls/): clean programs get no finding at all.

Recall on the buggy programs is what ``bench/pitfall_recall.py`` measures and prints; it is not asserted here,
because most of what the corpus holds the checker does not find yet (issue 13). Precision is: a near miss that
runs correctly must stay silent.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from torchls.core.checker import Checker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from pitfall_recall import programs

PROGRAMS = programs()
CLEAN = [p for p in PROGRAMS if p.clean]


def test_the_corpus_has_both_kinds():
    assert CLEAN and len(CLEAN) < len(PROGRAMS)


@pytest.mark.parametrize("program", CLEAN, ids=lambda p: p.path.stem)
def test_a_clean_program_gets_no_finding(program):
    findings = Checker().check(program.path.read_text(encoding="utf-8")).findings
    assert not findings, [f"{f.code} line {f.span.start.line + 1}: {f.message}" for f in findings]
