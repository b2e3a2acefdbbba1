"""Messages whose params do not fit the protocol's types: every request is answered (-32602 with what did not fit),
a notification is ignored without an "Error in server" pop-up, and bad settings cost one clear message and their
default. Through the real launcher, over stdio, with a raw client (pytest-lsp's client cannot send such params)."""

from __future__ import annotations

import os
import subprocess
import threading
import time

from tests.lsp.helpers import LAUNCHERS, frame, read_message

URI = "file:///tmp/torchls-invalid-params/model.py"
SOURCE = "# 中文 😀\nimport torch\nx = torch.zeros(3)\n"
RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
BAD_REQUESTS = {
    10: ("textDocument/hover", {"textDocument": {"uri": URI}, "position": {"line": -1, "character": 0}}),
    11: ("textDocument/hover", {"textDocument": {"uri": URI}, "position": {"line": 0, "character": -3}}),
    12: ("textDocument/completion", {"textDocument": {"uri": URI}, "position": {"line": 1, "character": "x"}}),
    13: ("textDocument/hover", {"textDocument": {"uri": URI}}),
    14: ("textDocument/signatureHelp", {"textDocument": {"uri": URI}, "position": {"line": 1, "character": 2**40}}),
    15: ("textDocument/codeAction", {"textDocument": {"uri": URI}, "range": RANGE, "context": {"diagnostics": 5}}),
}
PAST_THE_END = {20: ("textDocument/hover", {"textDocument": {"uri": URI}, "position": {"line": 99, "character": 5}})}


def test_requests_with_params_that_do_not_fit_are_answered_and_nothing_pops_up(tmp_path):
    server = subprocess.Popen(
        LAUNCHERS["torchls"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TORCHLS_CACHE_DIR": str(tmp_path / "cache")},
    )
    watchdog = threading.Timer(120, server.kill)  # a server that stops answering must not hang the suite
    watchdog.start()
    received: list[dict] = []

    def send(message: dict) -> None:
        server.stdin.write(frame(message))
        server.stdin.flush()

    def until(done) -> None:
        while True:
            message = read_message(server.stdout)
            received.append(message)
            if "method" in message and "id" in message:
                send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            if done(message):
                return

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
        until(lambda m: m.get("id") == 1)
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        opened = {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": SOURCE}}
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": opened})
        send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": URI}}})
        settings = {"torchls": {"knowledgePaths": ["/x/\ud800", "~nonexistentuser/kb"]}}
        send({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": settings}})
        for request_id, (method, params) in {**BAD_REQUESTS, **PAST_THE_END}.items():
            send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        answered = set()
        until(lambda m: answered.add(m.get("id")) or answered >= {*BAD_REQUESTS, *PAST_THE_END})
        time.sleep(2.5)  # long enough for the team-knowledge poll (every second) to fail, if it still did
        send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        until(lambda m: m.get("id") == 2 and "method" not in m)
        send({"jsonrpc": "2.0", "method": "exit"})
        server.stdin.close()
        stderr = server.stderr.read().decode("utf-8", "replace")
        assert server.wait(timeout=30) == 0
    finally:
        watchdog.cancel()
        server.kill()
        server.wait(timeout=10)

    answers = {m["id"]: m for m in received if "id" in m and "method" not in m}
    for request_id in BAD_REQUESTS:
        assert answers[request_id]["error"]["code"] == -32602, answers[request_id]
    assert "Position.line should be in range" in answers[10]["error"]["message"]
    assert answers[20] == {"jsonrpc": "2.0", "id": 20, "result": None}  # a position past the end: nothing there
    shown = [m["params"]["message"] for m in received if m.get("method") == "window/showMessage"]
    assert not any("Error in server" in text for text in shown), shown
    (setting,) = [text for text in shown if "knowledgePaths" in text]  # one message for the bad setting
    assert "不是有效的路径" in setting and "已改用默认值" in setting
    assert "Traceback" not in stderr, stderr


def test_an_answer_of_the_client_that_does_not_fit_fails_the_request_instead_of_waiting_forever(tmp_path):
    """A client answering ``workspace/configuration`` with null (the protocol wants an array): pygls dropped the
    answer, the server waited for it forever and never began its warm-up. Now the pull fails, the server keeps its
    settings and goes on: the warm-up's progress report is created."""
    server = subprocess.Popen(
        LAUNCHERS["torchls"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TORCHLS_CACHE_DIR": str(tmp_path / "cache")},
    )
    watchdog = threading.Timer(60, server.kill)  # without the fix the progress never comes: fail, do not hang
    watchdog.start()
    methods: list[str] = []

    def send(message: dict) -> None:
        server.stdin.write(frame(message))
        server.stdin.flush()

    try:
        capabilities = {"workspace": {"configuration": True}, "window": {"workDoneProgress": True}}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": capabilities}})
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        while "window/workDoneProgress/create" not in methods:
            message = read_message(server.stdout)
            if "method" in message:
                methods.append(message["method"])
                if "id" in message:  # every request of the server is answered null, the configuration pull too
                    send({"jsonrpc": "2.0", "id": message["id"], "result": None})
    finally:
        watchdog.cancel()
        server.kill()
        server.wait(timeout=10)
    assert methods.index("workspace/configuration") < methods.index("window/workDoneProgress/create")
