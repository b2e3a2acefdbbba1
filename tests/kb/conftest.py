from __future__ import annotations

import pytest

from torchls.kb.base import KnowledgeBase, shipped_folder


@pytest.fixture(scope="session")
def shipped_kb() -> KnowledgeBase:
    return KnowledgeBase.from_folders([shipped_folder()], use_cache=False)
