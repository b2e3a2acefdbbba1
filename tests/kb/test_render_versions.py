"""Version warnings on cards: only when the user's torch is known and older than what the card describes."""

from __future__ import annotations

import pytest

from torchls.kb.base import KnowledgeBase, shipped_folder
from torchls.kb.render import render_card, render_param, version_tuple

KB = KnowledgeBase.from_folders([shipped_folder()], use_cache=False)
SDPA = KB.get("torch.nn.functional.scaled_dot_product_attention")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2.13.0+cpu", (2, 13, 0)), ("1.13", (1, 13)), ("2.5.0a0+git1234", (2, 5, 0)), ("unknown", None), ("", None)],
)
def test_version_tuple(text, expected):
    assert version_tuple(text) == expected


@pytest.mark.parametrize("installed", ["2.13.0+cpu", "2.5", "2.5.0", None, "nightly"])
def test_no_warning_when_torch_is_new_enough_or_unknown(installed):
    card = render_card(SDPA, compact=False, torch_version=installed)
    assert "需要 torch ≥" not in card


def test_warnings_name_the_needed_and_the_installed_version():
    card = render_card(SDPA, compact=False, torch_version="2.4.1")
    assert "这个 API 需要" not in card  # the API is from 2.0
    assert "⚠️ 此参数需要 torch ≥ 2.5，当前环境为 2.4。" in card
    old = render_card(SDPA, compact=True, torch_version="1.13.1+cu117")
    assert "⚠️ 这个 API 需要 torch ≥ 2.0，当前环境为 1.13。" in old
    param = render_param(SDPA, SDPA.name, "enable_gqa", torch_version="2.4.1")
    assert param is not None and "当前环境为 2.4" in param
