"""What the LSP benchmarks share: the servers they compare, starting one the way an editor does, peak memory,
percentiles, the torch imports of a real file, and picking the corpus files with the most torch code."""

from __future__ import annotations

import ast
import asyncio
import collections
import gc
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parent.parent
SERVERS = {
    "torchls": [sys.executable, "-m", "torchls", "serve"],
    "jedi-language-server": [str(Path(sys.executable).with_name("jedi-language-server"))],
}


def compile_torchls() -> None:
    """An installed package has its byte code compiled; an editable checkout under PYTHONDONTWRITEBYTECODE (set
    on some machines) would recompile every module at each start-up and measure that instead."""
    import compileall

    import torchls

    compileall.compile_dir(Path(torchls.__file__).parent, quiet=1)


async def start_server(
    name: str,
    capabilities: types.ClientCapabilities,
    workspace: Path,
    cache_dir: Path | None = None,
    new_environment: Path | None = None,
) -> tuple[LanguageClient, float]:
    """Start ``name`` over stdio and initialize it; returns the client and the milliseconds to the response.

    Both servers read the same Python environment: jedi-language-server is told this interpreter explicitly.
    ``new_environment``: an empty folder that holds every cache the server writes (torchls's, jedi's and parso's,
    through ``XDG_CACHE_HOME``), so the start-up is the first one in a new environment.
    """
    # The measuring client's own long-lived objects (pygls, lsprotocol's converters, the corpus parsed to pick the
    # files) stay out of its garbage collections: a full collection of this process (20-30 ms) while a request is
    # out would count as that server's latency. The same for every server.
    gc.collect()
    gc.freeze()
    client = LanguageClient("torchls-bench", "1")
    client.progress = track_progress(client)  # type: ignore[attr-defined]  # before the server can report any

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _diagnostics(params: types.PublishDiagnosticsParams) -> None:
        """Diagnostics are not measured here; handled only so the client does not log each one as unknown."""

    cache = cache_dir or Path(os.environ.get("TORCHLS_CACHE_DIR", str(ROOT / ".bench-cache")))
    env = {**os.environ, "TORCHLS_CACHE_DIR": str(cache)}
    if new_environment is not None:
        env |= {"TORCHLS_CACHE_DIR": str(new_environment / "torchls"), "XDG_CACHE_HOME": str(new_environment / "xdg")}
    started = time.perf_counter()
    await client.start_io(*SERVERS[name], env=env)
    # pygls's client pipes the server's stderr and never reads it: a server that logs 64 KB (jedi-language-server
    # logs every failed request) then blocks on its next log line, and the benchmark waits forever. Drain it,
    # keeping the end for the report of a server that fails.
    client.stderr_tail = collections.deque(maxlen=40)  # type: ignore[attr-defined]
    drain = asyncio.create_task(_drain(client._server.stderr, client.stderr_tail))  # type: ignore[union-attr,attr-defined]
    client.stderr_drain = drain  # type: ignore[attr-defined]  # a reference, so the task is not collected
    options = {"workspace": {"environmentPath": sys.executable}} if name == "jedi-language-server" else None
    await client.initialize_async(
        types.InitializeParams(capabilities=capabilities, root_uri=workspace.as_uri(), initialization_options=options)
    )
    elapsed = (time.perf_counter() - started) * 1000
    client.initialized(types.InitializedParams())
    return client, elapsed


