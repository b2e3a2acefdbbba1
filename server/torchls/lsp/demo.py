"""``torchls demo``: a scripted LSP session against a real ``torchls`` server, printed in the terminal.

It starts the server as a subprocess over stdio, exactly as an editor does, opens the bundled sample file and
hovers a list of torch symbols in it, printing each card and its latency. It is the quickest way to see that
the whole chain (stdio, UTF-16 positions, import aliases, jedi, the knowledge base) works on this machine.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from torchls.core.text import column_to_units

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "quickstart.py"

# (text on the line, symbol to hover on that line)
HOVERS = (
    ("import torch.nn as nn", "nn"),
    ("from torch.nn import CrossEntropyLoss", "CrossEntropyLoss"),
    ("self.fc = nn.Linear", "Linear"),
    ("return self.fc(F.relu(x))", "fc"),
    ("return self.fc(F.relu(x))", "relu"),
    ("optimizer = optim.AdamW", "AdamW"),
    ("optimizer = optim.AdamW", "parameters"),
    ('criterion = CrossEntropyLoss(reduction="mean")', "reduction"),
    ("x = torch.randn(32, 128)", "randn"),
    ('print("形状：", x.shape', "shape"),
    ('print("形状：", x.shape', "view"),
    ("loss.backward()", "backward"),
    ('print("均值 🧪", first.mean())', "mean"),
)


def positions(text: str) -> list[tuple[str, int, int]]:
    """(symbol, line, UTF-16 column) of each demo hover in ``text``."""
    lines = text.splitlines()
    found = []
    for needle, symbol in HOVERS:
        line = next(i for i, line in enumerate(lines) if needle in line)
        column = lines[line].index(symbol, lines[line].index(needle)) + 1
        found.append((symbol, line, column_to_units(lines[line], column)))
    return found


def _excerpt(markdown: str, max_lines: int) -> str:
    lines = [line for line in markdown.splitlines() if line.strip()]
    shown = lines[:max_lines]
    if len(lines) > max_lines:
        shown.append(f"…（卡片共 {len(lines)} 行）")
    return "\n".join("    " + line for line in shown)


async def _hover(client: LanguageClient, uri: str, line: int, character: int) -> tuple[types.Hover | None, float]:
    began = time.perf_counter()
    result = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, character))
    )
    return result, (time.perf_counter() - began) * 1000


def _say(out, text: str) -> None:
    """One line of the demo's report (``out`` is the terminal of ``torchls demo``, never the server's stdout)."""
    out.write(f"{text}\n")


def _print_hover(text: str, symbol: str, line: int, elapsed: float, result, max_lines: int, out) -> int:
    """Print one hover; returns 1 when it came back empty."""
    _say(out, f"\n── 第 {line + 1} 行 `{symbol}`（{elapsed:.0f} ms）：{text.splitlines()[line].strip()}")
    if result is None:
        _say(out, "    （没有悬停结果）")
        return 1
    _say(out, _excerpt(result.contents.value, max_lines))
    return 0


async def run_demo(path: Path = SAMPLE, max_lines: int = 8, out=sys.stdout) -> int:
    """Run the scripted session; returns the number of hovers that came back empty."""
    text = path.read_text(encoding="utf-8")
    client = LanguageClient("torchls-demo", "1")
    warm = asyncio.Event()

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _create_progress(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.PROGRESS)
    def _progress(params: types.ProgressParams) -> None:
        if isinstance(params.value, dict) and params.value.get("kind") == "end":
            warm.set()

    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "torchls", "serve")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
                window=types.WindowClientCapabilities(work_done_progress=True),
            ),
            root_uri=path.parent.as_uri(),
        )
    )
    startup_ms = (time.perf_counter() - started) * 1000
    _say(out, f"torchls 已启动（initialize 用时 {startup_ms:.0f} ms），示例文件：{path}")
    client.initialized(types.InitializedParams())
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    # Most hovers are answered from the file's imports at once. Symbols only jedi can resolve wait until jedi has
    # read torch in the background (a few seconds, once per start; an editor shows it as a progress bar).
    empty = 0
    deferred = []
    for symbol, line, character in positions(text):
        result, elapsed = await _hover(client, uri, line, character)
        if result is None and not warm.is_set():
            deferred.append((symbol, line, character))
            continue
        empty += _print_hover(text, symbol, line, elapsed, result, max_lines, out)
    if deferred:
        began = time.perf_counter()
        await asyncio.wait_for(warm.wait(), timeout=300)
        _say(out, f"\n（jedi 预热完成，又等了 {time.perf_counter() - began:.1f} s；以下悬停需要 jedi）")
        for symbol, line, character in deferred:
            result, elapsed = await _hover(client, uri, line, character)
            empty += _print_hover(text, symbol, line, elapsed, result, max_lines, out)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    _say(out, f"\n共 {len(HOVERS)} 次悬停，{len(HOVERS) - empty} 次返回了中文卡片或英文原文。")
    return empty


def main(max_lines: int = 8) -> int:
    return 1 if asyncio.run(run_demo(max_lines=max_lines)) else 0
