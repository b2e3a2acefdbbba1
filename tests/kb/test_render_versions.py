"""Version warnings on cards: only when the user's torch is known and older than what the card describes."""

from __future__ import annotations

from dataclasses import replace

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


def _bare(name: str):
    """The entry as if it said no `since` anywhere: the cards then take the versions from knowledge/_versions.json."""
    entry = KB.get(name)
    assert entry is not None
    return replace(entry, since=None, params=tuple(replace(p, since=None) for p in entry.params))


def test_the_version_table_supplies_what_an_entry_does_not_say():
    rms = _bare("torch.nn.RMSNorm")  # added in 2.4 (the table, from the releases' sources)
    assert "⚠️ 这个 API 需要 torch ≥ 2.4，当前环境为 2.3。" in render_card(rms, compact=True, torch_version="2.3.1")
    assert "torch 2.4 起提供" in render_card(rms, compact=False)
    assert "需要 torch ≥" not in render_card(rms, compact=False, torch_version="2.4.0")


def test_parameters_newer_than_the_first_release_show_their_version():
    norm = _bare("torch.nn.LayerNorm")  # `bias` from 2.1, the rest in 1.13 already
    full = render_card(norm, compact=False)
    assert "torch ≥ 2.1" in full and full.count("torch ≥") == 1
    old = render_card(norm, compact=False, torch_version="2.0.1")
    assert "⚠️ 此参数需要 torch ≥ 2.1，当前环境为 2.0。" in old
    assert "`bias`（≥ 2.1）" in render_card(norm, compact=True, torch_version="2.0.1")
    param = render_param(norm, norm.name, "bias", torch_version="1.13.1")
    assert param is not None and "当前环境为 1.13" in param


def test_an_entry_without_a_table_row_or_a_folder_without_a_table_shows_no_version(tmp_path, monkeypatch):
    from torchls.kb import versions

    assert versions.api_since("torch.no_such_api") is None
    assert versions.param_since("torch.nn.LayerNorm", "normalized_shape") is None  # ≤1.13: nothing to show
    monkeypatch.setenv("TORCHLS_KNOWLEDGE", str(tmp_path / "empty"))
    assert versions.api_since("torch.nn.RMSNorm") is None
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / versions.TABLE_NAME).write_text("not json", encoding="utf-8")
    monkeypatch.setenv("TORCHLS_KNOWLEDGE", str(broken))
    assert versions.table() == {}


def test_deprecations_from_the_table_join_the_version_notes():
    jit = replace(KB.get("torch.jit.fork"), versions=())  # TorchScript warns from 2.11 on
    assert "torch 2.11 起弃用" in render_card(jit, compact=False)
    assert "起弃用" not in render_card(KB.get("torch.nn.Linear"), compact=False)
    full = render_card(KB.get("torch.jit.fork"), compact=False)  # the entry's own note (the docs say 2.5) wins
    assert "2.5：TorchScript 被官方标为弃用" in full and "torch 2.11 起弃用" not in full
