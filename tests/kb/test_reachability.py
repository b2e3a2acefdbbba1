"""Every shipped entry is reachable from the name jedi reports for it.

jedi names symbols where they are defined (``torch._C.TensorBase.view``); hover looks entries up by that name,
so each entry must be found from it, through the canonical-name rules or the entry's explicit ``aliases``.
"""

from __future__ import annotations

import re

import pytest

from torchls.kb.base import KnowledgeBase, shipped_folder
from torchls.resolve import Resolver

KB = KnowledgeBase.from_folders([shipped_folder()], use_cache=False)
KB.read_identity()  # as in a server whose table is built: climbs only to the same object


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


def _fast_path_member(name: str) -> str | None:
    """What the fast path calls an attribute read from an instance the file made: ``conv.weight`` after
    ``conv = torch.nn.Conv1d(...)``."""
    from torchls.core.names import ModuleIndex
    from torchls.core.parsing import parse_tolerant
    from torchls.core.text import Position, SourceText

    owner, attribute = name.rsplit(".", 1)
    text = f"import torch\nobj = {owner}()\nobj.{attribute}\n"
    target = ModuleIndex(parse_tolerant(text), SourceText(text)).target_at(Position(2, len("obj.")))
    return target.qualname if target is not None else None


def _on_private_base(jedi_name: str) -> bool:
    """jedi names a member where a private base class defines it (``torch.nn.modules.conv._ConvNd.weight``)."""
    from torchls.kb.canonical import candidates

    parts = candidates(jedi_name)[0].split(".")  # after the rewrites of private homes (``torch._C.``)
    return any(re.match(r"_[A-Z]", part) for part in parts[1:-1])


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
    if (found is None or found.name != name) and _on_private_base(doc.name):
        # Conv1d, Conv2d, Conv3d and the transposed convolutions all get ``weight`` from ``_ConvNd``: jedi's name
        # cannot tell their cards apart (and no single alias can), the receiver can. Hover finds these through
        # the fast path, which knows the receiver's class from the code that made it.
        assert _fast_path_member(name) == name, f"jedi calls {name} {doc.name!r} and the fast path misses it"
        assert KB.lookup(name) is not None and KB.lookup(name).name == name
        return
    assert found is not None and found.name == name, (
        f"jedi calls {name} {doc.name!r}, which finds {found.name if found else None}: "
        "fix the canonical rules or add an `aliases:` entry"
    )


ALIASES = sorted(
    (alias, entry.name)
    for entry in KB.entries.values()
    for alias in entry.aliases
    if not any(part.startswith("_") for part in alias.split("."))  # a public spelling, not jedi's private name
)


@pytest.mark.parametrize(("alias", "name"), ALIASES, ids=[alias for alias, _ in ALIASES])
def test_alias_is_found_from_jedis_name(resolver, alias, name):
    """A public alias (``torch.long`` for ``torch.int64``) leads to its entry from the name jedi reports for it."""
    doc = resolver.submit(resolver.describe, alias).result(timeout=120)
    if doc is None or not doc.name.startswith("torch"):
        assert _fast_path_name(alias) == alias, f"neither jedi nor the fast path finds {alias}"
        found = KB.lookup(alias)
    else:
        found = KB.lookup(doc.name)
    assert found is not None and found.name == name, (
        f"jedi calls {alias} {getattr(doc, 'name', None)!r}, which finds {found.name if found else None}, not {name}"
    )
