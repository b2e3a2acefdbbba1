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


def _fast_path_name(name: str) -> str | None:
    """What hover's fast path (no jedi) calls ``name`` written in a file."""
    from torchls.core.names import ModuleIndex
    from torchls.core.parsing import parse_tolerant
    from torchls.core.text import Position, SourceText

    text = f"import torch\n{name}\n"
    target = ModuleIndex(parse_tolerant(text), SourceText(text)).target_at(Position(1, len(name) - 1))
    return target.qualname if target is not None else None


@pytest.mark.parametrize("name", sorted(KB.entries))
def test_entry_is_found_from_jedis_name(resolver, name):
    doc = resolver.submit(resolver.describe, name).result(timeout=120)
    if doc is None or not doc.name.startswith("torch") or doc.name.rsplit(".", 1)[-1] != name.rsplit(".", 1)[-1]:
        # jedi cannot follow it (a name made by a module ``__getattr__``; an enum member from a C stub, which it
        # reports as the enum class), or it is a re-export from the standard library (``torch.pi`` is ``math.pi``:
        # an alias would put the torch card on every ``math.pi``). Hover finds these by the name written in the
        # file, through the fast path.
        assert _fast_path_name(name) == name, f"neither jedi nor the fast path finds {name}"
        assert KB.lookup(name) is not None
        return
    found = KB.lookup(doc.name)
    assert found is not None and found.name == name, (
        f"jedi calls {name} {doc.name!r}, which finds {found.name if found else None}: "
        "fix the canonical rules or add an `aliases:` entry"
    )
