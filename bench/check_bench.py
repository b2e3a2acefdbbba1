"""Diagnostics benchmark: ``torchls check`` throughput on the real-world corpus, and the editor's latency from
``didChange`` to ``publishDiagnostics`` on a 1,000-line file.

    python bench/check_bench.py                      # both, on .corpus (see ../shared/tools/real-corpus.sh)
    python bench/check_bench.py --jobs 1 2           # throughput with 1 and 2 worker processes
    python bench/check_bench.py --latency-only --edits 100

Throughput counts every line of every ``.py`` file (comments and blank lines included), as ``wc -l`` would, and
is measured end to end through the same code ``torchls check`` runs (reading, parsing, all rules, reporting).
For scale (measured on this project's machines): TorchFix 0.7 checks timm's 141k lines in 196 s (~720 lines/s);
``ast.parse`` plus a full walk runs at ~64k lines/s per core.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from torchls.batch import discover, run

ROOT = Path(__file__).resolve().parent.parent


def throughput(corpus: Path, jobs_list: list[int]) -> None:
    files, _ = discover([str(corpus)])
    lines = sum(p.read_bytes().count(b"\n") + 1 for p in files)
    print(f"throughput: {len(files)} files, {lines} lines in {corpus}")
    for jobs in jobs_list:
        started = time.perf_counter()
        findings = sum(len(report.findings) for report in run(files, jobs=jobs))
        elapsed = time.perf_counter() - started
        print(f"  jobs={jobs}: {elapsed:6.1f} s  {lines / elapsed:9,.0f} lines/s  ({findings} findings)")


def thousand_line_file(corpus: Path, min_statements: int = 0) -> tuple[Path, str]:
    """A real file cut to its first 1,000 lines at a top-level statement, so it still parses; with
    ``min_statements``, the nearest one that has that many top-level statements (cells for notebook_bench.py)."""
    candidates = sorted(corpus.rglob("*.py"), key=lambda p: abs(p.read_bytes().count(b"\n") - 1100))
    for path in candidates:
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) < 1000:
            continue
        cut = 1000
        while cut < len(lines) and lines[cut][:1] in (" ", "\t", ")", "]", "}"):
            cut += 1
        text = "\n".join(lines[:cut]) + "\n"
        try:
            tree = compile(text, str(path), "exec", flags=ast.PyCF_ONLY_AST)
        except SyntaxError:
            continue
        if len(tree.body) < min_statements:
            continue
        return path, text
    raise SystemExit("no file of 1,000 lines in the corpus")


async def started_client(
    debounce_ms: int | None, notebooks: bool = False
) -> tuple[LanguageClient, dict[tuple[str, int], float], asyncio.Event]:
    """torchls started as an editor starts it, initialized with ``debounce_ms`` (None: the default) and, with
    ``notebooks``, notebook sync; returns it, when each (document, version) got its diagnostics, and an event set
    once the warm-up has ended. Shared with notebook_bench.py."""
    client = LanguageClient("torchls-bench", "1")
    published: dict[tuple[str, int], float] = {}
    warm = asyncio.Event()

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _create(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.PROGRESS)
    def _progress(params: types.ProgressParams) -> None:
        if isinstance(params.value, dict) and params.value.get("kind") == "end":
            warm.set()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _published(params: types.PublishDiagnosticsParams) -> None:
        if params.version is not None:
            published[(params.uri, params.version)] = time.perf_counter()

    await client.start_io(sys.executable, "-m", "torchls", "serve")
    options = {"diagnostics": {"debounceMs": debounce_ms}} if debounce_ms is not None else None
    capabilities = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))
    if notebooks:
        capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
            synchronization=types.NotebookDocumentSyncClientCapabilities()
        )
    await client.initialize_async(types.InitializeParams(capabilities=capabilities, initialization_options=options))
    client.initialized(types.InitializedParams())
    return client, published, warm


async def latency(corpus: Path, edits: int, debounce_ms: int | None, during_warm_up: bool) -> None:
    path, text = thousand_line_file(corpus)
    client, published, warm = await started_client(debounce_ms)
    if not during_warm_up:
        # jedi reads torch on a background thread for the first seconds; measured apart (--during-warm-up).
        await asyncio.wait_for(warm.wait(), timeout=300)
    uri = "file:///bench/thousand_lines.py"
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text)))
    while (uri, 1) not in published:
        await asyncio.sleep(0.01)
    samples = []
    for version in range(2, edits + 2):
        # Type one character into a comment on the first line, as a user would, and time the answer.
        change = types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(0, 0), types.Position(0, 0)), text="#" if version % 2 else " "
        )
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(version=version, uri=uri), [change])
        )
        while (uri, version) not in published:
            await asyncio.sleep(0.001)
        samples.append((published[(uri, version)] - sent) * 1000)
        await asyncio.sleep(0.05)  # typing pace: each edit is checked on its own
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    print("  slowest five (ms):", [round(x) for x in sorted(samples)[-5:]])
    samples.sort()
    label = "default debounce" if debounce_ms is None else f"debounce {debounce_ms} ms"
    if during_warm_up:
        label += ", while jedi warms up"
    print(
        f"didChange -> publishDiagnostics on {path.name} (1,000+ lines), {edits} edits, {label}: "
        f"p50 {statistics.median(samples):.1f} ms, p95 {samples[int(len(samples) * 0.95) - 1]:.1f} ms, "
        f"max {samples[-1]:.1f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT / ".corpus")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--edits", type=int, default=60)
    parser.add_argument("--latency-only", action="store_true")
    parser.add_argument("--throughput-only", action="store_true")
    parser.add_argument("--during-warm-up", action="store_true", help="also time edits made while jedi warms up")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}; run: bash ../shared/tools/real-corpus.sh {args.corpus}", file=sys.stderr)
        return 2
    if not args.latency_only:
        throughput(args.corpus, args.jobs)
    if not args.throughput_only:
        asyncio.run(latency(args.corpus, args.edits, None, during_warm_up=False))
        asyncio.run(latency(args.corpus, args.edits, 0, during_warm_up=False))
        if args.during_warm_up:
            asyncio.run(latency(args.corpus, min(args.edits, 20), None, during_warm_up=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
