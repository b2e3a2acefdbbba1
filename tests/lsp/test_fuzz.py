"""A short fixed-seed pass of the LSP fuzzer (bench/fuzz_lsp.py) against the real server: no crash, hang,
unanswered request, internal error (-32603), stdout that is not JSON-RPC, or range outside the document.

Longer runs with other seeds: ``.venv/bin/python bench/fuzz_lsp.py --seed 1 --steps 1000``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from fuzz_lsp import FAILING, failures, fuzz, summary

SEED = 7
STEPS = 150


def test_a_short_fuzzing_pass_finds_no_failing_problem():
    stats = fuzz(SEED, STEPS, timeout=10.0)
    assert stats.steps == STEPS, summary(stats, SEED)
    assert stats.answered == stats.sent, summary(stats, SEED)
    assert not failures(stats), summary(stats, SEED)
    assert set(FAILING) >= {"crash", "hang", "unanswered", "internal-error", "stdout-corruption", "invalid-range"}
