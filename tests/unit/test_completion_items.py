"""How completion items go on the wire for clients of different capabilities, which names a partial name offers,
and how a torch class's member list is built from jedi's listing and the knowledge base."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pytest_lsp import client_capabilities

from torchls.completion.items import Item, narrowed, offered, typed_underscores
from torchls.lsp.completion import _client_resolves_detail, _to_lsp

ITEM = Item(label="randn", kind="function", qualname="torch.randn", summary="返回标准正态分布的随机张量 🎲")


def _capabilities(client: str, label_details: bool):
    capabilities = client_capabilities(client)
    capabilities.text_document.completion.completion_item.label_details_support = label_details
    return SimpleNamespace(client_capabilities=capabilities)


@pytest.mark.parametrize(
    ("client", "label_details", "lazy"),
    [
        ("visual-studio-code", True, True),  # shows labelDetails, resolves detail
        ("visual-studio-code", False, False),  # shows only detail: it must come with the list
        ("neovim", True, False),  # does not resolve detail
    ],
)
def test_detail_is_left_to_resolve_only_where_the_client_shows_label_details_and_resolves_it(
    client, label_details, lazy
):
    server = _capabilities(client, label_details)
    assert _client_resolves_detail(server) is lazy
    item = _to_lsp(ITEM, lazy)
    assert item.label_details.description == ITEM.summary
    assert item.detail == (None if lazy else ITEM.summary)
    assert item.data == {"name": "torch.randn"}  # what resolve needs to fill it in


def test_an_item_with_its_documentation_inline_keeps_its_detail():
    keyword = Item(
        label="kernel_size=",
        kind="argument",
        qualname="torch.nn.Conv2d",
        summary="卷积核大小",
        documentation="卷积核的高和宽",
    )
    assert _to_lsp(keyword, lazy_detail=True).detail == "卷积核大小"


def test_a_client_without_completion_capabilities_gets_the_detail():
    bare = SimpleNamespace(client_capabilities=SimpleNamespace(text_document=None))
    assert _client_resolves_detail(bare) is False


@pytest.mark.parametrize(
    ("partial", "shown"),
    [
        ("", {"view", "T"}),
        ("_", {"view", "T", "_base", "_"}),
        ("__", {"view", "T", "_base", "_", "__init__", "__mangled"}),
        ("___", {"view", "T", "_base", "_", "__init__", "__mangled"}),
    ],
)
def test_private_names_are_offered_once_an_underscore_is_typed_and_dunder_names_once_two_are(partial, shown):
    labels = ["view", "T", "_base", "_", "__init__", "__mangled"]
    assert {label for label in labels if offered(label, typed_underscores(partial))} == shown


def test_a_partial_name_keeps_what_it_may_show_and_matches():
    items = [Item(label=label, kind="method") for label in ("view", "_version", "_apply", "__init__", "add_")]
    assert [item.label for item in narrowed(items, "")] == ["view", "add_"]
    assert [item.label for item in narrowed(items, "_")] == ["_version", "_apply", "add_"]  # `_` matches add_ too
    assert [item.label for item in narrowed(items, "_ap")] == ["_apply"]
    assert [item.label for item in narrowed(items, "__")] == ["__init__"]


def test_before_jedi_has_read_torch_an_instance_lists_what_the_knowledge_base_documents_for_it_and_its_bases():
    import asyncio

    from torchls.completion.members import jedi_ready, members_list
    from torchls.session import Session

    session = Session()
    try:
        assert not jedi_ready(session.resolver)
        items, complete = asyncio.run(members_list(session, "torch.cuda.amp.GradScaler", True, False))
        assert not complete, "the client must ask again"
        # torch.cuda.amp.GradScaler's members are documented under torch.amp.GradScaler, its base.
        assert {"scale", "step", "update", "unscale_"} <= {item.label for item in items}
        assert all(item.summary for item in items)
        layer, _ = asyncio.run(members_list(session, "torch.nn.Linear", True, False))
        assert "parameters" in {item.label for item in layer}  # documented as torch.nn.Module.parameters
        again, _ = asyncio.run(members_list(session, "torch.nn.Linear", True, False))
        assert again is layer, "the same provisional list each time, not one that depends on timing"
    finally:
        session.close()


# Layers no test lists before, with a member of their own.
_UNLISTED_LAYERS = {
    "torch.nn.Bilinear": "in1_features",
    "torch.nn.Fold": "kernel_size",
    "torch.nn.PixelUnshuffle": "downscale_factor",
    "torch.nn.Hardshrink": "lambd",
}


def test_once_jedi_has_read_torch_the_first_request_for_a_new_class_gets_its_complete_list(monkeypatch):
    import asyncio

    from torchls.completion import members
    from torchls.completion.members import jedi_ready, members_list
    from torchls.session import Session

    # The request waits for jedi's listing (40-90 ms when the machine is idle); what is tested is that it waits
    # for that one listing, not how long a listing takes on a loaded test machine.
    monkeypatch.setattr(members, "_LISTING_WAIT_SECONDS", 30.0)
    session = Session()
    try:
        resolver = session.resolver
        for _label, step in resolver.member_plan():  # the completion half of the warm-up; warm stays unset
            resolver.submit(step).result(180)
        assert jedi_ready(resolver) and not resolver.warm.is_set()
        # A class jedi has not listed yet (an earlier session may have saved some of these with its cache).
        layer, own = next((c, m) for c, m in _UNLISTED_LAYERS.items() if resolver.cached_members(c, True) is None)
        items, complete = asyncio.run(members_list(session, layer, True, False))
        labels = {item.label for item in items}
        assert complete
        assert {own, "parameters"} <= labels  # jedi's listing, with Module's members
        assert not [label for label in labels if label.startswith("_")]
        private, _ = asyncio.run(members_list(session, layer, True, False, underscores=1))
        assert "_apply" in {item.label for item in private}
        again, _ = asyncio.run(members_list(session, layer, True, False))
        assert again is items, "the next keystroke gets the same list object (its encoding is kept by identity)"
    finally:
        session.close()


def test_the_most_used_lists_are_built_and_converted_when_the_warm_up_ends():
    import asyncio

    from torchls.lsp.completion import _as_json, prepare_lists
    from torchls.lsp.server import TorchLanguageServer
    from torchls.session import Session

    server = TorchLanguageServer()
    server.protocol.client_capabilities = client_capabilities("visual-studio-code")  # as after `initialize`
    server.session = Session()
    try:
        resolver = server.session.resolver
        for _label, step in resolver.member_plan():  # the completion half of the warm-up
            resolver.submit(step).result(180)
        resolver.warm.set()
        asyncio.run(prepare_lists(server))
        prepared = {len(items): converted for items, converted in server.converted_lists.values()}
        torch_items = next(
            items for items, _ in server.converted_lists.values() if any(i.label == "randn" for i in items)
        )
        assert len(torch_items) > 1000, "torch's own members, not a provisional list"
        assert _as_json(server, torch_items) is prepared[len(torch_items)], "the next keystroke reuses the conversion"
        assert len(server.converted_lists) == 4  # torch., nn., F. and a tensor's members
    finally:
        server.session.close()


def test_label_details_and_detail_are_plain_text_without_back_quotes():
    # Both fields are shown as plain text: the knowledge base's inline code marks would show as they are.
    item = Item(label="relu", kind="function", summary="逐元素计算 ReLU，即 `max(0, x)`：负数变 **0**。")
    converted = _to_lsp(item, lazy_detail=False)
    assert converted.label_details.description == "逐元素计算 ReLU，即 max(0, x)：负数变 0。"
    assert converted.detail == converted.label_details.description
