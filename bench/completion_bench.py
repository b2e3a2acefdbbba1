"""Completion, completionItem/resolve and signature-help benchmark on real PyTorch files, server against server.

For every picked file the same requests go to each server, in the same order:

* completion right after the dot of each torch namespace access (``torch.|cat``, ``nn.|Conv2d``, ``F.|relu``) and of
  each tensor or module method call on a plain variable (``x.|view``, ``self.norm.|forward``, ``model.|eval``): the
  document is the real file, the cursor sits where the user would have typed the dot;
* completionItem/resolve of the item the file really uses there (``cat``), as an editor does when it is selected;
* signature help just inside the parenthesis of each call to a torch callable, and at its second argument.

The client announces what VS Code and nvim-cmp announce (snippets, label details, lazy resolve of documentation),
so jedi-language-server works as it does in those editors. Each file is opened ``--settle`` seconds (1 s) before
its first request, as a user reads a file before typing in it; the first request after start-up has no such
pause. Prints p50/p95/max per method, the first completion
after start-up (sent right after ``initialized``, before any warm-up could finish), time to the ``initialize``
response, and the peak memory of each server and its child processes.

    python bench/completion_bench.py                                # torchls on 6 timm files
    python bench/completion_bench.py --compare jedi-language-server
    python bench/completion_bench.py --files 12 --per-file 20 --fresh-cache
    python bench/completion_bench.py --typing      # as if the dot had just been typed (see below)

``--typing``: before each completion the line is cut just after the dot (``attn = attn.``), as the editor sends it
when the user has just typed the dot, and restored afterwards (``didChange`` both times), 0.3 s before the cut at
the next place, as a user moves on. Each such request then meets a new document version with a syntax error on
the cursor's line, as while typing.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types

from harness import (
    ROOT,
    SERVERS,
    TorchImports,
    compile_torchls,
    peak_memory_mb,
    percentile,
    pick_files,
    start_server,
    stop_server,
    utf16_column,
    wait_for_warm_up,
)

METHODS = ("completion", "resolve", "signatureHelp")

# Methods of tensors, modules and optimizers that real code calls on plain variables.
VALUE_MEMBERS = frozenset(path.stem for path in (ROOT / "knowledge" / "torch" / "Tensor").glob("*.yaml")) | frozenset(
    "parameters named_parameters modules children eval train to cuda cpu state_dict load_state_dict "
    "zero_grad step forward register_buffer apply".split()
)


@dataclass
class Requests:
    completions: list[tuple[int, int, str]] = field(default_factory=list)  # line, UTF-16 column, name used there
    signatures: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Result:
    server: str
    initialize_ms: float = 0.0
    first_completion_ms: float = 0.0
    first_completion_items: int = 0
    warm_up_s: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in METHODS})
    answered: dict[str, int] = field(default_factory=lambda: dict.fromkeys(METHODS, 0))
    rss_server_mb: float = 0.0
    rss_children_mb: float = 0.0
    failed: list[str] = field(default_factory=list)  # requests without an answer (timeout, error), and why
    exited: str | None = None  # how the server ended, when it ended during the run


def _spread(items: list, count: int) -> list:
    """``count`` items spread evenly over the list (stable, so every server gets the same ones)."""
    if len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def requests_for(text: str, per_file: int) -> Requests:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return Requests()
    imports = TorchImports(tree)
    lines = text.splitlines()
    namespace, values, calls = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            line = (node.end_lineno or node.lineno) - 1
            column = utf16_column(lines[line], node.end_col_offset or 0) - len(node.attr)
            owner = imports.qualify(node.value)
            if owner is not None and owner.rsplit(".", 1)[-1][:1].islower():
                namespace.add((line, column, node.attr))
            elif owner is None and node.attr in VALUE_MEMBERS and isinstance(node.value, ast.Name | ast.Attribute):
                values.add((line, column, node.attr))
        elif isinstance(node, ast.Call) and imports.qualify(node.func):
            end = node.func
            line = (end.end_lineno or end.lineno) - 1
            if (
                lines[line][len(lines[line].encode("utf-8")[: end.end_col_offset or 0].decode("utf-8", "replace")) :][
                    :1
                ]
                != "("
            ):
                continue  # a space or a line break before the parenthesis: skip rather than guess
            calls.add((line, utf16_column(lines[line], (end.end_col_offset or 0)) + 1))
            arguments = [*node.args, *node.keywords]
            if len(arguments) >= 2:
                second = arguments[1]
                second_line = second.lineno - 1
                calls.add((second_line, utf16_column(lines[second_line], second.col_offset)))
    half = max(1, per_file // 2)
    completions = sorted(_spread(sorted(namespace), half) + _spread(sorted(values), per_file - half))
    return Requests(completions, _spread(sorted(calls), per_file))


def _capabilities() -> types.ClientCapabilities:
    markdown = [types.MarkupKind.Markdown, types.MarkupKind.PlainText]
    return types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            completion=types.CompletionClientCapabilities(
                completion_item=types.ClientCompletionItemOptions(
                    snippet_support=True,
                    documentation_format=markdown,
                    label_details_support=True,
                    resolve_support=types.ClientCompletionItemResolveOptions(properties=["documentation", "detail"]),
                ),
                context_support=True,
            ),
            signature_help=types.SignatureHelpClientCapabilities(
                signature_information=types.ClientSignatureInformationOptions(
                    documentation_format=markdown,
                    parameter_information=types.ClientSignatureParameterInformationOptions(label_offset_support=True),
                    active_parameter_support=True,
                ),
                context_support=True,
            ),
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )


_REQUEST_TIMEOUT_SECONDS = 60.0  # a request unanswered this long counts as failed, at this latency


class _ServerExited(Exception):
    """The server process ended in the middle of the run."""


_MOVE_SECONDS = 0.3  # --typing: between finishing at one place and typing the dot at the next


def _items(result) -> list[types.CompletionItem]:
    if result is None:
        return []
    return list(result.items) if isinstance(result, types.CompletionList) else list(result)


async def run_server(
    name: str,
    files: list[tuple[Path, Requests]],
    workspace: Path,
    cache: Path | None,
    settle: float,
    verbose: bool = False,
    typing: bool = False,
) -> Result:
    result = Result(name)
    client, result.initialize_ms = await start_server(name, _capabilities(), workspace, cache)
    progress = client.progress  # type: ignore[attr-defined]

    opened: set[str] = set()

    def open_file(path: Path) -> str:
        uri = path.as_uri()
        if uri not in opened:
            text = path.read_text(encoding="utf-8")
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
            )
            opened.add(uri)
        return uri

    # The first request after start-up: what a user who types `torch.` at once waits for.
    first_path, first_requests = next((p, r) for p, r in files if r.completions)
    line, column, _ = first_requests.completions[0]
    uri = open_file(first_path)
    began = time.perf_counter()
    first = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(line, column))
    )
    result.first_completion_ms = (time.perf_counter() - began) * 1000
    result.first_completion_items = len(_items(first))
    result.warm_up_s = await wait_for_warm_up(progress, timeout=300)

    async def timed(method: str, request, where: str) -> object:
        began = time.perf_counter()
        try:
            answer = await asyncio.wait_for(request, _REQUEST_TIMEOUT_SECONDS)
        except Exception as error:  # no answer in time, an error response, the server gone: counted, not hidden
            answer = None
            result.failed.append(f"{method} at {where}: {type(error).__name__} {error}".strip())
        elapsed = (time.perf_counter() - began) * 1000
        result.latencies[method].append(elapsed)
        if verbose:
            print(f"  {name} {method:<14}{elapsed:8.1f} ms  {where}", file=sys.stderr)
        if client._server is not None and client._server.returncode is not None:  # type: ignore[union-attr]
            raise _ServerExited(client._server.returncode)  # type: ignore[union-attr]
        return answer

    versions: dict[str, int] = {}

    def change(uri: str, line: int, start: int, end: int, text: str) -> None:
        """Replace part of one line of an open document (``opened`` sent version 1)."""
        versions[uri] = versions.get(uri, 1) + 1
        edit = types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(line, start), types.Position(line, end)), text=text
        )
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=versions[uri], uri=uri), [edit]
            )
        )

    async def every_request() -> None:
        for path, requests in files:
            if path.as_uri() not in opened:
                open_file(path)
                await asyncio.sleep(settle)  # a user reads a file before typing in it
            uri = path.as_uri()
            document = types.TextDocumentIdentifier(uri)
            lines = path.read_text(encoding="utf-8").splitlines()

            def where(line: int, column: int, lines: list[str] = lines, path: Path = path) -> str:
                text = lines[line]
                cut = len(text.encode("utf-16-le")[: column * 2].decode("utf-16-le"))
                return f"{path.name}:{line + 1}: {text[:cut].strip()[-50:]}|{text[cut:].strip()[:30]}"

            for line, column, used in requests.completions:
                rest = lines[line].encode("utf-16-le")[column * 2 :].decode("utf-16-le")
                line_end = column + len(rest.encode("utf-16-le")) // 2
                if typing:
                    change(uri, line, column, line_end, "")  # the user has just typed the dot
                answer = await timed(
                    "completion",
                    client.text_document_completion_async(
                        types.CompletionParams(document, types.Position(line, column))
                    ),
                    where(line, column),
                )
                items = _items(answer)
                result.answered["completion"] += bool(items)
                chosen = next((item for item in items if item.label == used), None)
                if chosen is not None:
                    resolved = await timed("resolve", client.completion_item_resolve_async(chosen), used)
                    result.answered["resolve"] += resolved is not None and resolved.documentation is not None
                if typing:
                    change(uri, line, column, column, rest)  # back to the real file for the next place
                    await asyncio.sleep(_MOVE_SECONDS)  # the user moves to the next place
            for line, column in requests.signatures:
                answer = await timed(
                    "signatureHelp",
                    client.text_document_signature_help_async(
                        types.SignatureHelpParams(document, types.Position(line, column))
                    ),
                    where(line, column),
                )
                if verbose and not (answer and answer.signatures):
                    print("    (no signature help)", file=sys.stderr)
                result.answered["signatureHelp"] += bool(answer and answer.signatures)

    try:
        await every_request()
    except _ServerExited as exited:
        tail = "\n".join(getattr(client, "stderr_tail", []))
        result.exited = f"exited with code {exited.args[0]} during the run; the end of its stderr:\n{tail}"
        return result
    result.rss_server_mb, result.rss_children_mb = peak_memory_mb(client)
    await stop_server(client)
    return result


def print_table(results: list[Result]) -> None:
    header = f"{'server':<22}{'method':<15}{'requests':>9}{'answered':>10}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}"
    print(header)
    print("-" * len(header))
    for r in results:
        for method in METHODS:
            values = r.latencies[method]
            print(
                f"{r.server:<22}{method:<15}{len(values):>9}{r.answered[method]:>10}{percentile(values, 50):>9.1f}"
                f"{percentile(values, 95):>9.1f}{max(values, default=float('nan')):>9.1f}"
            )
    print()
    header = (
        f"{'server':<22}{'init ms':>9}{'1st completion ms':>19}{'items':>7}{'warm-up s':>11}"
        f"{'RSS MB':>9}{'+children':>11}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.server:<22}{r.initialize_ms:>9.0f}{r.first_completion_ms:>19.0f}{r.first_completion_items:>7}"
            f"{r.warm_up_s:>11.1f}{r.rss_server_mb:>9.0f}{r.rss_children_mb:>11.0f}"
        )
    for r in results:
        if r.exited:
            print(f"\n{r.server} {r.exited}")
        if r.failed:
            print(f"\n{r.server}: {len(r.failed)} requests without an answer (counted at the time waited):")
            for line in r.failed[:10]:
                print(f"  {line}")
    if len(results) == 2:
        a, b = results
        print()
        for method in METHODS:
            ours, theirs = percentile(a.latencies[method], 95), percentile(b.latencies[method], 95)
            if ours == ours and theirs == theirs:  # not NaN
                print(f"p95 {method}: {b.server} / {a.server} = {theirs / max(ours, 1e-9):.1f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT / ".corpus", help="output of real-corpus.sh")
    parser.add_argument("--package", default="timm")
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--per-file", type=int, default=10, help="completions and signature-help places per file")
    parser.add_argument("--compare", choices=sorted(set(SERVERS) - {"torchls"}), help="also run this server")
    parser.add_argument(
        "--settle", type=float, default=1.0, help="seconds between opening a file and the first request in it"
    )
    parser.add_argument("--verbose", action="store_true", help="print every request's latency and place")
    parser.add_argument(
        "--fresh-cache", action="store_true", help="start torchls with an empty cache (as on the first start ever)"
    )
    parser.add_argument(
        "--typing", action="store_true", help="cut each completion's line after the dot first, as just typed"
    )
    args = parser.parse_args()
    if not (args.corpus / args.package).is_dir():
        print(f"no corpus at {args.corpus}; run: bash ../shared/tools/real-corpus.sh {args.corpus}", file=sys.stderr)
        return 2
    compile_torchls()
    paths = pick_files(args.corpus, args.package, args.files, lambda t: len(requests_for(t, 1000).completions))
    files = [(path, requests_for(path.read_text(encoding="utf-8"), args.per_file)) for path in paths]
    counts = [sum(len(getattr(r, kind)) for _, r in files) for kind in ("completions", "signatures")]
    print(
        f"{len(files)} files from {args.package}: {counts[0]} completion places, {counts[1]} signature-help places; "
        f"python {sys.executable}\n"
    )
    cache = Path(tempfile.mkdtemp(prefix="torchls-bench-")) if args.fresh_cache else None
    names = ["torchls"] + ([args.compare] if args.compare else [])
    results = [
        asyncio.run(run_server(name, files, args.corpus / args.package, cache, args.settle, args.verbose, args.typing))
        for name in names
    ]
    print_table(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
