"""Completion and signature help right after start-up, while jedi is still warming up (and with no completion
cache on disk): answered from the knowledge base and the file's imports, never by waiting for jedi."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from torchls.kb.base import KnowledgeBase
from torchls.kb.render import plain_text

from .helpers import open_document, server_config, vscode_initialize, wait_until_warm
from .test_completion import HEADER, by_label, split_cursor, summary_of


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-cold-"))))
async def cold_client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("cold")
    await lsp_client.initialize_session(vscode_initialize(root))
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


def _warm_up_finished(client: LanguageClient) -> bool:
    return any(
        reports and isinstance(reports[-1], types.WorkDoneProgressEnd) for reports in client.progress_reports.values()
    )


async def _request(client: LanguageClient, name: str, marked: str, method: str):
    text, position = split_cursor(marked)
    uri = (client.root / name).as_uri()
    await open_document(client, uri, text)
    document = types.TextDocumentIdentifier(uri)
    if method == "completion":
        return await client.text_document_completion_async(types.CompletionParams(document, position))
    return await client.text_document_signature_help_async(types.SignatureHelpParams(document, position))


async def test_first_requests_answer_before_the_warm_up_ends(cold_client: LanguageClient):
    kb = KnowledgeBase.load(use_cache=False)

    namespace = await _request(cold_client, "a.py", HEADER + '说明 = "🎲"; y = th.‸\n', "completion")
    assert not _warm_up_finished(cold_client), "the warm-up ended first: this test no longer tests a cold server"
    items = by_label(namespace)
    assert summary_of(items["randn"]) == plain_text(kb.get("torch.randn").summary)
    assert namespace.is_incomplete, "a provisional list must be asked for again once the full one is ready"

    tensor = by_label(await _request(cold_client, "b.py", HEADER + "y = x.‸\n", "completion"))
    assert summary_of(tensor["view"]) == plain_text(kb.get("torch.Tensor.view").summary)

    optimizer = by_label(await _request(cold_client, "c.py", HEADER + "optimizer.‸\n", "completion"))
    assert summary_of(optimizer["zero_grad"]) == plain_text(kb.get("torch.optim.Optimizer.zero_grad").summary)

    keywords = by_label(await _request(cold_client, "d.py", HEADER + "conv = nn.Conv2d(3, 64, ker‸\n", "completion"))
    assert keywords["kernel_size="].documentation.value == kb.get("torch.nn.Conv2d").param("kernel_size").desc

    help_ = await _request(cold_client, "e.py", HEADER + "conv = nn.Conv2d(3, 64, ‸\n", "signature")
    shown = help_.signatures[help_.active_signature]
    start, end = shown.parameters[help_.active_parameter or shown.active_parameter].label
    assert shown.label[start:end].startswith("kernel_size")

    # A model of this file: its own attributes, and nn.Module's members as far as known before warm-up.
    model = await _request(cold_client, "f.py", HEADER + "model.‸\n", "completion")
    assert {"fc", "forward", "parameters"} <= set(by_label(model))
    assert model.is_incomplete
    # A function of another file of the project, annotated to return a tensor: read from disk, no jedi needed.
    (cold_client.root / "辅助.py").write_text(
        "import torch\n\ndef 缩放(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n", encoding="utf-8"
    )
    imported = HEADER + "from 辅助 import 缩放\n权重 = 缩放(x)\n说明 = '跨文件 📁'; 权重.‸\n"
    scaled = by_label(await _request(cold_client, "f1.py", imported, "completion"))
    assert summary_of(scaled["view"]) == plain_text(kb.get("torch.Tensor.view").summary)
    # Only jedi knows what torch.chunk returns: until it has read torch, no items, and the client is told to ask
    # again; from then on (long before the warm-up ends) jedi's answer, complete.
    chunk = await _request(cold_client, "f2.py", HEADER + "torch.chunk(x, 2)[0].‸\n", "completion")
    if chunk.is_incomplete:
        assert not chunk.items
    else:
        assert "view" in by_label(chunk)
    assert not _warm_up_finished(cold_client), "the warm-up ended during the test: the later cases were not cold"

    await wait_until_warm(cold_client)
    warm = await _request(cold_client, "g.py", HEADER + "y = th.‸\n", "completion")
    assert not warm.is_incomplete
    assert len(warm.items) > 3 * len(namespace.items), "after warm-up every member of torch is offered"
    model = by_label(await _request(cold_client, "h.py", HEADER + "model.‸\n", "completion"))
    assert {"fc", "parameters"} <= set(model)
