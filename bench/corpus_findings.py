"""Precision check on real code: every finding ``torchls check`` reports on the real-world corpus, against the
verdicts recorded in ``bench/corpus_verdicts.md``.

    bash ../shared/tools/real-corpus.sh .corpus
    python bench/corpus_findings.py                # lists findings; exit 1 when one has no recorded verdict

The corpus is code nobody on this project wrote (timm, torchvision, diffusers, lightning, ...). A finding there is
either a real problem (recorded with the reasoning) or a false positive to fix in the rule. The verdict file lists
each finding as ``- `path:line` CODE — verdict``; findings that disappear are reported too, so the file stays true.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from torchls.batch import discover, run

ROOT = Path(__file__).resolve().parent.parent
VERDICTS = Path(__file__).resolve().parent / "corpus_verdicts.md"
ENTRY = re.compile(r"^- `(?P<where>[^`]+:\d+)` (?P<code>TL\d{3})\b")


def recorded(path: Path) -> set[tuple[str, str]]:
    if not path.exists():
        return set()
    found = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        match = ENTRY.match(line)
        if match:
            found.add((match.group("where"), match.group("code")))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT / ".corpus")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}; run: bash ../shared/tools/real-corpus.sh {args.corpus}", file=sys.stderr)
        return 2
    files, _ = discover([str(args.corpus)])
    current: dict[tuple[str, str], str] = {}
    for report in run(files):
        relative = Path(report.path).resolve().relative_to(args.corpus.resolve()).as_posix()
        for finding in report.findings:
            key = (f"{relative}:{finding.span.start.line + 1}", finding.code)
            current[key] = finding.message
    verdicts = recorded(VERDICTS)
    print(f"{len(files)} files, {len(current)} findings, {len(verdicts)} recorded verdicts")
    for (where, code), message in sorted(current.items()):
        status = "recorded" if (where, code) in verdicts else "NO VERDICT"
        print(f"  [{status}] {where} {code} {message}")
    missing = sorted(set(current) - verdicts)
    stale = sorted(verdicts - set(current))
    for where, code in stale:
        print(f"  [gone] {where} {code}: recorded in {VERDICTS.name} but no longer reported")
    return 1 if missing or stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
