"""Notebook benchmark: the editor's latency from a keystroke in one cell to that cell's diagnostics, on a 50-cell
notebook made of a real 1,000-line file (the one nearest to ``check_bench.py``'s that has 50 top-level statements,
cut into cells at top-level statements).

    python bench/notebook_bench.py                 # 60 edits in a middle cell, default debounce and none
    python bench/notebook_bench.py --cells 50 --edits 100

Each edit types one character into a comment on the first line of a cell in the middle of the notebook
(``notebookDocument/didChange`` with the cell's text change, as VS Code sends it); the time runs until the server
publishes that cell's diagnostics for the new cell version. The whole notebook is checked as one program each
time, so the figure compares with ``check_bench.py``'s 1,000-line file.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import itertools
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types

from check_bench import started_client, thousand_line_file

ROOT = Path(__file__).resolve().parent.parent


def cells_of(text: str, count: int) -> list[str]:
    """``text`` cut into about ``count`` cells, each a run of whole top-level statements."""
    body = ast.parse(text).body
    lines = text.splitlines()
    # A decorated definition starts at its first decorator (its lineno is the def's): no cut between them.
    starts = [min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", []))]) - 1 for s in body]
    step = max(1, len(starts) // count)
    cuts = [0, *starts[step::step][: count - 1], len(lines)]
    cells = ["\n".join(lines[a:b]).strip("\n") for a, b in itertools.pairwise(cuts)]
    return [cell for cell in cells if cell.strip()]


async def latency(text: str, cell_count: int, edits: int, debounce_ms: int | None) -> tuple[int, list[float]]:
    sources = cells_of(text, cell_count)
    client, published, warm = await started_client(debounce_ms, notebooks=True)
    await asyncio.wait_for(warm.wait(), timeout=300)
    uri = "file:///bench/fifty_cells.ipynb"
    cells = [f"vscode-notebook-cell:/bench/fifty_cells.ipynb#cell{index}" for index in range(len(sources))]
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=c) for c in cells],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=c, language_id="python", version=1, text=s)
                for c, s in zip(cells, sources, strict=True)
            ],
        )
    )
    edited = cells[len(cells) // 2]
    await asyncio.sleep(2.0)  # the first check of the notebook, and the index built beside it
    samples = []
    for version in range(2, edits + 2):
        change = types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(0, 0), types.Position(0, 0)), text="#" if version % 2 else " "
        )
        sent = time.perf_counter()
        client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(uri=uri, version=version),
                change=types.NotebookDocumentChangeEvent(
                    cells=types.NotebookDocumentCellChanges(
                        text_content=[
                            types.NotebookDocumentCellContentChanges(
                                document=types.VersionedTextDocumentIdentifier(uri=edited, version=version),
                                changes=[change],
                            )
                        ]
                    )
                ),
            )
        )
        while (edited, version) not in published:
            await asyncio.sleep(0.001)
        samples.append((published[(edited, version)] - sent) * 1000)
        await asyncio.sleep(0.05)  # typing pace: each edit is checked on its own
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return len(sources), samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT / ".corpus")
    parser.add_argument("--cells", type=int, default=50)
    parser.add_argument("--edits", type=int, default=60)
    args = parser.parse_args()
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}; run: bash ../shared/tools/real-corpus.sh {args.corpus}", file=sys.stderr)
        return 2
    path, text = thousand_line_file(args.corpus, min_statements=args.cells)
    for debounce in (None, 0):
        count, samples = asyncio.run(latency(text, args.cells, args.edits, debounce))
        samples.sort()
        label = "default debounce" if debounce is None else f"debounce {debounce} ms"
        print(
            f"cell edit -> that cell's publishDiagnostics, {count} cells of {path.name} ({len(text.splitlines())} "
            f"lines), {args.edits} edits, {label}: p50 {statistics.median(samples):.1f} ms, "
            f"p95 {samples[int(len(samples) * 0.95) - 1]:.1f} ms, max {samples[-1]:.1f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
