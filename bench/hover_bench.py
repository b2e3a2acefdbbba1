"""Hover benchmark: start a language server, open real PyTorch files, hover every torch symbol in them.

Prints, per server: time to the ``initialize`` response, the first hover after ``initialized`` (cold), warm
hover latency p50/p95/max, how many hovers returned something, and the server's peak memory (VmHWM of the
server process and, separately, of its child processes such as jedi's environment helper), and the whole process
tree's resident memory sampled every 0.2 s ("tree peak MB": children that came and went count too).

    python bench/hover_bench.py                          # torchls on 12 timm files
    python bench/hover_bench.py --compare jedi-language-server
    python bench/hover_bench.py --corpus .corpus --package diffusers --files 20
    python bench/hover_bench.py --just-opened 3 --files 20 --compare jedi-language-server

``--just-opened N``: after the warm-up has ended, each file is opened and N of its references (spread over the
file, tensor methods included) are hovered at once, as a user does who opens a file and points at something;
those hovers are reported on their own, then the file is closed. No other hover is made. The "open->hover"
columns are the first hover after each ``didOpen``.

``--new-environment``: every server starts with empty caches (its own, jedi's and parso's), as on the first
start after installing: the warm-up column is then the warm-up a new user waits for.

"Torch symbols" are the names that resolve to ``torch.*`` through the file's own imports (``torch.cat``,
``nn.Conv2d``, ``F.relu``, ``from torch.nn import Linear``), found with Python's ``ast``; each is hovered at
its last identifier. The same positions go to every server, so the figures compare like with like.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from harness import (
    ROOT,
    SERVERS,
    TorchImports,
    TreeMemory,
    compile_torchls,
    first_end,
    peak_memory_mb,
    percentile,
    pick_files,
    start_server,
    stop_server,
    utf16_column,
    wait_for_warm_up,
)


@dataclass
class Result:
    server: str
    initialize_ms: float = 0.0
    first_hover_ms: float = 0.0
    warm_ms: list[float] = field(default_factory=list)
    answered: int = 0
    total: int = 0
    rss_server_mb: float = 0.0
    rss_children_mb: float = 0.0
    warm_up_s: float = 0.0  # from initialized until every progress report ended
    ready_s: float = 0.0  # ... until the first one ended (torchls: "已就绪", before the entries' signatures)
    after_open_ms: list[float] = field(default_factory=list)  # the first hover after each didOpen
    tree_peak_mb: float = 0.0  # the whole process tree's resident memory, sampled (harness.TreeMemory)


def tensor_method_names() -> frozenset[str]:
    """Names of the Tensor methods and attributes the knowledge base has cards for (``view``, ``shape``...)."""
    root = ROOT / "knowledge" / "torch" / "Tensor"
    return frozenset(path.stem for path in root.glob("*.yaml"))


def torch_positions(text: str, methods: frozenset[str] = frozenset()) -> list[tuple[int, int]]:
    """(line, UTF-16 column) at the start of the last identifier of every torch reference.

    With ``methods``, also ``receiver.method`` where the receiver is not an import (``x.view``, ``y.shape``):
    the hovers that need type inference, mostly answered by jedi.
    """
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    qualify = TorchImports(tree).qualify

    lines = text.splitlines()
    found = set()
    for node in ast.walk(tree):
        wanted = qualify(node) if isinstance(node, ast.Attribute | ast.Name) else None
        if not wanted and isinstance(node, ast.Attribute) and node.attr in methods:
            wanted = qualify(node.value) is None
        if wanted and isinstance(node.ctx, ast.Load):
            line = (node.end_lineno or node.lineno) - 1
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            found.add((line, utf16_column(lines[line], node.end_col_offset or 0) - len(name)))
    return sorted(found)


async def run_server(
    name: str,
    files: list[Path],
    workspace: Path,
    methods: frozenset[str],
    just_opened: int = 0,
    new_environment: Path | None = None,
) -> Result:
    result = Result(name)
    capabilities = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown])
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )
    client, result.initialize_ms = await start_server(name, capabilities, workspace, new_environment=new_environment)
    tree = TreeMemory(client._server.pid).start()  # type: ignore[union-attr]
    if just_opened:
        initialized = time.perf_counter()
        result.warm_up_s = await wait_for_warm_up(client.progress, timeout=300)  # type: ignore[attr-defined]
        result.ready_s = first_end(client.progress, initialized)  # type: ignore[attr-defined]
    first = not just_opened  # the first hover after start-up, before the warm-up ends, is reported on its own
    for path in files:
        text = path.read_text(encoding="utf-8")
        uri = path.as_uri()
        positions = _spread(torch_positions(text, tensor_method_names()), just_opened) if just_opened else None
        if positions == []:
            continue
        client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text)))
        opened = True
        for line, character in positions if positions is not None else torch_positions(text, methods):
            began = time.perf_counter()
            hover = await client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, character))
            )
            elapsed = (time.perf_counter() - began) * 1000
            if first:
                result.first_hover_ms = elapsed
                first = False
            else:
                result.warm_ms.append(elapsed)
            if opened:
                result.after_open_ms.append(elapsed)
                opened = False
            result.total += 1
            result.answered += hover is not None
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    result.rss_server_mb, result.rss_children_mb = peak_memory_mb(client)
    result.tree_peak_mb = tree.stop()
    await stop_server(client)
    return result


def _spread(positions: list[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """``count`` of the positions, spread over the file (for ``--just-opened``)."""
    step = max(1, len(positions) // count)
    return positions[step // 2 :: step][:count]


async def _start_and_initialize(command: list[str]) -> float:
    client = LanguageClient("torchls-bench", "1")
    started = time.perf_counter()
    await client.start_io(*command)
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    elapsed = (time.perf_counter() - started) * 1000
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return elapsed


def measure_startup(name: str, command: list[str], runs: int) -> None:
    """Process start to the ``initialize`` response, ``runs`` times (the hover run measures it only once)."""
    times = sorted(asyncio.run(_start_and_initialize(command)) for _ in range(runs))
    print(
        f"{name:<22} start-up to initialize response over {runs} runs: "
        f"min {times[0]:.0f} ms, median {statistics.median(times):.0f} ms, max {times[-1]:.0f} ms"
    )


def print_table(results: list[Result]) -> None:
    header = (
        f"{'server':<22}{'init ms':>9}{'1st hover':>11}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}"
        f"{'hovers':>9}{'answered':>10}{'RSS MB':>9}{'+children':>11}{'ready s':>9}{'warm-up s':>11}"
        f"{'open->hover p50/max':>21}{'tree peak MB':>14}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.server:<22}{r.initialize_ms:>9.0f}{r.first_hover_ms:>11.0f}{percentile(r.warm_ms, 50):>9.1f}"
            f"{percentile(r.warm_ms, 95):>9.1f}{max(r.warm_ms, default=float('nan')):>9.0f}{r.total:>9}"
            f"{r.answered:>10}{r.rss_server_mb:>9.0f}{r.rss_children_mb:>11.0f}{r.ready_s:>9.1f}{r.warm_up_s:>11.1f}"
            f"{percentile(r.after_open_ms, 50):>13.0f} / {max(r.after_open_ms, default=float('nan')):<5.0f}"
            f"{r.tree_peak_mb:>14.0f}"
        )
    if len(results) == 2 and results[0].warm_ms and results[1].warm_ms:
        a, b = results
        ratio = percentile(b.warm_ms, 95) / max(percentile(a.warm_ms, 95), 1e-9)
        print(f"\nwarm p95: {b.server} / {a.server} = {ratio:.1f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT / ".corpus", help="output of real-corpus.sh")
    parser.add_argument("--package", default="timm")
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--compare", choices=sorted(set(SERVERS) - {"torchls"}), help="also run this server")
    parser.add_argument("--startup-runs", type=int, default=5, help="separate start-ups to time (0: skip)")
    parser.add_argument(
        "--new-environment", action="store_true", help="start every server with empty caches (torchls, jedi, parso)"
    )
    parser.add_argument(
        "--tensor-methods", action="store_true", help="also hover x.view, y.shape... on non-import receivers (jedi)"
    )
    parser.add_argument(
        "--just-opened", type=int, default=0, metavar="N", help="after warm-up, hover N places right after each open"
    )
    args = parser.parse_args()
    if not (args.corpus / args.package).is_dir():
        print(f"no corpus at {args.corpus}; run: bash ../shared/tools/real-corpus.sh {args.corpus}", file=sys.stderr)
        return 2
    compile_torchls()
    files = pick_files(args.corpus, args.package, args.files, lambda text: len(torch_positions(text)))
    methods = tensor_method_names() if args.tensor_methods else frozenset()
    symbols = sum(len(torch_positions(p.read_text(encoding="utf-8"), methods)) for p in files)
    print(f"{len(files)} files from {args.package}, {symbols} torch symbols, python {sys.executable}\n")
    names = ["torchls"] + ([args.compare] if args.compare else [])
    workspace = args.corpus / args.package
    results = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"{name}-new-env-") as fresh:
            new_environment = Path(fresh) if args.new_environment else None
            results.append(asyncio.run(run_server(name, files, workspace, methods, args.just_opened, new_environment)))
    if args.just_opened:
        print(f"hovers right after didOpen, {args.just_opened} per file, after the warm-up ended:")
    print_table(results)
    if args.startup_runs:
        print()
        for name in names:
            measure_startup(name, SERVERS[name], args.startup_runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
