"""Every shipped entry is reachable from the name jedi reports for it.

jedi names symbols where they are defined (``torch._C.TensorBase.view``); hover looks entries up by that name,
so each entry must be found from it, through the canonical-name rules or the entry's explicit ``aliases``.
"""

from __future__ import annotations

import pytest

from torchls.kb.base import KnowledgeBase, shipped_folder
from torchls.resolve import Resolver

KB = KnowledgeBase.from_folders([shipped_folder()], use_cache=False)


@pytest.fixture(scope="module")
def resolver():
    resolver = Resolver()  # the test interpreter: the one with the installed torch
    yield resolver
    resolver.close()


@pytest.mark.parametrize("name", sorted(KB.entries))
def test_entry_is_found_from_jedis_name(resolver, name):
    doc = resolver.submit(resolver.describe, name).result(timeout=120)
    assert doc is not None, f"jedi does not know {name}"
    found = KB.lookup(doc.name)
    assert found is not None and found.name == name, (
        f"jedi calls {name} {doc.name!r}, which finds {found.name if found else None}: "
        "fix the canonical rules or add an `aliases:` entry"
    )
