"""Cards that exist are reached, and no card shows a parameter without Chinese text or a private one.

Through the real server, each name as real code writes it: dtype aliases (``torch.long``), legacy typed tensors
(``torch.LongTensor``'s methods are a tensor's), the deprecated ``torch.cuda.amp.GradScaler`` (documented as
``torch.amp.GradScaler``), a layer's attributes (``self.fc.weight``, ``attn.out_proj``), an optimizer's
``param_groups``, a device's ``type``. Chinese text and an emoji come first on every line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import hover, open_document, server_config, utf16_position, vscode_initialize, wait_until_warm

SOURCE = """\
import torch
import torch.nn as nn
from torch import Tensor


class 模型(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.attn = nn.MultiheadAttention(8, 2)

    def forward(self, x: Tensor):
        说明 = "权重 🏋️"; w = self.fc.weight
        说明 = "投影 🎯"; proj = self.attn.out_proj
        return self.fc(x)


def train(ids: torch.LongTensor, model: 模型):
    说明 = "类型 🔢"; labels = torch.zeros(3, dtype=torch.long)
    说明 = "旧张量 🧓"; ids = ids.to("cpu")
    optimizer = torch.optim.AdamW(model.parameters())
    说明 = "参数组 📚"; print(optimizer.param_groups[0]["lr"])
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    说明 = "缩放 ⚖️"; scaler.scale(labels)
    说明 = "设备 🖥️"; print(labels.device.type, torch.device("cpu"))
    说明 = "保存 💾"; torch.save(model.state_dict(), "m.pt")
    说明 = "张量类 🧱"; t = torch.Tensor(2, 3)
"""


@pytest_lsp.fixture(config=server_config(Path("/tmp/torchls-test-cache")), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("cards")
    await lsp_client.initialize_session(vscode_initialize(root))
    lsp_client.uri = (root / "train.py").as_uri()
    await open_document(lsp_client, lsp_client.uri, SOURCE)
    await wait_until_warm(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def _card(client: LanguageClient, marker: str, symbol: str) -> str:
    result = await hover(client, client.uri, utf16_position(SOURCE, marker, symbol))
    assert result is not None, f"no hover on {symbol}"
    return result.contents.value  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("marker", "symbol", "title"),
    [
        ("类型", "long", "torch.int64"),  # a dtype alias reaches its entry
        ("旧张量", "to(", "torch.Tensor.to"),  # a method of a legacy typed tensor is a tensor's
        ("缩放", "scale(", "torch.amp.GradScaler.scale"),  # torch.cuda.amp.GradScaler's methods
        ("权重", "weight", "torch.nn.Linear.weight"),  # a layer's attribute has its own card
        ("投影", "out_proj", "torch.nn.MultiheadAttention.out_proj"),
        ("参数组", "param_groups", "torch.optim.Optimizer.param_groups"),
        ("设备", "type", "torch.device.type"),
    ],
)
async def test_a_card_that_exists_is_reached(client: LanguageClient, marker, symbol, title):
    card = await _card(client, marker, symbol)
    assert f"**{title}** ·" in card and "暂无中文条目" not in card


@pytest.mark.parametrize(("marker", "symbol"), [("保存", "save"), ("张量类", "Tensor"), ("设备", "device(")])
async def test_no_parameter_without_chinese_text_and_no_private_one(client: LanguageClient, marker, symbol):
    card = await _card(client, marker, symbol)
    assert "暂无中文说明" not in card
    assert "_disable_byteorder_record" not in card and "_use_new_zipfile_serialization" not in card


async def test_the_full_card_lists_every_parameter_in_chinese(client: LanguageClient):
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams("torchls.showCard", [{"name": "torch.device"}])
    )
    markdown = result["markdown"]
    assert "`type`" in markdown and "`index`" in markdown and "暂无中文说明" not in markdown
