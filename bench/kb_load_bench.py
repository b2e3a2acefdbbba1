"""Knowledge-base load time at server start-up: the whole shipped handbook, in a fresh Python process each run.

    python bench/kb_load_bench.py               # 20 runs with the compiled cache, 5 parsing every YAML file
    python bench/kb_load_bench.py --runs 50 --no-cache-runs 0

Each run starts a new interpreter (as the server does) and times the import of the knowledge-base code plus
``KnowledgeBase.load()``: with a valid cache that is one pickle read, without it every YAML file is parsed and
validated. The interpreter start itself is not counted. CPU time is printed next to wall time: on a busy
machine the wall figures grow, the CPU ones much less. The cache lives in a temporary folder, so the runs
neither use nor disturb the user's own cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# Runs in the child: times what the server does to have its knowledge base, and its peak memory.
_CHILD = """
import json, resource, time
started, cpu_started = time.perf_counter(), time.process_time()
from torchls.kb.base import KnowledgeBase
kb = KnowledgeBase.load(use_cache={use_cache})
elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = {{"ms": elapsed * 1000, "cpu_ms": cpu * 1000, "entries": len(kb), "errors": len(kb.errors)}}
print(json.dumps({{**result, "rss_kb": peak_kb}}))
"""


def _run(use_cache: bool, cache_dir: Path) -> dict:
    env = {**os.environ, "TORCHLS_CACHE_DIR": str(cache_dir)}
    completed = subprocess.run(
        [sys.executable, "-c", _CHILD.format(use_cache=use_cache)], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(completed.stdout)


def _report(label: str, runs: list[dict]) -> None:
    times = sorted(r["ms"] for r in runs)
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    cpu = statistics.median(r["cpu_ms"] for r in runs)
    print(
        f"{label:<28} n={len(times):<3} wall p50 {statistics.median(times):7.1f} ms  p95 {p95:7.1f} ms  "
        f"max {times[-1]:7.1f} ms  (CPU p50 {cpu:.1f} ms)  peak RSS {max(r['rss_kb'] for r in runs) / 1024:.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="runs with a warm cache")
    parser.add_argument("--no-cache-runs", type=int, default=5, help="runs that parse every YAML file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="torchls-kb-bench-") as folder:
        cache_dir = Path(folder)
        first = _run(True, cache_dir)  # writes the cache, as the first start-up after an install does
        entries, errors = first["entries"], first["errors"]
        print(f"{entries} entries, {errors} errors; first load (parse + write cache) {first['ms']:.1f} ms")
        cache_files = list(cache_dir.glob("kb-*.pickle"))
        size = sum(p.stat().st_size for p in cache_files)
        print(f"cache: {len(cache_files)} file(s), {size / 1024:.0f} KB")
        _report("load with cache", [_run(True, cache_dir) for _ in range(args.runs)])
        if args.no_cache_runs:
            _report("load without cache (YAML)", [_run(False, cache_dir) for _ in range(args.no_cache_runs)])


if __name__ == "__main__":
    main()
