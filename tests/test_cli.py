"""The command line, run as a user runs it: a subprocess of the installed console script's module."""

from __future__ import annotations

import subprocess
import sys

import pytest

from torchls.kb.base import KnowledgeBase


def torchls(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchls", *args], capture_output=True, text=True, encoding="utf-8", cwd=cwd, timeout=120
    )


@pytest.mark.parametrize(
    "spelling",
    [
        "torch.nn.CrossEntropyLoss",
        "nn.CrossEntropyLoss",
        "CrossEntropyLoss",
        "torch.nn.modules.loss.CrossEntropyLoss",  # where torch defines it: the same object, by identity
    ],
)
def test_explain_prints_the_full_card(spelling):
    entry = KnowledgeBase.load(use_cache=False).get("torch.nn.CrossEntropyLoss")
    result = torchls("explain", spelling)
    assert result.returncode == 0, result.stderr
    assert entry.summary in result.stdout
    assert "避坑" in result.stdout
    # The terminal card has every example, the hover card only the first.
    assert all(example.title in result.stdout for example in entry.examples)


def test_explain_unknown_name_suggests_close_matches():
    result = torchls("explain", "torch.nn.CrossEntropyLos")
    assert result.returncode == 1
    assert "没有" in result.stderr and "torch.nn.CrossEntropyLoss" in result.stderr


def test_kb_check_passes_on_the_shipped_knowledge():
    result = torchls("kb", "check")
    assert result.returncode == 0, result.stdout
    assert "个有效条目，0 处问题" in result.stderr


def test_kb_check_reports_file_and_line_and_fails(tmp_path):
    bad = tmp_path / "torch" / "nn" / "Linear.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_text("name: torch.nn.Linear\nkind: clas\nsummary: 线性层。\n", encoding="utf-8")
    result = torchls("kb", "check", str(tmp_path))
    assert result.returncode == 1
    assert f"{bad}:2: `kind` 应为" in result.stdout


def test_bad_tcp_address_is_explained():
    result = torchls("serve", "--tcp", "nonsense")
    assert result.returncode == 2
    assert "HOST:PORT" in result.stderr
    assert result.stdout == ""


def test_version():
    result = torchls("--version")
    assert result.returncode == 0 and result.stdout.startswith("torchls ")


def test_serve_over_tcp_answers_a_hover():
    """`torchls serve --tcp HOST:PORT` is the same server on a socket, for debugging."""
    import asyncio
    import socket
    import time

    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "torchls", "serve", "--tcp", f"127.0.0.1:{port}"])

    async def session() -> str:
        client = LanguageClient("tcp-test", "1")
        for _ in range(100):  # the server needs a moment to listen
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.1)
        await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
        client.initialized(types.InitializedParams())
        text = "import torch\nx = torch.zeros(3)\n"
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem("file:///tmp/tcp.py", "python", 1, text))
        )
        result = await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier("file:///tmp/tcp.py"), types.Position(1, 12))
        )
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
        return result.contents.value

    try:
        assert "torch.zeros" in asyncio.run(session())
    finally:
        deadline = time.monotonic() + 10
        while server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        server.kill()


def test_run_example_prints_the_code_the_output_and_a_summary():
    result = torchls("run-example", "nn.CrossEntropyLoss", "--index", "1", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    code_at = result.stdout.index("criterion = nn.CrossEntropyLoss()")
    output_at = result.stdout.index("True torch.Size([4, 10])")
    summary_at = result.stdout.index("运行成功")
    assert code_at < output_at < summary_at


def test_run_example_exit_status_follows_the_failure(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    missing_device = torchls("run-example", "F.relu", "--device", "cuda")
    assert missing_device.returncode == 3
    assert "--device cpu" in missing_device.stdout and "cuda" in missing_device.stdout
    assert torchls("run-example", "nn.CrossEntropyLos").returncode == 2
    out_of_range = torchls("run-example", "nn.CrossEntropyLoss", "--index", "9")
    assert out_of_range.returncode == 2 and "1 到 2" in out_of_range.stderr
    no_python = torchls("run-example", "F.relu", "--python", str(tmp_path / "python"))
    assert no_python.returncode == 2 and "找不到可执行的 Python 解释器" in no_python.stdout


def test_serve_accepts_the_stdio_flag_clients_append():
    """vscode-languageclient (TransportKind.stdio) and others start servers with ``--stdio``."""
    import json

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
    message = f"Content-Length: {len(body.encode())}\r\n\r\n{body}".encode()
    server = subprocess.Popen(
        [sys.executable, "-m", "torchls", "serve", "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    import threading

    watchdog = threading.Timer(60, server.kill)  # a server that never answers must not hang the suite
    watchdog.start()
    try:
        server.stdin.write(message)
        server.stdin.flush()
        header = server.stdout.readline()
        assert header.startswith(b"Content-Length:"), header
    finally:
        watchdog.cancel()
        server.kill()
        server.wait(timeout=10)
