"""Hover end to end: the real server over stdio, real jedi, the installed torch, the shipped knowledge base.

Every symbol sits after Chinese text and an emoji on its own line, so each case also checks that UTF-16
positions from the client are converted correctly in both directions.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from torchls.kb.base import KnowledgeBase

from .helpers import hover, open_document, open_in_warm_workspace, server_config, utf16_position

SOURCE = """\
import os
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import nn as 神经网络, optim
说明 = "导入 🎯"; from torch.nn import CrossEntropyLoss  # 导入损失函数


class 模型(nn.Module):
    def __init__(self):
        super().__init__()
        说明 = "全连接层 🧱"; self.fc = nn.Linear(128, 10)

    def forward(self, x):
        说明 = "前向 ➡️"; return self.fc(F.relu(x))


说明 = "随机张量 🎲"; x = torch.randn(32, 128)
说明 = "改形状 🔧"; y = x.view(32, -1)
说明 = "形状 📐"; print(x.shape)
说明 = "模块 🧩"; layer = 神经网络.Conv2d(3, 16, 3)
model = 模型()
说明 = "优化器 🚀"; optimizer = optim.AdamW(model.parameters(), lr=1e-3)
说明 = "损失 🎯"; criterion = CrossEntropyLoss(reduction="sum")
说明 = "另一个 📉"; criterion2 = nn.CrossEntropyLoss(reduction="none")
loss = criterion(model(x), torch.randint(0, 10, (32,)))
说明 = "反向传播 ⏪"; loss.backward()
first, second = torch.chunk(x, 2)
说明 = "均值 🧪"; print(first.mean())
说明 = "没有条目 🕳️"; shuffle = nn.ChannelShuffle(2)
说明 = "不是 torch 🐍"; os.path.join("a", "b")
说明 = "jedi 才知道 🔍"; total = torch.chunk(x, 2)[0].sum(dim=0)
说明 = "内部模块 🔩"; isinstance(layer, nn.modules.batchnorm._BatchNorm)
"""


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase.load(use_cache=False)


@pytest_lsp.fixture(config=server_config(Path("/tmp/torchls-test-cache")), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    # Cases that need jedi must not race its cold start (a hover waits at most 0.8 s for it).
    lsp_client.warm_up_reports = await open_in_warm_workspace(lsp_client, tmp_path_factory, "example.py", SOURCE)
    yield
    await lsp_client.shutdown_session()


async def _hover(client: LanguageClient, line_contains: str, symbol: str) -> types.Hover | None:
    return await hover(client, client.example_uri, utf16_position(SOURCE, line_contains, symbol))


def _assert_card(result: types.Hover | None, kb: KnowledgeBase, name: str) -> str:
    assert result is not None, f"no hover for {name}"
    value = result.contents.value
    entry = kb.get(name)
    assert entry is not None, f"the shipped knowledge base has no entry {name}"
    assert entry.summary in value, f"the card for {name} is not its entry:\n{value[:400]}"
    assert "避坑" in value, "pitfalls always show"
    return value


CASES = [
    # (line contains, symbol, expected entry)
    ("x = torch.randn(32, 128)", "randn", "torch.randn"),
    ("self.fc = nn.Linear(128, 10)", "Linear", "torch.nn.Linear"),
    ("layer = 神经网络.Conv2d", "Conv2d", "torch.nn.Conv2d"),
    ("from torch.nn import CrossEntropyLoss", "CrossEntropyLoss", "torch.nn.CrossEntropyLoss"),
    ('criterion = CrossEntropyLoss(reduction="sum")', "CrossEntropyLoss", "torch.nn.CrossEntropyLoss"),
    ("return self.fc(F.relu(x))", "relu", "torch.nn.functional.relu"),
    ("y = x.view(32, -1)", "view", "torch.Tensor.view"),
    ("print(x.shape)", "shape", "torch.Tensor.shape"),
    ("return self.fc(F.relu(x))", "fc", "torch.nn.Linear"),
    ("optimizer = optim.AdamW", "AdamW", "torch.optim.AdamW"),
    ("loss.backward()", "backward", "torch.Tensor.backward"),
    ("optimizer = optim.AdamW", "parameters", "torch.nn.Module.parameters"),
    ("print(first.mean())", "mean", "torch.Tensor.mean"),  # only jedi knows what torch.chunk returns
]


@pytest.mark.parametrize(("line_contains", "symbol", "expected"), CASES, ids=[c[2] + ":" + c[1] for c in CASES])
async def test_hover_shows_the_chinese_card(client: LanguageClient, kb, line_contains, symbol, expected):
    result = await _hover(client, line_contains, symbol)
    _assert_card(result, kb, expected)
    # The range is the symbol itself, in UTF-16 units, after the Chinese text and emoji.
    start = utf16_position(SOURCE, line_contains, symbol, offset=0)
    assert result.range is not None
    assert result.range.start == start
    assert result.range.end.character - start.character == len(symbol)


IMPORT_STYLES = [
    # (import line, use line, symbol, expected entry): each in a document of its own, so bindings cannot mix
    ("import torch.nn as nn", '说明 = "层 🧱"; layer = nn.Linear(4, 2)', "Linear", "torch.nn.Linear"),
    ("from torch import nn", '说明 = "层 🧱"; layer = nn.Linear(4, 2)', "Linear", "torch.nn.Linear"),
    ("import torch.nn.functional as F", '说明 = "激活 ⚡"; y = F.relu(x)', "relu", "torch.nn.functional.relu"),
    ("from torch.nn import functional as F", '说明 = "激活 ⚡"; y = F.relu(x)', "relu", "torch.nn.functional.relu"),
    (
        "from torch.nn import CrossEntropyLoss",
        '说明 = "损失 🎯"; c = CrossEntropyLoss()',
        "CrossEntropyLoss",
        "torch.nn.CrossEntropyLoss",
    ),
    ("from torch import optim", '说明 = "优化 🚀"; o = optim.AdamW(p)', "AdamW", "torch.optim.AdamW"),
    ("from torch.optim import AdamW", '说明 = "优化 🚀"; o = AdamW(p)', "AdamW", "torch.optim.AdamW"),
    ("import torch", '说明 = "张量 🎲"; t = torch.randn(2, 3)', "randn", "torch.randn"),
]


@pytest.mark.parametrize(("imports", "use", "symbol", "expected"), IMPORT_STYLES, ids=[s[0] for s in IMPORT_STYLES])
async def test_every_import_style_reaches_the_card(client: LanguageClient, kb, imports, use, symbol, expected):
    text = f"{imports}\n{use}\n"
    uri = client.example_uri.replace("example.py", f"style_{abs(hash(imports))}.py")
    await open_document(client, uri, text)
    _assert_card(await hover(client, uri, utf16_position(text, use, symbol)), kb, expected)
    if imports.startswith("from torch.nn import CrossEntropyLoss"):  # the import line itself too
        _assert_card(await hover(client, uri, utf16_position(text, imports, symbol)), kb, expected)


async def test_warm_up_reports_progress(client: LanguageClient):
    begin, *middle, end = client.warm_up_reports
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.title == "torchls 预热"
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message == "torchls 已就绪"
    assert any("读取成员" in (report.message or "") for report in middle)
    # The entries' signatures are read after torchls is ready, under a report of their own.
    (signatures,) = [reports for token, reports in client.progress_reports.items() if "signatures" in str(token)]
    begin, *middle, end = signatures
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.title == "torchls 读取签名"
    assert any("读取签名" in (report.message or "") for report in middle)
    assert isinstance(end, types.WorkDoneProgressEnd)


async def test_card_shows_the_installed_signature(client: LanguageClient):
    result = await _hover(client, "self.fc = nn.Linear(128, 10)", "Linear")
    # jedi's signature from the installed torch carries its annotations; the knowledge base's does not.
    assert "torch.nn.Linear(in_features: int, out_features: int" in result.contents.value


async def test_instance_card_says_it_is_an_instance(client: LanguageClient):
    result = await _hover(client, "return self.fc(F.relu(x))", "fc")
    assert "实例" in result.contents.value


@pytest.mark.parametrize(
    "line_contains", ['CrossEntropyLoss(reduction="sum")', 'nn.CrossEntropyLoss(reduction="none")']
)
async def test_keyword_argument_shows_that_parameter(client: LanguageClient, kb, line_contains):
    result = await _hover(client, line_contains, "reduction")
    assert result is not None
    param = kb.get("torch.nn.CrossEntropyLoss").param("reduction")
    assert param.desc in result.contents.value
    assert "`reduction`" in result.contents.value


async def test_keyword_of_a_callee_only_jedi_can_resolve(client: LanguageClient, kb):
    result = await _hover(client, "total = torch.chunk(x, 2)[0].sum(dim=0)", "dim")
    assert result is not None
    assert kb.get("torch.Tensor.sum").param("dim").desc in result.contents.value


async def test_name_in_an_implementation_module_keeps_the_name_the_file_uses(client: LanguageClient):
    result = await _hover(client, "nn.modules.batchnorm._BatchNorm", "_BatchNorm")
    assert result is not None
    assert "torch.nn.modules.batchnorm._BatchNorm" in result.contents.value
    # torch gives `_BatchNorm` no docstring: the card says so rather than promising an English text that is not there.
    assert "暂无中文条目" in result.contents.value and "torch 也没有为它写文档" in result.contents.value


@pytest.mark.parametrize(
    ("symbol", "module"), [("functional", "torch.nn.functional"), ("nn", "torch.nn"), ("F", "torch.nn.functional")]
)
async def test_import_statement_segments_are_modules(client: LanguageClient, kb, symbol, module):
    result = await _hover(client, "import torch.nn.functional as F", symbol)
    _assert_card(result, kb, module)


async def test_symbol_without_entry_gets_english_original(client: LanguageClient, kb):
    assert kb.lookup("torch.nn.ChannelShuffle") is None, "pick another symbol: this one has an entry now"
    result = await _hover(client, "shuffle = nn.ChannelShuffle(2)", "ChannelShuffle")
    assert result is not None
    value = result.contents.value
    assert "English original" in value and "暂无中文条目" in value
    assert "groups" in value  # the installed torch's real signature and docstring


@pytest.mark.parametrize(
    ("line_contains", "symbol"),
    [
        ('os.path.join("a", "b")', "join"),
        ('os.path.join("a", "b")', "os"),
        ('说明 = "随机张量', "说明"),
        ("model = 模型()", "model"),
    ],
)
async def test_non_torch_symbol_gets_no_hover(client: LanguageClient, line_contains, symbol):
    assert await _hover(client, line_contains, symbol) is None


async def test_comment_and_string_get_no_hover(client: LanguageClient):
    assert await _hover(client, "# 导入损失函数", "损失") is None
    assert await _hover(client, '说明 = "形状 📐"', "形状") is None
