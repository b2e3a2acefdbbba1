"""Recall and false alarms of the diagnostics on realistic programs written for that purpose.

    python bench/pitfall_recall.py                 # recall by band, the programs missed, false alarms
    python bench/pitfall_recall.py --verify        # also run every program: buggy ones show their bug, clean ones run

``tests/fixtures/pitfalls/buggy/`` holds multi-function programs (30-80 lines: models with helper functions, blocks
sized by constructor arguments, Dataset/DataLoader pipelines, Lightning-style modules, notebook-style cells), each
with one real pitfall that running it shows (an exception, or a printed symptom: a loss that does not move, a
gradient that is zero); ``clean/`` holds near misses that run correctly. Each file's docstring says::

    expect: TL301            (``none`` for a clean program)
    observed: <what running it showed>

A buggy program counts as found when ``torchls check`` reports the expected code anywhere in it; any finding in a
clean program is a false alarm (as is a finding of another code in a buggy one, listed apart). ``--verify`` runs each
program on the CPU in a subprocess with a time limit and checks that a buggy one fails or prints its symptom line
(``SYMPTOM:``) and a clean one exits 0 without one.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from torchls.core.checker import Checker

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "pitfalls"
_EXPECT = re.compile(r"^expect:\s*(?P<codes>[A-Z0-9, ]+|none|clean)\s*$", re.MULTILINE)
_RUN_SECONDS = 60


@dataclass(frozen=True)
class Program:
    path: Path
    expected: frozenset[str]  # empty for a clean program

    @property
    def clean(self) -> bool:
        return not self.expected


def programs(corpus: Path = CORPUS) -> list[Program]:
    """Every program of the corpus with what it expects; a file without an ``expect:`` line is an error."""
    found = []
    for path in sorted(corpus.rglob("*.py")):
        match = _EXPECT.search(path.read_text(encoding="utf-8"))
        if match is None:
            raise SystemExit(f"{path}: no 'expect:' line in its docstring")
        codes = match.group("codes").strip()
        found.append(
            Program(path, frozenset() if codes in ("none", "clean") else frozenset(c.strip() for c in codes.split(",")))
        )
    return found


def reported(program: Program, checker: Checker) -> set[str]:
    return {finding.code for finding in checker.check(program.path.read_text(encoding="utf-8")).findings}


def verify(program: Program) -> str | None:
    """None when running the program shows what its docstring says (see the module docstring), else why not."""
    try:
        run = subprocess.run(
            [sys.executable, "-I", str(program.path)],
            capture_output=True,
            text=True,
            timeout=_RUN_SECONDS,
            cwd=program.path.parent,
        )
    except subprocess.TimeoutExpired:
        return f"did not finish in {_RUN_SECONDS} s"
    symptom = "SYMPTOM:" in run.stdout
    if program.clean:
        if run.returncode != 0:
            return f"a clean program failed: {run.stderr.strip().splitlines()[-1:]}"
        return "a clean program printed a SYMPTOM line" if symptom else None
    if run.returncode == 0 and not symptom:
        return "a buggy program ran without failing or printing its SYMPTOM line"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--verify", action="store_true", help="run every program and check its docstring")
    args = parser.parse_args()
    checker = Checker()
    found_by_band: dict[str, list[bool]] = collections.defaultdict(list)
    missed, false_alarms, other_codes, unverified = [], [], [], []
    every = programs(args.corpus)
    for program in every:
        codes = reported(program, checker)
        if program.clean:
            if codes:
                false_alarms.append(f"{program.path.relative_to(args.corpus)}: {sorted(codes)}")
        else:
            hit = bool(codes & program.expected)
            for code in program.expected:
                found_by_band[code[:3]].append(hit)
            if not hit:
                missed.append(f"{program.path.relative_to(args.corpus)}: expected {sorted(program.expected)}")
            if codes - program.expected:
                other_codes.append(f"{program.path.relative_to(args.corpus)}: also {sorted(codes - program.expected)}")
        if args.verify and (problem := verify(program)):
            unverified.append(f"{program.path.relative_to(args.corpus)}: {problem}")
    buggy = [p for p in every if not p.clean]
    hits = sum(1 for p in buggy if f"{p.path.relative_to(args.corpus)}: expected {sorted(p.expected)}" not in missed)
    print(f"{len(buggy)} buggy programs, {len(every) - len(buggy)} clean ones")
    recall = hits / max(len(buggy), 1)
    print(f"recall: {hits}/{len(buggy)} = {recall:.0%}; false alarms: {len(false_alarms)} clean programs")
    for band, results in sorted(found_by_band.items()):
        print(f"  {band}x: {sum(results)}/{len(results)}")
    for title, lines in (
        ("missed", missed),
        ("false alarms", false_alarms),
        ("other codes reported in buggy programs", other_codes),
        ("programs that do not show what their docstring says", unverified),
    ):
        if lines:
            print(f"\n{title}:")
            for line in lines:
                print(f"  {line}")
    return 1 if unverified else 0


if __name__ == "__main__":
    raise SystemExit(main())
