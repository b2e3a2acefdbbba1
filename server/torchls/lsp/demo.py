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


async def run_demo(path: Path = SAMPLE, max_lines: int = 8, out=sys.stdout) -> int:
    """Run the scripted session; returns the number of hovers that came back empty."""
    text = path.read_text(encoding="utf-8")
    client = LanguageClient("torchls-demo", "1")
    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "torchls", "serve")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16])
            ),
            root_uri=path.parent.as_uri(),
        )
    )
    startup_ms = (time.perf_counter() - started) * 1000
    print(f"torchls 已启动（initialize 用时 {startup_ms:.0f} ms），示例文件：{path}", file=out)
    client.initialized(types.InitializedParams())
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    empty = 0
    for symbol, line, character in positions(text):
        began = time.perf_counter()
        result = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, character))
        )
        elapsed = (time.perf_counter() - began) * 1000
        source_line = text.splitlines()[line].strip()
        print(f"\n── 第 {line + 1} 行 `{symbol}`（{elapsed:.0f} ms）：{source_line}", file=out)
        if result is None:
            empty += 1
            print("    （没有悬停结果）", file=out)
        else:
            print(_excerpt(result.contents.value, max_lines), file=out)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    print(f"\n共 {len(HOVERS)} 次悬停，{len(HOVERS) - empty} 次返回了悬停结果。", file=out)
    return empty


def main(max_lines: int = 8) -> int:
    return 1 if asyncio.run(run_demo(max_lines=max_lines)) else 0
