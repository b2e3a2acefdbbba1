"""jedi keeps answering when parso's disk cache is broken: a half-written pickle, or a folder it cannot create."""

from __future__ import annotations

from pathlib import Path

import jedi
import parso.cache
import pytest

from torchls.resolve import Resolver

HELPER = "import torch.nn as nn\nLAYER = nn.Linear(2, 3)\n"
USER = "from helpers import LAYER\nLAYER\n"


def _infer_layer(tmp_path) -> list[tuple[str, bool]]:
    resolver = Resolver()
    try:
        path = str(tmp_path / "user.py")
        return resolver.submit(resolver.receiver_types, USER, path, 1, len("LAYER")).result(120)
    finally:
        resolver.close()


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "helpers.py").write_text(HELPER, encoding="utf-8")
    return tmp_path


def test_a_corrupt_pickle_is_a_cache_miss(project, tmp_path_factory, monkeypatch):
    cache = tmp_path_factory.mktemp("jedi-cache")
    monkeypatch.setattr(jedi.settings, "cache_directory", str(cache))
    assert _infer_layer(project) == [("torch.nn.modules.linear.Linear", True)]
    pickles = list(cache.rglob("*.pkl"))
    assert pickles, "jedi saved no parse of helpers.py: this test no longer tests a corrupt pickle"
    for path in pickles:
        path.write_bytes(b"\x80\x05truncated")  # a disk that filled up mid-write
    # Only the copy on disk is left: parso must read the broken pickle, and read the source again instead.
    for modules in parso.cache.parser_cache.values():
        for key in [key for key in modules if key is not None and Path(key) == project / "helpers.py"]:
            del modules[key]
    assert _infer_layer(project) == [("torch.nn.modules.linear.Linear", True)]


def test_a_cache_folder_that_cannot_exist_is_a_cache_miss(project, tmp_path_factory, monkeypatch):
    not_a_folder = tmp_path_factory.mktemp("home") / "cache-is-a-file"
    not_a_folder.write_text("", encoding="utf-8")
    monkeypatch.setattr(jedi.settings, "cache_directory", str(not_a_folder / "jedi"))
    assert _infer_layer(project) == [("torch.nn.modules.linear.Linear", True)]
