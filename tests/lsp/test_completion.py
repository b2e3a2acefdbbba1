"""Completion, completionItem/resolve and signature help end to end: the real server over stdio, real jedi, the
installed torch and the shipped knowledge base.

Each case is a small document with a cursor mark (``‸``); most put Chinese text and an emoji before the cursor on
its line, so the UTF-16 positions the client sends are converted on every request.
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
from torchls.kb.render import plain_text

from .helpers import open_document, server_config, start_warm_in

CURSOR = "‸"

HEADER = """\
import torch
import torch as th
import torch.nn as nn
import torch.nn.functional as F
from torch import nn as 神经网络, optim
import torch.utils.data as tud


class 模型(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc(x)


x = torch.randn(32, 128)
w = torch.empty(64, 3, 3, 3)
model = 模型()
optimizer = optim.AdamW(model.parameters(), lr=1e-3)
"""


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return KnowledgeBase.load(use_cache=False)


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-cache-"))), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    await start_warm_in(lsp_client, tmp_path_factory.mktemp("workspace"))
    # Every test below needs jedi to read torch; if it cannot, say why once rather than fail each test vaguely.
    assert not [m.message for m in lsp_client.messages if "torch" in m.message], lsp_client.messages
    yield
    await lsp_client.shutdown_session()


def split_cursor(marked: str) -> tuple[str, types.Position]:
    """The text without the cursor mark, and the mark's UTF-16 position (computed independently of torchls)."""
    before, after = marked.split(CURSOR)
    lines = before.split("\n")
    return before + after, types.Position(len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2)


async def open_marked(client: LanguageClient, marked: str) -> tuple[str, types.Position]:
    text, position = split_cursor(marked)
    client.documents += 1
    uri = (client.root / f"case_{client.documents}.py").as_uri()
    await open_document(client, uri, text)
    return uri, position


async def complete(client: LanguageClient, marked: str) -> types.CompletionList:
    uri, position = await open_marked(client, marked)
    result = await client.text_document_completion_async(
        types.CompletionParams(text_document=types.TextDocumentIdentifier(uri), position=position)
    )
    assert isinstance(result, types.CompletionList), f"no completion list at {marked!r}"
    return result


async def signature(client: LanguageClient, marked: str) -> types.SignatureHelp:
    uri, position = await open_marked(client, marked)
    result = await client.text_document_signature_help_async(
        types.SignatureHelpParams(text_document=types.TextDocumentIdentifier(uri), position=position)
    )
    assert result is not None, f"no signature help at {marked!r}"
    return result


def by_label(result: types.CompletionList) -> dict[str, types.CompletionItem]:
    return {item.label: item for item in result.items}


def summary_of(item: types.CompletionItem) -> str | None:
    return item.label_details.description if item.label_details else None


# ------------------------------------------------------------------------------------------ members

MEMBER_CASES = [
    # (line typed after the header, labels that must be offered with their entries' summaries)
    ('说明 = "张量 🎲"; y = th.‸', {"randn": "torch.randn", "zeros": "torch.zeros", "cat": "torch.cat"}),
    (
        '说明 = "层 🧱"; layer = 神经网络.‸',
        {"Conv2d": "torch.nn.Conv2d", "CrossEntropyLoss": "torch.nn.CrossEntropyLoss"},
    ),
    (
        '说明 = "函数 ⚡"; y = F.‸',
        {"relu": "torch.nn.functional.relu", "cross_entropy": "torch.nn.functional.cross_entropy"},
    ),
    ('说明 = "优化 🚀"; o = optim.‸', {"AdamW": "torch.optim.AdamW", "SGD": "torch.optim.SGD"}),
    ("s = optim.lr_scheduler.‸", {"StepLR": "torch.optim.lr_scheduler.StepLR"}),
    (
        '说明 = "数据 📦"; d = tud.‸',
        {"DataLoader": "torch.utils.data.DataLoader", "Dataset": "torch.utils.data.Dataset"},
    ),
    ("d = torch.utils.data.‸", {"DataLoader": "torch.utils.data.DataLoader"}),
    ('说明 = "张量方法 🔧"; y = x.‸', {"view": "torch.Tensor.view", "reshape": "torch.Tensor.reshape"}),
    (
        '说明 = "优化器 🚀"; optimizer.‸',
        {"zero_grad": "torch.optim.Optimizer.zero_grad", "step": "torch.optim.Optimizer.step"},
    ),
    # A user's model: only jedi lists its attributes; the inherited torch ones still carry their summaries.
    ('说明 = "模型 🧩"; model.‸', {"parameters": "torch.nn.Module.parameters", "eval": "torch.nn.Module.eval"}),
    # Not a plain name: jedi knows what torch.chunk returns.
    ('说明 = "分块 🧪"; torch.chunk(x, 2)[0].‸', {"view": "torch.Tensor.view"}),
]


@pytest.mark.parametrize(("line", "expected"), MEMBER_CASES, ids=[case[0].split("; ")[-1] for case in MEMBER_CASES])
async def test_members_carry_the_chinese_summary(client: LanguageClient, kb, line, expected):
    result = await complete(client, HEADER + line + "\n")
    items = by_label(result)
    for label, name in expected.items():
        assert label in items, f"{label} missing; got {sorted(items)[:30]}"
        assert summary_of(items[label]) == plain_text(kb.get(name).summary)
        # VS Code shows the summary from labelDetails and resolves detail: the list does not carry it twice.
        assert items[label].detail is None
        assert (await client.completion_item_resolve_async(items[label])).detail == plain_text(kb.get(name).summary)
    # Items without an entry are still offered (mode "all"), without a Chinese summary.
    assert any(summary_of(item) is None for item in result.items)


async def test_a_builtin_container_the_file_shows_lists_its_members(client: LanguageClient):
    result = await complete(client, HEADER + '尺寸 = {}\n说明 = "字典 📦"; 尺寸.‸\n')
    assert {"items", "values", "setdefault"} <= set(by_label(result)), sorted(by_label(result))
    assert "view" not in by_label(result)


async def test_a_receiver_of_several_types_lists_the_members_of_each(client: LanguageClient, kb):
    marked = HEADER + 'value = {"键": 1} if len(x) > 3 else torch.zeros(2)\n说明 = "两种 🔀"; value.‸\n'
    uri, position = await open_marked(client, marked)
    params = types.CompletionParams(text_document=types.TextDocumentIdentifier(uri), position=position)
    result = await client.text_document_completion_async(params)
    for _ in range(60):
        # A class jedi has not listed yet answers on a later request (isIncomplete), as on the next keystroke.
        if not result.is_incomplete:
            break
        await asyncio.sleep(0.5)
        result = await client.text_document_completion_async(params)
    items = by_label(result)
    assert {"keys", "items", "view", "reshape"} <= set(items), sorted(items)[:40]
    assert summary_of(items["view"]) == plain_text(kb.get("torch.Tensor.view").summary)


async def test_self_attribute_in_forward_lists_the_layer_members(client: LanguageClient, kb):
    marked = HEADER.replace("return self.fc(x)", '说明 = "全连接 🧱"; return self.fc.‸')
    items = by_label(await complete(client, marked))
    assert {"weight", "bias", "in_features"} <= set(items), sorted(items)[:40]
    assert summary_of(items["parameters"]) == plain_text(kb.get("torch.nn.Module.parameters").summary)
    assert items["weight"].kind != types.CompletionItemKind.Method


async def test_a_partial_name_narrows_the_list(client: LanguageClient):
    items = by_label(await complete(client, HEADER + '说明 = "🎯"; layer = nn.Conv‸\n'))
    assert {"Conv1d", "Conv2d", "ConvTranspose2d"} <= set(items)
    assert "Linear" not in items
    assert items["Conv2d"].kind == types.CompletionItemKind.Class


async def test_kinds_follow_what_the_member_is(client: LanguageClient):
    items = by_label(await complete(client, HEADER + "y = torch.‸\n"))
    assert items["randn"].kind == types.CompletionItemKind.Function
    assert items["nn"].kind == types.CompletionItemKind.Module
    assert items["Tensor"].kind == types.CompletionItemKind.Class
    assert items["float32"].kind in (types.CompletionItemKind.Constant, types.CompletionItemKind.Variable)
    tensor_items = by_label(await complete(client, HEADER + "y = x.‸\n"))
    assert tensor_items["view"].kind == types.CompletionItemKind.Method
    assert tensor_items["shape"].kind in (types.CompletionItemKind.Property, types.CompletionItemKind.Variable)


async def test_a_syntax_error_elsewhere_does_not_stop_completion(client: LanguageClient, kb):
    marked = HEADER + '说明 = "🎲"; y = torch.‸\n\ndef broken(:\n    return [\n'
    items = by_label(await complete(client, marked))
    assert summary_of(items["randn"]) == plain_text(kb.get("torch.randn").summary)


async def test_nothing_inside_comments_or_strings(client: LanguageClient):
    for line in ("# 注释 torch.‸", 's = "torch.‸"'):
        text, position = split_cursor(HEADER + line + "\n")
        client.documents += 1
        uri = (client.root / f"case_{client.documents}.py").as_uri()
        await open_document(client, uri, text)
        result = await client.text_document_completion_async(
            types.CompletionParams(text_document=types.TextDocumentIdentifier(uri), position=position)
        )
        assert result is None or not result.items, line


# ------------------------------------------------------------------------------------------ resolve


async def test_resolve_fills_in_the_chinese_card(client: LanguageClient, kb):
    items = by_label(await complete(client, HEADER + '说明 = "🎲"; y = torch.‸\n'))
    item = items["randn"]
    assert item.documentation is None, "cards are filled lazily, not sent with 1,000 items"
    resolved = await client.completion_item_resolve_async(item)
    assert isinstance(resolved.documentation, types.MarkupContent)
    assert kb.get("torch.randn").summary in resolved.documentation.value
    assert "避坑" in resolved.documentation.value


async def test_resolve_without_an_entry_keeps_torchs_english_text(client: LanguageClient, kb):
    items = by_label(await complete(client, HEADER + "y = nn.‸\n"))
    assert kb.lookup("torch.nn.ChannelShuffle") is None, "pick another symbol: this one has an entry now"
    resolved = await client.completion_item_resolve_async(items["ChannelShuffle"])
    assert "暂无中文条目" in resolved.documentation.value
    assert "ChannelShuffle" in resolved.documentation.value

    inherited = by_label(await complete(client, HEADER + "self_fc = nn.Linear(2, 3)\nself_fc.‸\n"))["add_module"]
    resolved = await client.completion_item_resolve_async(inherited)
    assert resolved.documentation is not None and "add_module" in resolved.documentation.value


# ------------------------------------------------------------------------------------------ arguments


async def test_keyword_arguments_with_their_chinese_explanations(client: LanguageClient, kb):
    items = by_label(await complete(client, HEADER + '说明 = "卷积 🧱"; conv = nn.Conv2d(3, 64, ker‸\n'))
    assert "kernel_size=" in items
    item = items["kernel_size="]
    assert item.insert_text == "kernel_size="
    assert item.documentation.value == kb.get("torch.nn.Conv2d").param("kernel_size").desc


async def test_keywords_already_given_are_not_offered_again(client: LanguageClient):
    items = by_label(await complete(client, HEADER + "conv = nn.Conv2d(3, 64, kernel_size=3, ‸\n"))
    assert "kernel_size=" not in items
    assert {"stride=", "padding=", "padding_mode="} <= set(items)


async def test_keyword_arguments_in_a_call_across_lines(client: LanguageClient):
    marked = HEADER + "loss_fn = nn.CrossEntropyLoss(\n    weight=None,  # 类别权重 ⚖️\n    ‸\n"
    items = by_label(await complete(client, marked))
    assert {"reduction=", "label_smoothing=", "ignore_index="} <= set(items)
    assert "weight=" not in items


def _choice_values(kb: KnowledgeBase, name: str, param: str) -> list[str]:
    return [choice.value for choice in kb.get(name).param(param).choices]


CHOICE_CASES = [
    # (call typed up to the value, entry, parameter)
    ('说明 = "损失 🎯"; c = nn.CrossEntropyLoss(reduction=‸', "torch.nn.CrossEntropyLoss", "reduction"),
    ("y = F.interpolate(x, scale_factor=2, mode=‸", "torch.nn.functional.interpolate", "mode"),
    ("nn.init.kaiming_normal_(w, mode='fan_out', nonlinearity=‸", "torch.nn.init.kaiming_normal_", "nonlinearity"),
    ("conv = nn.Conv2d(3, 8, 3, padding_mode=‸", "torch.nn.Conv2d", "padding_mode"),
    ("conv = nn.Conv2d(3, 8, 3, padding=‸", "torch.nn.Conv2d", "padding"),
]


@pytest.mark.parametrize(("line", "name", "param"), CHOICE_CASES, ids=[f"{c[1]}:{c[2]}" for c in CHOICE_CASES])
async def test_allowed_values_are_offered_with_what_each_does(client: LanguageClient, kb, line, name, param):
    expected = _choice_values(kb, name, param)
    items = by_label(await complete(client, HEADER + line + "\n"))
    assert list(items) == expected
    for choice in kb.get(name).param(param).choices:
        assert summary_of(items[choice.value]) == plain_text(choice.desc)


async def test_inside_quotes_the_values_come_without_quotes(client: LanguageClient, kb):
    items = by_label(
        await complete(client, HEADER + '说明 = "插值 🖼️"; y = F.interpolate(x, scale_factor=2, mode="bi‸\n')
    )
    assert set(items) == {"bilinear", "bicubic"}
    assert items["bilinear"].insert_text == "bilinear"
    reduction = by_label(await complete(client, HEADER + "c = nn.MSELoss(reduction='‸\n"))
    assert list(reduction) == [value.strip("'") for value in _choice_values(kb, "torch.nn.MSELoss", "reduction")]


# ------------------------------------------------------------------------------------------ signature help


async def test_signature_help_across_lines_highlights_the_parameter_in_chinese(client: LanguageClient, kb):
    marked = HEADER + "y = F.interpolate(\n    x,  # 特征图 🖼️\n    scale_factor=2,\n    mode=‸\n"
    help_ = await signature(client, marked)
    shown = help_.signatures[help_.active_signature]
    assert shown.label.startswith("torch.nn.functional.interpolate(")
    active = shown.parameters[help_.active_parameter if help_.active_parameter is not None else shown.active_parameter]
    start, end = active.label
    assert shown.label[start:end].startswith("mode")
    assert active.documentation.value == kb.get("torch.nn.functional.interpolate").param("mode").desc


async def test_signature_help_for_a_layer_positional_argument(client: LanguageClient, kb):
    help_ = await signature(client, HEADER + '说明 = "卷积 🧱"; conv = nn.Conv2d(3, 64, ‸\n')
    shown = help_.signatures[help_.active_signature]
    index = help_.active_parameter if help_.active_parameter is not None else shown.active_parameter
    start, end = shown.parameters[index].label
    assert shown.label[start:end].startswith("kernel_size")
    assert shown.parameters[index].documentation.value == kb.get("torch.nn.Conv2d").param("kernel_size").desc
    assert shown.documentation.value == kb.get("torch.nn.Conv2d").summary


async def test_overloads_of_torch_max_follow_the_arguments(client: LanguageClient):
    help_ = await signature(client, HEADER + '说明 = "最大值 📈"; values, indices = torch.max(x, 1, ‸\n')
    assert len(help_.signatures) >= 3, [s.label for s in help_.signatures]
    chosen = help_.signatures[help_.active_signature]
    assert "dim" in chosen.label, chosen.label
    index = help_.active_parameter if help_.active_parameter is not None else chosen.active_parameter
    start, end = chosen.parameters[index].label
    assert chosen.label[start:end].startswith("keepdim")


async def test_overloads_of_tensor_view(client: LanguageClient):
    help_ = await signature(client, HEADER + '说明 = "改形状 🔧"; y = x.view(‸\n')
    labels = [s.label for s in help_.signatures]
    assert len(labels) >= 2 and any("dtype" in label for label in labels), labels
    assert any("*size" in label for label in labels), labels


async def test_no_signature_help_outside_calls(client: LanguageClient):
    text, position = split_cursor(HEADER + "y = x‸\n")
    client.documents += 1
    uri = (client.root / f"case_{client.documents}.py").as_uri()
    await open_document(client, uri, text)
    result = await client.text_document_signature_help_async(
        types.SignatureHelpParams(text_document=types.TextDocumentIdentifier(uri), position=position)
    )
    assert result is None


# ------------------------------------------------------------------------------------------ settings, cancellation


async def test_enriched_mode_offers_only_what_torchls_explains(client: LanguageClient):
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"torchls": {"completion": {"mode": "enriched"}}})
    )
    try:
        for _ in range(100):  # the setting applies once the server has read the change
            result = await complete(client, HEADER + "y = torch.‸\n")
            if all(summary_of(item) for item in result.items):
                break
            await asyncio.sleep(0.05)
        assert result.items and all(summary_of(item) for item in result.items)
        model_items = await complete(client, HEADER + "model.‸\n")
        assert model_items.items and all(summary_of(item) for item in model_items.items)
        assert "fc" not in by_label(model_items), "the user's own attributes are the other server's to list"
    finally:
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"torchls": {"completion": {"mode": "all"}}})
        )
    for _ in range(100):
        if any(summary_of(item) is None for item in (await complete(client, HEADER + "y = torch.‸\n")).items):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("mode 'all' did not come back")


