"""The server's output panel shows problems, not the ordinary events of a session.

Editors cancel hovers and completions all the time (pygls logs a cancel for a request already answered as a
warning), and they restart the server while jedi is still warming up (the jedi process then writes its answer
into a pipe nobody reads: a BrokenPipeError traceback). Both are expected; neither may reach the log above debug.
"""

from __future__ import annotations

import asyncio
import os
import sys

from lsprotocol import types
from pygls.lsp.client import LanguageClient


async def _started(cache) -> LanguageClient:
    client = LanguageClient("quiet-logs-test", "1")
    env = {**os.environ, "TORCHLS_CACHE_DIR": str(cache)}
    await client.start_io(sys.executable, "-m", "torchls", env=env)
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    client.initialized(types.InitializedParams())
    text = 'import torch\n说明 = "中文 🔥"; x = torch.randn(3)\nx.view\n'
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem("file:///tmp/quiet.py", "python", 1, text))
    )
    return client


async def _all_stderr(client: LanguageClient) -> str:
    """Everything the server and its children wrote to stderr, up to the end (the children share it)."""
    stream = client._server.stderr  # type: ignore[union-attr]
    return (await asyncio.wait_for(stream.read(), 60)).decode("utf-8", "replace")


async def test_a_cancel_for_a_request_already_answered_is_not_a_warning(tmp_path):
    client = await _started(tmp_path)
    answer = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier("file:///tmp/quiet.py"), types.Position(2, 3))
    )
    assert answer is None or answer.contents is not None
    client.protocol.notify("$/cancelRequest", types.CancelParams(id=987654))  # long since answered
    await asyncio.sleep(0.3)
    await client.shutdown_async(None)
    client.exit(None)
    output = await _all_stderr(client)
    await client.stop()
    assert "Cancel notification" not in output
    assert "WARNING" not in output and "Traceback" not in output, output[-2000:]


async def test_a_server_killed_during_the_warm_up_leaves_no_traceback_and_no_process(tmp_path):
    client = await _started(tmp_path)  # an empty cache: the warm-up runs for seconds
    await asyncio.sleep(1.5)  # jedi's process is busy reading torch, the checking process has started
    client._server.kill()  # type: ignore[union-attr]  # as an editor restarting the server does
    # stderr ends only when every process holding it has ended: the jedi and checking processes included.
    output = await _all_stderr(client)
    await client.stop()
    assert "Traceback" not in output and "BrokenPipeError" not in output, output[-2000:]
