"""jedi keeps answering when parso's disk cache is broken: a half-written pickle, or a folder it cannot create.

Each Resolver starts its own jedi process, which reads ``XDG_CACHE_HOME`` when it starts and has nothing parsed
in memory yet: what it needs comes from the disk cache or from the source."""

from __future__ import annotations

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
    cache = tmp_path_factory.mktemp("cache-home")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    assert _infer_layer(project) == [("torch.nn.modules.linear.Linear", True)]
    pickles = list(cache.rglob("*.pkl"))
    assert pickles, "jedi saved no parse: this test no longer tests a corrupt pickle"
    for path in pickles:
        path.write_bytes(b"\x80\x05truncated")  # a disk that filled up mid-write
    # A new jedi process reads the broken pickles, and must parse the sources again instead.
    assert _infer_layer(project) == [("torch.nn.modules.linear.Linear", True)]


def test_a_cache_folder_that_cannot_exist_is_a_cache_miss(project, tmp_path_factory, monkeypatch):
    not_a_folder = tmp_path_factory.mktemp("home") / "cache-is-a-file"
    not_a_folder.write_text("", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(not_a_folder))
    assert _infer_layer(project) == [("torch.nn.modules.linear.Linear", True)]
