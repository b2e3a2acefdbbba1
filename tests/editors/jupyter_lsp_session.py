"""Run by tests/editors/test_jupyterlab.py with the Python of an environment that has jupyter_server and jupyter-lsp
(the server half of jupyterlab-lsp): one JSON argument with ``root`` (a folder holding ``config/`` and the notebook
text), ``python`` (the interpreter with torchls), ``text`` (the virtual document) and the positions to ask about.

It starts ``jupyter server`` with the README's server spec, reads ``/lsp/status``, then talks to torchls through
jupyter-lsp's websocket (``/lsp/ws/torchls``) the way JupyterLab's frontend does: initialize, didOpen of the
notebook's virtual document, hover, and waits for publishDiagnostics. Writes what it saw to ``root/result.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from tornado.httpclient import AsyncHTTPClient
from tornado.websocket import websocket_connect


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _session(config: dict, port: int, result: dict) -> None:
    base = f"http://127.0.0.1:{port}"
    client = AsyncHTTPClient()
    status = None
    for _ in range(120):
        try:
            status = await client.fetch(f"{base}/lsp/status?token=t", raise_error=False)
            if status.code == 200:
                break
        except OSError:
            pass
        await asyncio.sleep(0.5)
    if status is None or status.code != 200:
        raise RuntimeError("jupyter server never answered /lsp/status")
    result["status"] = json.loads(status.body)
    socket_ = await websocket_connect(f"ws://127.0.0.1:{port}/lsp/ws/torchls?token=t")
    next_id = 0

    async def send(method: str, params: dict, request: bool = True) -> dict | None:
        nonlocal next_id
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            next_id += 1
            message["id"] = next_id
        await socket_.write_message(json.dumps(message))
        if not request:
            return None
        while True:
            raw = await asyncio.wait_for(socket_.read_message(), 120)
            answer = json.loads(raw)
            if answer.get("method") == "textDocument/publishDiagnostics":
                result.setdefault("diagnostics", []).append(answer["params"])
            elif answer.get("id") == next_id and "method" not in answer:
                return answer
            elif "id" in answer and "method" in answer:  # a request from the server (progress, configuration)
                await socket_.write_message(json.dumps({"jsonrpc": "2.0", "id": answer["id"], "result": None}))

    uri = Path(config["root"], "实验.ipynb").as_uri()
    answer = await send(
        "initialize", {"processId": os.getpid(), "rootUri": Path(config["root"]).as_uri(), "capabilities": {}}
    )
    result["initialize"] = answer
    await send("initialized", {}, request=False)
    document = {"uri": uri, "languageId": "python", "version": 1, "text": config["text"]}
    await send("textDocument/didOpen", {"textDocument": document}, request=False)
    deadline = time.monotonic() + 120
    while not result.get("diagnostics") and time.monotonic() < deadline:
        try:
            raw = await asyncio.wait_for(socket_.read_message(), 5)
        except asyncio.TimeoutError:
            continue
        answer = json.loads(raw)
        if answer.get("method") == "textDocument/publishDiagnostics":
            result.setdefault("diagnostics", []).append(answer["params"])
        elif "id" in answer and "method" in answer:
            await socket_.write_message(json.dumps({"jsonrpc": "2.0", "id": answer["id"], "result": None}))
    result["hover"] = await send("textDocument/hover", {"textDocument": {"uri": uri}, "position": config["hover"]})
    socket_.close()


def main() -> int:
    config = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    root = Path(config["root"])
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(root / "config"), "JUPYTER_RUNTIME_DIR": str(root / "runtime")}
    command = [
        sys.executable, "-m", "jupyter_server", "--no-browser", f"--port={port}", "--ServerApp.token=t",
        f"--ServerApp.root_dir={root}", "--ServerApp.ip=127.0.0.1", "--allow-root",
    ]  # fmt: skip
    with (root / "jupyter.log").open("wb") as log:
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    result: dict = {}
    try:
        asyncio.run(asyncio.wait_for(_session(config, port, result), 240))
        result["ok"] = True
    except Exception as error:  # reported to the test, with the server's log
        result["ok"] = False
        result["error"] = repr(error)
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        (root / "result.json").write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
