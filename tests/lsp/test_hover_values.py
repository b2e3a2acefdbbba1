"""Hover on a tensor variable shows what the checker's analysis knows about it: shape, dtype, device, origin.

The real server over stdio, each symbol after Chinese text and an emoji on its line. The values come from the
same interpreter that reports diagnostics, through the calls the file makes (``forward``'s input is what ``main``
passes), so hover and the rules never tell two stories about one tensor.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest_lsp
from pytest_lsp import LanguageClient

from torchls.core.checker import check_source

from .helpers import hover, open_document, server_config, utf16_position, vscode_initialize

PROGRAM = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


def probabilities(model, x):
    说明 = "概率 📊"; probs = F.softmax(model(x), dim=-1)
    return probs


class Classifier(nn.Module):
    def __init__(self, features, classes):
        super().__init__()
        self.fc = nn.Linear(features, classes)

    def forward(self, x):
        说明 = "输入 📥"; hidden = self.fc(x)
        return hidden


def main():
    model = Classifier(16, 4)
    说明 = "批次 📦"; batch = torch.randn(64, 16)
    labels = torch.randint(0, 4, (64,))
    loss = F.cross_entropy(probabilities(model, batch), labels)


def unknown(y):
    说明 = "未知 ❔"; return y + 1


def heads(x):
    b, t, d = x.shape
    说明 = "分头 🧠"; q = x.view(b, t, 4, d // 4).transpose(1, 2)
    return q


heads(torch.randn(rows(), 10, 16))
"""


@pytest_lsp.fixture(config=server_config(Path("/tmp/torchls-test-cache")), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("values")
    await lsp_client.initialize_session(vscode_initialize(root))
    lsp_client.uri = (root / "program.py").as_uri()
    await open_document(lsp_client, lsp_client.uri, PROGRAM)
    yield
    await lsp_client.shutdown_session()


async def _value_text(client: LanguageClient, marker: str, symbol: str) -> str:
    """The value hover at ``symbol``: the analysis is computed in the background after the first hover asks."""
    position = utf16_position(PROGRAM, marker, symbol)
    for _ in range(200):
        answer = await hover(client, client.uri, position)
        if answer is not None:
            return answer.contents.value
        await asyncio.sleep(0.05)
    raise AssertionError(f"no value hover at {symbol}")


async def test_a_created_tensor_shows_its_shape_dtype_device_and_where_it_was_made(client: LanguageClient):
    text = await _value_text(client, "批次", "batch")
    assert "`batch`: Tensor (64, 16) · float32 · cpu" in text
    assert "第 23 行" in text


async def test_a_forward_input_shows_what_the_files_calls_pass(client: LanguageClient):
    text = await _value_text(client, "输入", "hidden")
    assert "`hidden`: Tensor (64, 4)" in text  # Classifier(16, 4) called on (64, 16) through a helper
    assert "logits" in text


async def test_a_helpers_result_says_what_made_it_and_the_checker_agrees(client: LanguageClient):
    text = await _value_text(client, "概率", "probs")
    assert "(64, 4)" in text and "softmax" in text
    # the same analysis reports the pitfall: softmax probabilities into cross_entropy
    assert "TL301" in {f.code for f in check_source(PROGRAM).findings}


async def test_a_parameter_nothing_calls_with_a_tensor_gets_no_value_hover(client: LanguageClient):
    await _value_text(client, "批次", "batch")  # the analysis is ready: it has nothing to say about `y`
    assert await hover(client, client.uri, utf16_position(PROGRAM, "未知", "y + 1")) is None


async def test_a_size_the_code_names_keeps_its_name(client: LanguageClient):
    text = await _value_text(client, "分头", "q")
    assert "`q`: Tensor (b, 4, 10, 4)" in text  # the batch is unknown: named after the code's `b`