async def test_stale_requests_are_cancelled_and_the_last_one_answers(client: LanguageClient):
    """Twenty completions that need jedi, all but the last cancelled at once, as an editor does while typing.

    Each is in a document of its own (jedi infers each afresh), so the jedi thread is still busy with the first
    ones when the cancellations arrive: those still queued must never run.
    """
    # Short texts (cheap for the event loop), each new to jedi: listing a tensor's 700 members afresh is slow.
    places = [await open_marked(client, f"{HEADER}# 第 {n} 个 🧪\ntorch.chunk(x, 2)[0].‸\n") for n in range(20)]
    ids = [f"stale-{n}" for n in range(20)]
    # send_request writes at once (pytest-lsp's send_request_async would only write when awaited).
    futures = [
        asyncio.wrap_future(
            client.protocol.send_request(
                types.TEXT_DOCUMENT_COMPLETION,
                types.CompletionParams(text_document=types.TextDocumentIdentifier(uri), position=position),
                msg_id=msg_id,
            )
        )
        for (uri, position), msg_id in zip(places, ids, strict=True)
    ]
    for msg_id in ids[:-1]:
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    outcomes = await asyncio.gather(*futures, return_exceptions=True)
    cancelled = [o for o in outcomes[:-1] if isinstance(o, Exception) and "cancel" in str(o).lower()]
    assert len(cancelled) >= 10, [type(o).__name__ + str(o)[:80] for o in outcomes]
    assert not isinstance(outcomes[-1], Exception) and outcomes[-1].items, outcomes[-1]
