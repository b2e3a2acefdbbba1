"""``initialize`` answered before pygls is imported, from the answer the same build gave last time (through the
real launchers, over stdio, with a raw JSON-RPC client so that every byte the server writes is seen)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from tests.lsp.helpers import LAUNCHERS, frame, read_message
from torchls.lsp.early_initialize import ReplayingReader

BUGGY = "import torch\nimport torch.nn as nn\n# 中文注释 😀\nfc = nn.Linear(512, 10)\ny = fc(torch.randn(32, 500))\n"


def _session(
    command: list[str], cache: Path, root: Path, capabilities: dict, first: bytes = b"", check: bool = True
) -> list[dict]:
    """Start the server, initialize, open a buggy file, wait for its diagnostics (when ``check``), shut down;
    every message the server wrote, in order. ``first`` is written before the ``initialize``."""
    server = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TORCHLS_CACHE_DIR": str(cache)},
    )
    watchdog = threading.Timer(120, server.kill)  # a server that stops answering must not hang the suite
    watchdog.start()
    received: list[dict] = []

    def until(done) -> dict:
        while True:
            message = read_message(server.stdout)
            received.append(message)
            if "method" in message and "id" in message:  # a request from the server: answer it emptily
                server.stdin.write(frame({"jsonrpc": "2.0", "id": message["id"], "result": None}))
                server.stdin.flush()
            if done(message):
                return message

    try:
        uri = (root / "model.py").as_uri()
        server.stdin.write(first)
        params = {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": capabilities}
        server.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        server.stdin.flush()
        until(lambda m: m.get("id") == 1 and "method" not in m)
        opened = {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": BUGGY}}
        server.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        server.stdin.write(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": opened}))
        server.stdin.flush()
        if check:
            until(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["diagnostics"])
        server.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        server.stdin.flush()
        until(lambda m: m.get("id") == 2 and "method" not in m)
        server.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        server.stdin.close()
        assert server.wait(timeout=30) == 0
    finally:
        watchdog.cancel()
        server.kill()
        server.wait(timeout=10)
    return received


def _answers(received: list[dict], request_id: int) -> list[dict]:
    return [m for m in received if m.get("id") == request_id and "method" not in m]


def _diagnostic_codes(received: list[dict]) -> set[str]:
    return {
        d.get("code")
        for m in received
        if m.get("method") == "textDocument/publishDiagnostics"
        for d in m["params"]["diagnostics"]
    }


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_a_repeated_initialize_is_answered_from_the_last_answer_and_the_server_still_handles_it(launcher, tmp_path):
    command = LAUNCHERS[launcher]
    cache, root = tmp_path / "cache", tmp_path / "project"
    root.mkdir()
    capabilities = {"general": {"positionEncodings": ["utf-16"]}}

    first = _session(command, cache, root, capabilities)
    (answer,) = _answers(first, 1)
    (kept,) = (cache / "initialize").glob("*.json")
    assert json.loads(kept.read_text()) == answer["result"]
    assert "TL101" in _diagnostic_codes(first)

    # the kept answer is what the next start sends: marked, it comes back marked, exactly once
    marked = {**answer["result"], "serverInfo": {"name": "torchls", "version": "kept"}}
    kept.write_text(json.dumps(marked))
    second = _session(command, cache, root, capabilities)
    assert [m["result"] for m in _answers(second, 1)] == [marked]
    # pygls handled the same initialize: the workspace exists, the checker answers, with UTF-16 positions
    assert "TL101" in _diagnostic_codes(second)
    (diagnostic,) = (
        d
        for m in second
        if m.get("method") == "textDocument/publishDiagnostics"
        for d in m["params"]["diagnostics"]
        if d["code"] == "TL101"
    )
    assert diagnostic["range"]["start"]["line"] == 4
    # the server's own answer differed from the marked one, so the next start sends the real one again
    assert json.loads(kept.read_text()) == answer["result"]


def test_other_parameters_get_their_own_answer(tmp_path):
    command = LAUNCHERS["torchls"]
    cache, root = tmp_path / "cache", tmp_path / "project"
    root.mkdir()

    def answer(encoding: str, folder: Path = root) -> list[dict]:
        capabilities = {"general": {"positionEncodings": [encoding]}}
        return _answers(_session(command, cache, folder, capabilities, check=False), 1)

    utf16, utf8 = answer("utf-16"), answer("utf-8")
    (tmp_path / "other").mkdir()
    again = answer("utf-8", tmp_path / "other")  # another project, the same client: the same answer
    assert utf16[0]["result"]["capabilities"]["positionEncoding"] == "utf-16"
    assert utf8[0]["result"]["capabilities"]["positionEncoding"] == "utf-8"
    assert again == utf8
    assert len(list((cache / "initialize").glob("*.json"))) == 2


def test_a_broken_kept_answer_or_another_first_message_costs_nothing(tmp_path):
    command = LAUNCHERS["python -m torchls"]
    cache, root = tmp_path / "cache", tmp_path / "project"
    root.mkdir()
    capabilities: dict = {}
    answer = _answers(_session(command, cache, root, capabilities, check=False), 1)
    (kept,) = (cache / "initialize").glob("*.json")
    kept.write_text("{ not json")
    assert _answers(_session(command, cache, root, capabilities, check=False), 1) == answer
    assert json.loads(kept.read_text()) == answer[0]["result"]
    # a notification before initialize: nothing is answered early, pygls reads both messages
    note = frame({"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}})
    received = _session(command, cache, root, capabilities, first=note)
    assert _answers(received, 1) == answer
    assert "TL101" in _diagnostic_codes(received)


def test_the_replaying_reader_gives_the_read_bytes_then_the_stream():
    reader = ReplayingReader(b"Content-Length: 2\r\n\r\n{}", io.BytesIO(b"rest\r\nmore"))
    assert reader.readline() == b"Content-Length: 2\r\n"
    assert reader.readline() == b"\r\n"
    assert reader.read(4) == b"{}re"
    assert reader.readline() == b"st\r\n"
    assert reader.read(-1) == b"more"
