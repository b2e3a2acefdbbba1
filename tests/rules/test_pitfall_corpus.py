"""The realistic pitfall corpus (tests/fixtures/pitfalls/): clean programs get no finding at all, and recall on
the buggy ones does not fall below what it is today.

``bench/pitfall_recall.py`` prints recall by band and the programs missed. Precision is absolute: a near miss that
runs correctly must stay silent. Recall is a floor (a ratchet: raise it when the checker finds more).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from torchls.core.checker import Checker
from torchls.core.rules import ALL_RULES

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from pitfall_recall import programs, reported

PROGRAMS = programs()
CLEAN = [p for p in PROGRAMS if p.clean]


def test_the_corpus_has_both_kinds():
    assert CLEAN and len(CLEAN) < len(PROGRAMS)


@pytest.mark.parametrize("program", CLEAN, ids=lambda p: p.path.stem)
def test_a_clean_program_gets_no_finding(program):
    findings = Checker().check(program.path.read_text(encoding="utf-8")).findings
    assert not findings, [f"{f.code} line {f.span.start.line + 1}: {f.message}" for f in findings]


# 276 of 280 on 2026-12-02. Before any tuning on them the blind sets scored h_i_ 19/26 (73%), h_j_ 26/26,
# h_k_ 19/24 (79%), and (2026-12-07) h_l_ 7/20 (35%: trainers, GANs, VAEs, diffusion, RL, Lightning-style, written
# as longer programs) and h_m_ 21/22 (95%: short snippets); 0 false alarms on their clean programs. After general
# fixes found with L (TL403, TL404, TL405, TL414, TL416, TL417) the corpus is at 309 of 322 (96%), L at 12/20.
# 2026-12-08, h_n_ (trainer classes with AMP and accumulation, GANs, VAEs, diffusion, RL, graph networks, Lightning-
# style, short snippets): 14/20 (70%) blind, 0 false alarms on its 10 clean programs; 17/20 after the general fixes
# it led to (TL407 across a trainer's methods, TL414 and TL416 through methods the loop calls), which also found
# one more of L (13/20). The corpus: 327 of 342 (95.6%); N's three misses (TL202 through a replay buffer, TL306
# through a collate_fn that builds lists, TL406 through a scheduler kept in a dict a hook steps) stay in it.
RECALL_FLOOR = 0.955


def test_every_expected_code_is_a_rule():
    codes = {rule.code for rule in ALL_RULES}
    for program in PROGRAMS:
        assert program.expected <= codes, program.path.name


def test_recall_on_the_buggy_programs_stays_above_the_floor():
    checker = Checker()
    buggy = [p for p in PROGRAMS if not p.clean]
    missed = [p.path.name for p in buggy if not reported(p, checker) & p.expected]
    recall = 1 - len(missed) / len(buggy)
    assert recall >= RECALL_FLOOR, f"recall {recall:.0%} below {RECALL_FLOOR:.0%}; missed: {missed}"
