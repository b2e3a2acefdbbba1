"""Hover on receivers real code writes: what the file's own analysis proves, and what only the member's name says.

The real server over stdio; every symbol after Chinese text and an emoji on its line. Each case names the card
the hover must show (its title) or None.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import hover, open_document, server_config, utf16_position, vscode_initialize, wait_until_warm

MODEL = """\
from typing import Optional

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class 标注器(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(vocab, dim), ln=nn.LayerNorm(dim)))
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, 4)

    def forward(self, idx, mask: Optional[torch.Tensor] = None):
        说明 = "词嵌入 🔤"; x = self.transformer.wte(idx)
        h, _ = self.lstm(x)
        说明 = "循环层 🔁"; pooled = h.mean(dim=1)
        if mask is not None:
            说明 = "可选 ❓"; pooled = pooled * mask.float()
        说明 = "切片 🔪"; first = x[:, 0].sum(-1)
        return self.head(pooled), first


def train(model, loader, device):
    model = model.to(device)
    说明 = "模型 🧠"; model.train()
    for tokens, labels in loader:
        说明 = "批次 📦"; tokens = tokens.to(device)
        logits, _ = model(tokens)
        loss = nn.functional.cross_entropy(logits, labels.to(device))
        loss.backward()


def main():
    data = TensorDataset(torch.randint(0, 100, (8, 5)), torch.randint(0, 4, (8,)))
    train(标注器(100, 16), DataLoader(data, batch_size=4), "cpu")


def 外部(batch):
    lse = batch["lse"]
    说明 = "按名称 🏷️"; return lse.permute(0, 2, 1)
"""

WITH_NUMPY = """\
import numpy as np
import torch


def 统计(result):
    arr = result["values"]
    说明 = "形状 📐"; print(arr.shape)
    说明 = "掩码 🎭"; return arr.masked_fill(arr > 0, 0)
"""


@pytest_lsp.fixture(config=server_config(Path("/tmp/torchls-test-cache")), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("receivers")
    await lsp_client.initialize_session(vscode_initialize(root))
    lsp_client.root = root
    lsp_client.uri = (root / "model.py").as_uri()
    await open_document(lsp_client, lsp_client.uri, MODEL)
    await wait_until_warm(lsp_client)
    yield
    await lsp_client.shutdown_session()


def _title(result: types.Hover | None) -> str | None:
    if result is None:
        return None
    text = result.contents.value  # type: ignore[union-attr]
    return text.split("**", 2)[1] if "**" in text else text


@pytest.mark.parametrize(
    ("marker", "symbol", "expected"),
    [
        ("词嵌入", "wte", "torch.nn.Embedding"),  # a member of nn.ModuleDict(dict(...))
        ("循环层", "mean", "torch.Tensor.mean"),  # h, _ = self.lstm(x)
        ("可选", "float", "torch.Tensor.float"),  # an Optional[Tensor] parameter
        ("切片", "sum", "torch.Tensor.sum"),  # x[:, 0]
        ("模型", "train", "torch.nn.Module.train"),  # model.to(device) returns the module
        ("批次", "to(device)", "torch.Tensor.to"),  # a loader's batch, the loader passed in from main
    ],
)
async def test_receivers_the_file_proves(client: LanguageClient, marker, symbol, expected):
    result = await hover(client, client.uri, utf16_position(MODEL, marker, symbol))
    assert _title(result) == expected
    assert "按成员名推断" not in result.contents.value  # type: ignore[union-attr]


async def test_a_member_only_tensors_have_names_an_unknown_receiver(client: LanguageClient):
    result = await hover(client, client.uri, utf16_position(MODEL, "按名称", "permute"))
    assert _title(result) == "torch.Tensor.permute"
    assert "按成员名推断" in result.contents.value  # type: ignore[union-attr]  # and says so


async def test_in_a_numpy_file_only_members_arrays_lack_are_guessed(client: LanguageClient):
    uri = (client.root / "stats.py").as_uri()
    await open_document(client, uri, WITH_NUMPY)
    await asyncio.sleep(1.0)  # indexed, and jedi has read the file: it knows no more about ``arr`` than we do
    assert await hover(client, uri, utf16_position(WITH_NUMPY, "形状", "shape")) is None  # an array has a shape
    masked = await hover(client, uri, utf16_position(WITH_NUMPY, "掩码", "masked_fill"))
    assert _title(masked) == "torch.Tensor.masked_fill"


async def test_a_short_file_is_indexed_whole_for_its_first_hover(client: LanguageClient):
    text = MODEL.replace("标注器", "模型一")
    uri = (client.root / "short.py").as_uri()
    await open_document(client, uri, text)
    # No pause: the loader's batch is proven at once, from main's call three functions away.
    assert _title(await hover(client, uri, utf16_position(text, "批次", "to(device)"))) == "torch.Tensor.to"


async def test_hovers_right_after_opening_a_long_file_answer_from_the_block_around_them(client: LanguageClient):
    padding = "".join(f"# 长文件的注释第 {n} 行 🧾，让文件超过一次建全索引的长度。\n" for n in range(800))
    text = padding + MODEL.replace("标注器", "模型二").replace(
        "        return self.head(", '        说明 = "输出头 🎯"; return self.head('
    )
    uri = (client.root / "just_opened.py").as_uri()
    await open_document(client, uri, text)
    # No pause: the full index is built later; the block around each place answers now.
    assert _title(await hover(client, uri, utf16_position(text, "输出头", "head"))) == "torch.nn.Linear"
    assert _title(await hover(client, uri, utf16_position(text, "词嵌入", "wte"))) == "torch.nn.Embedding"
    assert _title(await hover(client, uri, utf16_position(text, "循环层", "mean"))) == "torch.Tensor.mean"
    first = await hover(client, uri, utf16_position(text, "批次", "to(device)"))  # needs main's call: not yet
    assert first is None or "torch.Tensor.to" not in first.contents.value  # type: ignore[union-attr]
    await asyncio.sleep(1.0)  # the full index now says what the loader holds
    assert _title(await hover(client, uri, utf16_position(text, "批次", "to(device)"))) == "torch.Tensor.to"


SUBMODULES = """\
import torch
import torch.nn as nn


def 编码(model: nn.Module, x: torch.Tensor):
    说明 = "子模块 🧩"; h = model.transformer(x)
    说明 = "方法 🛠"; model.train()
    return h
"""


async def test_a_submodule_read_through_nn_module_names_no_api(client: LanguageClient):
    uri = (client.root / "submodules.py").as_uri()
    await open_document(client, uri, SUBMODULES)
    # ``model.transformer``: some submodule of a model; nn.Module has no member of that name
    assert await hover(client, uri, utf16_position(SUBMODULES, "子模块", "transformer")) is None
    assert _title(await hover(client, uri, utf16_position(SUBMODULES, "方法", "train"))) == "torch.nn.Module.train"
