"""Member completion as real projects meet it, end to end: the real server over stdio, real jedi, the installed
torch, in a new environment (nothing cached on disk).

One server for the module, started with an empty cache folder, so its warm-up ends with twenty seconds or so of
reading every entry's signature. The first tests run in that phase, after jedi has read torch: there, completion
must already answer what only jedi can tell (``self._scaler.``), list a class jedi has not listed yet completely on
the first request, and give the same list each time. Each line puts Chinese text and an emoji before the receiver.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from torchls.kb.base import KnowledgeBase

from .helpers import open_document, server_config, vscode_initialize, wait_for
from .test_completion import by_label, split_cursor, summary_of

# How long after opening a file its members may take to arrive once jedi has read torch (a warm jedi lists a
# class in well under a tenth of a second; this leaves room for a busy machine).
ARRIVAL_SECONDS = 10.0
GRAD_SCALER_MEMBERS = ("scale", "step", "update", "unscale_")

SCALERS = {
    # The fast path names it: an instance of a torch class the file constructs.
    "amp": 'import torch\n\nscaler = torch.amp.GradScaler()\n说明 = "缩放 🎲"; scaler.‸\n',
    # The deprecated spelling, in a training function: documented under torch.amp.GradScaler.
    "cuda.amp": (
        "import torch\n\n\ndef train(model, loader, optimizer, use_amp: bool):\n"
        "    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)\n"
        "    for x, y in loader:\n"
        '        说明 = "混合精度 ⚡"; scaler.‸\n'
    ),
    # As timm writes it (timm/utils/cuda.py): an attribute of a plain class, which only jedi can type.
    "self._scaler": (
        "import torch\n\n\nclass NativeScaler:\n"
        "    def __init__(self, device='cuda'):\n"
        "        self._scaler = torch.amp.GradScaler(device=device)\n\n"
        "    def __call__(self, loss, optimizer):\n"
        '        说明 = "缩放器 🧯"; self._scaler.‸\n'
    ),
}

BLOCK = """\
import torch
import torch.nn as nn


class 注意力(nn.Module):
    def __init__(self, n_embd: int = 64):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.norm = nn.LayerNorm(n_embd)
        self._cache = None

    def forward(self, x):
        {line}
        return x


x = torch.randn(2, 3)
"""


def in_forward(line: str) -> str:
    return BLOCK.replace("{line}", line)


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase.load(use_cache=False)


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-real-"))), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    await lsp_client.initialize_session(vscode_initialize(root))
    lsp_client.root = root  # type: ignore[attr-defined]
    lsp_client.documents = 0  # type: ignore[attr-defined]
    await wait_for(lambda: _reading_signatures(lsp_client), timeout=240, message="jedi never finished reading torch")
    yield
    await lsp_client.shutdown_session()


def _progress(client: LanguageClient) -> list:
    return [report for reports in client.progress_reports.values() for report in reports]


def _reading_signatures(client: LanguageClient) -> bool:
    """The warm-up reports every tenth step by its label; it reads signatures once jedi has read torch and listed
    the indexed namespaces."""
    return any(
        isinstance(report, types.WorkDoneProgressReport) and (report.message or "").startswith("读取签名")
        for report in _progress(client)
    )


def _warm_up_finished(client: LanguageClient) -> bool:
    """The whole warm-up ended: torchls was ready, and then the entries' signatures were read (their report
    ends last)."""
    return any(
        str(token).startswith("torchls-signatures-") and reports and isinstance(reports[-1], types.WorkDoneProgressEnd)
        for token, reports in client.progress_reports.items()
    )


async def open_marked(client: LanguageClient, marked: str) -> tuple[types.CompletionParams, float]:
    """Open a new document; the completion request at its cursor mark, and when the document was opened."""
    text, position = split_cursor(marked)
    client.documents += 1
    uri = (client.root / f"real_{client.documents}.py").as_uri()
    await open_document(client, uri, text)
    opened = asyncio.get_running_loop().time()
    return types.CompletionParams(text_document=types.TextDocumentIdentifier(uri), position=position), opened


async def settled(client: LanguageClient, params: types.CompletionParams, since: float) -> types.CompletionList:
    """Ask again while the server says the list is incomplete, as an editor does on each keystroke; fails unless
    the complete list comes within ARRIVAL_SECONDS of ``since``."""
    loop = asyncio.get_running_loop()
    while True:
        result = await client.text_document_completion_async(params)
        assert isinstance(result, types.CompletionList), "no completion list"
        if not result.is_incomplete:
            return result
        waited = loop.time() - since
        assert waited < ARRIVAL_SECONDS, f"still incomplete {waited:.1f} s after opening: {sorted(by_label(result))}"
        await asyncio.sleep(0.1)


def same_text(shown: str | None, summary: str) -> bool:
    """The knowledge base's summary as the item shows it (inline-code marks may be dropped for plain text)."""

    def bare(text: str) -> str:
        return text.replace("`", "").replace("**", "")

    return shown is not None and bare(shown) == bare(summary)


