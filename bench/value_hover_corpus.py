"""Hover on tensor variables, on real code: what the analysis (core/values_at.py) would show, and what it costs.

    python bench/value_hover_corpus.py                  # .corpus (see ../shared/tools/real-corpus.sh)
    python bench/value_hover_corpus.py --corpus DIR

For every file that mentions torch it runs the analysis a hover uses, describes every value it would show and
classifies each: a tensor with a full shape, one with only trailing dims or dtype/device, a layer; any exception is an
error (the hover must never fail). It prints those counts and the analysis time per file (p50/p95/max), which a hover
never waits for: the analysis runs in a thread and the next hover uses it.
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

from torchls.core.parsing import parse_tolerant
from torchls.core.text import SourceText
from torchls.core.values import TensorValue
from torchls.core.values_at import FileValues, describe

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT / ".corpus")
    args = parser.parse_args()
    counts: collections.Counter[str] = collections.Counter()
    times: list[float] = []
    errors: list[str] = []
    for path in sorted(args.corpus.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "torch" not in text:
            continue
        started = time.perf_counter()
        try:
            values = FileValues(parse_tolerant(text).tree, SourceText(text))
            for found in values.all():
                if describe(found, values.source) is None:
                    counts["nothing shown"] += 1
                elif not isinstance(found.value, TensorValue):
                    counts["layer"] += 1
                elif found.value.shape is not None:
                    counts["tensor with its full shape"] += 1
                else:
                    counts["tensor, trailing dims / dtype / device only"] += 1
        except Exception as error:
            errors.append(f"{path}: {error!r}")
        times.append(time.perf_counter() - started)
    times.sort()
    print(f"{len(times)} files that mention torch in {args.corpus}")
    for kind, count in counts.most_common():
        print(f"  {kind}: {count}")
    print(f"  errors: {len(errors)}")
    if times:
        p50, p95 = times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.95))]
        print(f"analysis per file: p50 {p50 * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, max {times[-1] * 1000:.0f} ms")
    for line in errors[:20]:
        print("  " + line)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
