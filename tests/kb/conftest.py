from __future__ import annotations

import pytest

from torchls.kb.base import KnowledgeBase, shipped_folder
from torchls.kb.identity import Identity


@pytest.fixture(scope="session")
def shipped_kb() -> KnowledgeBase:
    kb = KnowledgeBase.from_folders([shipped_folder()], use_cache=False)
    kb.read_identity()  # what a server has once its table is built (a subprocess, then the cache)
    return kb


@pytest.fixture(scope="session")
def torch_identity(shipped_kb: KnowledgeBase) -> Identity:
    """The installed torch's names per object, for the shipped entries' namespaces."""
    assert shipped_kb.identity is not None, "the identity table could not be built from the installed torch"
    return shipped_kb.identity
