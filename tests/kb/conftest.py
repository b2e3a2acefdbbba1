from __future__ import annotations

import pytest

from torchls.kb import identity
from torchls.kb.base import KnowledgeBase, shipped_folder
from torchls.kb.identity import Identity


@pytest.fixture(scope="session")
def torch_identity() -> Identity:
    """The installed torch's names per object, as the server builds them (a subprocess, then the cache)."""
    table = identity.load()
    assert table is not None, "the identity table could not be built from the installed torch"
    return table


@pytest.fixture(scope="session")
def shipped_kb(torch_identity: Identity) -> KnowledgeBase:
    kb = KnowledgeBase.from_folders([shipped_folder()], use_cache=False)
    kb.identity = torch_identity  # what a server has once its table is built
    return kb
