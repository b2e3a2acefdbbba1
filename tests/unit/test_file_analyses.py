"""Rules share typed per-file analyses (``ctx.analysis(Kind)``), and what those say does not depend on which rules
are selected: the model moves in particular are recorded as the walk evaluates each call, by the checker itself,
not by whichever device rules happen to run (each of them used to record the moves it visited)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchls.core.checker import Checker
from torchls.core.findings import Finding
from torchls.core.rules.base import Analysis, Context, Rule
from torchls.core.rules.device.common import ModelMoves

# The finding rests on the recorded move: its "see also" place and its fix (``.cuda()``) come from it.
PROGRAM = """\
import torch
from torch import nn

model = nn.Linear(4, 2)
model.cuda()
x = torch.randn(3, 4)
model(x)
"""


def _keys(findings: list[Finding], prefix: str) -> list[tuple]:
    return [(f.code, f.span, f.message, f.fix, f.related) for f in findings if f.code.startswith(prefix)]


class _MoveProbe(Rule):
    """Reports each recorded model move (a test rule that reads moves and never records one)."""

    code = "TL299"
    name = "move-probe"
    node_types = (ast.Call,)

    def finish(self, ctx: Context) -> None:
        for move in ctx.analysis(ModelMoves).by_call.values():
            ctx.report(move.node, f"moved to {move.device}")


def _probe(extra: list[type[Rule]]) -> list[int]:
    checker = Checker()
    checker.rule_classes = [_MoveProbe, *extra]
    return [f.span.start.line for f in checker.check(PROGRAM).findings if f.code == _MoveProbe.code]


def test_a_device_rule_selected_alone_reports_what_it_reports_beside_all_rules():
    everything = Checker().check(PROGRAM).findings
    (finding,) = _keys(everything, "TL202")
    assert finding[3] is not None and ".cuda()" in finding[3].title, "the fix spells the recorded move"
    assert any(r.span.start.line == 4 for r in finding[4]), "the related place is the move (0-based line 4)"
    for select in (["TL202"], ["TL2"]):
        assert _keys(Checker(select=select).check(PROGRAM).findings, "TL202") == [finding]


def test_a_rule_that_reads_moves_sees_them_without_a_device_rule_that_records_them():
    alone = _probe([])
    assert alone == [4], "the move is recorded although no device rule runs"
    assert alone == _probe(Checker().rule_classes)


@dataclass(frozen=True, slots=True)
class _Counted(Analysis):
    calls: int

    computed = 0  # how many times compute ran, over every file

    @classmethod
    def compute(cls, ctx: Context) -> _Counted:
        _Counted.computed += 1
        return cls(sum(isinstance(n, ast.Call) for n in ast.walk(ctx.tree)))


class _AsksTwice(Rule):
    code = "TL298"
    name = "asks-twice"
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        assert ctx.analysis(_Counted) is ctx.analysis(_Counted)


def test_an_analysis_is_computed_once_per_file_on_first_use():
    checker = Checker()
    checker.rule_classes = [_AsksTwice]
    before = _Counted.computed
    checker.check(PROGRAM)
    checker.check(PROGRAM)
    assert _Counted.computed - before == 2