class Progress(dict):
    """token -> the kinds of ``$/progress`` reported so far (begin, report, end); ``ended_at``: token -> when
    (``time.perf_counter()``) its end arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.ended_at: dict[object, float] = {}


def track_progress(client: LanguageClient) -> Progress:
    """Record the ``$/progress`` reports a server sends."""
    progress = Progress()

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _create(params: types.WorkDoneProgressCreateParams) -> None:
        progress.setdefault(params.token, [])

    @client.feature(types.PROGRESS)
    def _progress(params: types.ProgressParams) -> None:
        value = params.value
        kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
        progress.setdefault(params.token, []).append(str(kind))
        if kind == "end":
            progress.ended_at[params.token] = time.perf_counter()

    return progress


async def wait_for_warm_up(progress: Progress, timeout: float, begin_within: float = 10.0) -> float:
    """Seconds until every ``$/progress`` the server began has ended (0 for servers that report none). For the
    seconds until the first one ended (torchls: ready, before the entries' signatures), see :func:`first_end`.

    A server that reports progress begins within ``begin_within`` seconds (torchls makes its session, and imports
    its analysis, after ``initialized``; on a busy machine that alone can take a second)."""
    began = time.perf_counter()
    while not progress and time.perf_counter() - began < begin_within:
        await asyncio.sleep(0.05)
    while progress and not all(kinds and kinds[-1] == "end" for kinds in progress.values()):
        if time.perf_counter() - began > timeout:
            break
        await asyncio.sleep(0.05)
    return time.perf_counter() - began if progress else 0.0


def first_end(progress: Progress, since: float) -> float:
    """Seconds from ``since`` (a ``time.perf_counter()``) until the first ``$/progress`` ended; 0 if none did."""
    return min(progress.ended_at.values(), default=since) - since


async def _drain(stream: asyncio.StreamReader, tail: collections.deque) -> None:
    while line := await stream.readline():
        tail.append(line.decode("utf-8", "replace").rstrip())


async def stop_server(client: LanguageClient) -> None:
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


def _status_mb(pid: int, field: str) -> float:
    """A memory field of ``/proc/PID/status`` (``VmHWM``: peak resident; ``VmRSS``: resident now), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _vm_hwm_mb(pid: int) -> float:
    return _status_mb(pid, "VmHWM")


def _children(pid: int) -> list[int]:
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout
    except FileNotFoundError:
        return []
    pids = [int(p) for p in out.split()]
    return pids + [grand for child in pids for grand in _children(child)]


def peak_memory_mb(client: LanguageClient) -> tuple[float, float]:
    """Peak resident memory (VmHWM) of the server process and, summed, of its children (jedi's helper)."""
    pid = client._server.pid
    return _vm_hwm_mb(pid), sum(_vm_hwm_mb(child) for child in _children(pid))


def _vm_rss_mb(pid: int) -> float:
    return _status_mb(pid, "VmRSS")


class TreeMemory:
    """The largest sum of resident memory over a server's whole process tree, sampled every ``interval`` seconds:
    unlike the VmHWM of the processes alive at the end, it counts children that came and went (torchls's
    signature reader, its identity table) and processes that peaked at different moments only once together."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_mb = 0.0
        self.processes_at_peak = 0
        self._task: asyncio.Task | None = None

    def start(self) -> TreeMemory:
        self._task = asyncio.get_running_loop().create_task(self._sample())
        return self

    async def _sample(self) -> None:
        while True:
            pids = [self.pid, *await asyncio.to_thread(_children, self.pid)]
            total = sum(_vm_rss_mb(pid) for pid in pids)
            if total > self.peak_mb:
                self.peak_mb, self.processes_at_peak = total, len(pids)
            await asyncio.sleep(self.interval)

    def stop(self) -> float:
        if self._task is not None:
            self._task.cancel()
        return self.peak_mb


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


class TorchImports:
    """The torch names a file imports, and what a ``Name``/``Attribute`` expression made of them means."""

    def __init__(self, tree: ast.Module) -> None:
        self.aliases: dict[str, str] = {}
        # Names the file also binds otherwise (``def max_neg_value(tensor)`` beside ``from torch import tensor``):
        # which binding a use sees needs scopes, so such names count as no import at all.
        self.rebound: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.arg):
                self.rebound.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                self.rebound.add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.rebound.add(node.name)
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "torch":
                        self.aliases[alias.asname or "torch"] = alias.name if alias.asname else "torch"
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "torch":
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def qualify(self, expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return self.aliases.get(expr.id) if expr.id not in self.rebound else None
        if isinstance(expr, ast.Attribute):
            base = self.qualify(expr.value)
            return f"{base}.{expr.attr}" if base else None
        return None


def utf16_column(line_text: str, utf8_offset: int) -> int:
    """The UTF-16 column of a UTF-8 byte offset (what ``ast`` gives) in a line (what LSP wants)."""
    prefix = line_text.encode("utf-8")[:utf8_offset].decode("utf-8", "replace")
    return len(prefix.encode("utf-16-le")) // 2


def pick_files(corpus: Path, package: str, count: int, score: Callable[[str], int]) -> list[Path]:
    """The ``count`` files of a package with the highest ``score`` (real model code, not thin wrappers)."""
    scored = []
    for path in sorted((corpus / package).rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        points = score(text)
        if points:
            scored.append((points, path))
    scored.sort(key=lambda item: (-item[0], str(item[1])))
    return sorted(path for _, path in scored[:count])
