"""Hover, signature help and completion that only jedi can answer, through both launchers an editor uses.

jedi runs in a child process; its answers cross a pipe. When they could not be unpickled in the server (a class
defined in the child's ``__main__``), every such request failed with an internal error, and no test noticed:
the fast path answered all of theirs. Each place here is first shown to be beyond the fast path (a receiver that
comes from an unannotated function of another module of the project, a chained call), then asked through the real
server started as ``torchls`` and as ``python -m torchls``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient

from torchls.core.names import ModuleIndex
from torchls.core.parsing import parse_tolerant
from torchls.core.text import Position, SourceText

from .helpers import LAUNCHERS, hover, open_document, server_config, utf16_position, vscode_initialize, wait_until_warm

HELPERS = """\
import torch


def load_batch(n):
    return torch.randn(n, 16)


def build_head():
    return torch.nn.Linear(16, 4)
"""

TRAIN = """\
import torch
from data_utils import build_head, load_batch

说明 = "批次 🧪"; feats = load_batch(8)
说明 = "改形状 🔧"; flat = feats.view(8, -1)
说明 = "链式 ⛓️"; scores = load_batch(4).softmax(dim=-1).argmax(dim=1)
head = build_head()
说明 = "层的参数 🧱"; params = head.parameters()
说明 = "补全 ✍️"; feats.sum()
说明 = "签名 🖊️"; masked = feats.masked_fill(feats > 0,
"""


def _fast_path_name(line_contains: str, symbol: str) -> str | None:
    """What the file alone says is at the symbol: the precondition that only jedi can answer there."""
    index = ModuleIndex(parse_tolerant(TRAIN), SourceText(TRAIN))
    lines = TRAIN.splitlines()
    line = next(i for i, text in enumerate(lines) if line_contains in text)
    target = index.target_at(Position(line, lines[line].index(symbol) + 1))
    return target.qualname if target is not None else None


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=sorted(LAUNCHERS), ids=sorted(LAUNCHERS))
async def client(request, tmp_path_factory):
    config = server_config(Path("/tmp/torchls-test-cache"), LAUNCHERS[request.param])
    lsp_client = await config.start()
    root = tmp_path_factory.mktemp("project")
    (root / "data_utils.py").write_text(HELPERS, encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    await lsp_client.initialize_session(vscode_initialize(root))
    lsp_client.uri = (root / "train.py").as_uri()
    await open_document(lsp_client, lsp_client.uri, TRAIN)
    await wait_until_warm(lsp_client)
    yield lsp_client
    await lsp_client.shutdown_session()
    await lsp_client.stop()


def _card_title(result: types.Hover | None) -> str:
    assert result is not None, "no hover"
    return result.contents.value.split("\n**", 1)[1].split("**", 1)[0]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("line_contains", "symbol", "expected"),
    [
        ("改形状", "view", "torch.Tensor.view"),
        ("链式", "softmax", "torch.Tensor.softmax"),
        ("链式", "argmax", "torch.Tensor.argmax"),
        ("层的参数", "parameters", "torch.nn.Module.parameters"),
    ],
)
async def test_hover_that_only_jedi_can_answer_shows_the_chinese_card(
    client: LanguageClient, line_contains, symbol, expected
):
    assert _fast_path_name(line_contains, symbol) is None
    position = utf16_position(TRAIN, line_contains, symbol)
    result = await hover(client, client.uri, position)
    if result is None:  # jedi busy past WARM_WAIT_SECONDS (a loaded CI machine): its answer serves the next hover
        result = await hover(client, client.uri, position)
    assert _card_title(result) == expected
    assert "暂无中文条目" not in result.contents.value  # type: ignore[union-attr]


async def test_completion_on_a_receiver_only_jedi_can_type_lists_tensor_members_in_chinese(client: LanguageClient):
    assert _fast_path_name("补全", "feats") is None
    position = utf16_position(TRAIN, "补全", "feats.", offset=len("feats."))
    result = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(client.uri), position)
    )
    items = result.items if isinstance(result, types.CompletionList) else result
    by_label = {item.label: item for item in items or []}
    assert {"view", "masked_fill", "unsqueeze"} <= set(by_label), sorted(by_label)[:20]
    details = by_label["view"].label_details
    assert details is not None and any("\u4e00" <= ch <= "\u9fff" for ch in details.description or "")


async def test_signature_help_on_a_receiver_only_jedi_can_type(client: LanguageClient):
    position = utf16_position(TRAIN, "签名", "feats > 0,", offset=len("feats > 0,"))
    result = await client.text_document_signature_help_async(
        types.SignatureHelpParams(types.TextDocumentIdentifier(client.uri), position)
    )
    assert result is not None and result.signatures, "no signature help"
    shown = result.signatures[result.active_signature]
    assert "masked_fill" in shown.label
