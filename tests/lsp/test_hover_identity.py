"""Hover never shows another API's card (issue 30): the autograd-aware collectives of ``torch.distributed.nn``
are not ``torch.distributed.all_gather`` / ``all_reduce``, whatever their last name part; a true re-export still
reaches its card, and an attribute jedi types as "Tensor or Module" shows neither's card. The real server, real
jedi, the installed torch."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from torchls.kb.base import KnowledgeBase

from .helpers import hover, open_in_warm_workspace, server_config, utf16_position

SOURCE = """\
import torch
import torch.distributed.nn
from torch.distributed.nn.functional import all_gather
from torch.nn.modules.linear import Linear

x = torch.randn(4, requires_grad=True)
说明 = "求和 ➕"; total = torch.distributed.nn.all_reduce(x)
说明 = "收集 🧲"; parts = all_gather(x)
说明 = "层 🧱"; layer = Linear(4, 2)


class Head(torch.nn.Module):
    def set_classes(self, embeddings):
        self.pe = embeddings  # 类别嵌入 🙂: jedi types it through Module.__getattr__ as Tensor or Module

    def fuse(self, device):
        return self.pe.to(device)
"""


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase.load(use_cache=False)


@pytest_lsp.fixture(config=server_config(Path("/tmp/torchls-test-cache")), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    await open_in_warm_workspace(lsp_client, tmp_path_factory, "collectives.py", SOURCE)
    yield
    await lsp_client.shutdown_session()


@pytest.mark.parametrize(
    ("line_contains", "symbol", "shown", "sibling"),
    [
        (
            "total = torch.distributed.nn.all_reduce",
            "all_reduce",
            "torch.distributed.nn",
            "torch.distributed.all_reduce",
        ),
        ("parts = all_gather(x)", "all_gather", "torch.distributed.nn", "torch.distributed.all_gather"),
    ],
)
async def test_a_collective_of_another_module_never_shows_the_c10d_card(
    client: LanguageClient, kb, line_contains, symbol, shown, sibling
):
    result = await hover(client, client.example_uri, utf16_position(SOURCE, line_contains, symbol))
    value = result.contents.value if result is not None else ""
    assert kb.get(sibling).summary not in value, f"{symbol} shows the card of {sibling}:\n{value[:300]}"
    assert f"**{sibling}**" not in value
    # its own Chinese card (the knowledge base documents the autograd-aware collectives too)
    assert result is not None and f"**{shown}.{symbol}**" in value and kb.get(f"{shown}.{symbol}").summary in value


async def test_a_true_re_export_still_shows_its_card(client: LanguageClient, kb):
    result = await hover(client, client.example_uri, utf16_position(SOURCE, "layer = Linear(4, 2)", "Linear"))
    assert result is not None and kb.get("torch.nn.Linear").summary in result.contents.value


async def test_an_attribute_typed_tensor_or_module_shows_neither_card(client: LanguageClient, kb):
    """``self.pe`` is set from a parameter nothing types: ``pe.to`` may be ``Tensor.to`` or ``Module.to``."""
    position = utf16_position(SOURCE, "return self.pe.to(device)", "to(")
    for attempt in ("cold", "with jedi's answer kept"):
        result = await hover(client, client.example_uri, position)
        value = result.contents.value if result is not None else ""
        for api in ("torch.nn.Module.to", "torch.Tensor.to"):
            assert kb.get(api).summary not in value, f"{attempt}: shows the card of {api}:\n{value[:300]}"