def private_labels(result: types.CompletionList) -> list[str]:
    return [item.label for item in result.items if item.label.startswith("_")]


# ------------------------------------------------------------------ while the warm-up reads signatures


@pytest.mark.parametrize("receiver", list(SCALERS))
async def test_a_grad_scaler_lists_its_members_with_chinese_details_soon_after_opening(client, kb, receiver):
    params, opened = await open_marked(client, SCALERS[receiver])
    items = by_label(await settled(client, params, opened))
    for name in GRAD_SCALER_MEMBERS:
        assert name in items, f"{name} missing; got {sorted(items)}"
        assert same_text(summary_of(items[name]), kb.get(f"torch.amp.GradScaler.{name}").summary), name
    assert "get_scale" in items, "jedi's listing, not only the knowledge base's names"
    assert not [label for label in items if label.startswith("_")]
    assert not _warm_up_finished(client), "the warm-up ended: this no longer tests the time before it does"


async def test_the_same_request_gives_the_same_list(client):
    """A class nothing has listed yet (nn.Linear here): the first request may not differ from the next ones."""
    params, _ = await open_marked(client, in_forward('说明 = "注意力 🧠"; y = self.c_attn.‸'))
    answers = [await client.text_document_completion_async(params) for _ in range(5)]
    labels = [[item.label for item in answer.items] for answer in answers]
    assert all(not answer.is_incomplete for answer in answers), [answer.is_incomplete for answer in answers]
    assert all(each == labels[0] for each in labels), [len(each) for each in labels]
    assert {"weight", "bias", "in_features", "parameters"} <= set(labels[0])
    assert not _warm_up_finished(client), "the warm-up ended: this no longer tests the time before it does"


# ------------------------------------------------------------------ layer attributes, private names


LAYER_CASES = [
    # (line in forward, member that must carry its entry's summary, the entry)
    ('说明 = "权重 🏋️"; w = self.fc.weight.‸', "view", "torch.Tensor.view"),
    ('说明 = "全连接 🧱"; y = self.c_attn.‸', "parameters", "torch.nn.Module.parameters"),
    ('说明 = "归一化 📏"; g = self.norm.weight.‸', "requires_grad_", "torch.Tensor.requires_grad_"),
]


@pytest.mark.parametrize(("line", "member", "entry"), LAYER_CASES, ids=["fc.weight", "c_attn", "norm.weight"])
async def test_layer_attributes_list_members_with_chinese_details_and_no_private_names(client, kb, line, member, entry):
    params, opened = await open_marked(client, in_forward(line))
    result = await settled(client, params, opened)
    items = by_label(result)
    assert same_text(summary_of(items[member]), kb.get(entry).summary)
    assert sum(summary_of(item) is not None for item in result.items) >= 20, "most documented members carry theirs"
    assert not private_labels(result)


async def completion_at(client: LanguageClient, marked: str) -> types.CompletionList:
    """One request at the cursor mark of a new document. A list narrowed by a partial name is always marked
    incomplete (the client asks again as the name grows): settle the same place without it first."""
    params, _ = await open_marked(client, marked)
    result = await client.text_document_completion_async(params)
    assert isinstance(result, types.CompletionList), f"no completion list at {marked!r}"
    return result


async def test_private_names_only_after_an_underscore(client):
    for marked, private in [
        ('import torch\nx = torch.randn(2, 3)\n说明 = "私有 🔒"; x.‸\n', "_base"),
        (in_forward('说明 = "私有 🔒"; self.c_attn.‸'), "_apply"),
        (in_forward('说明 = "私有 🔒"; self.‸'), "_cache"),  # the class's own private attribute
    ]:
        params, opened = await open_marked(client, marked)
        everything = await settled(client, params, opened)
        assert not private_labels(everything), marked
        typed = by_label(await completion_at(client, marked.replace("‸", "_‸")))
        assert private in typed, f"{private} missing after `_`: {sorted(typed)[:20]}"
        assert not [label for label in typed if label.startswith("__")], "dunder names wait for `__`"


async def test_dunder_names_only_after_two_underscores(client):
    marked = 'import torch\n说明 = "版本 🏷️"; torch.‸\n'
    params, opened = await open_marked(client, marked)
    assert "__version__" not in by_label(await settled(client, params, opened))
    assert "__version__" not in by_label(await completion_at(client, marked.replace("‸", "_‸")))
    assert "__version__" in by_label(await completion_at(client, marked.replace("‸", "__‸")))
