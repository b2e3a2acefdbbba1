"""Every parameter the card's live signature shows has Chinese text in its entry.

The hover card shows the installed torch's signature as jedi gives it (its overloads included: the constructors
of ``torch.Tensor`` list ``device``, ``storage``, ``other`` and ``size``), with the entry's Chinese text under each
parameter. A parameter jedi lists that the entry neither explains in ``params`` nor declares in ``omitted_params``
shows up in English or bare, so this test asks jedi, not ``inspect``, which parameters a card will show.
"""

from __future__ import annotations

import pytest

from torchls.kb.base import KnowledgeBase, shipped_folder
from torchls.resolve import Resolver

KB = KnowledgeBase.from_folders([shipped_folder()], use_cache=False)
# Kinds without a call signature are left out: whatever parameters jedi guesses for them (``ReduceOp.SUM`` shows
# ``factor``) are not shown on their cards.
_NOT_CALLABLE = frozenset({"attribute", "module", "property"})
NAMES = sorted(name for name in KB.entries if KB.get(name).kind not in _NOT_CALLABLE)  # type: ignore[union-attr]
# Catch-alls and the receiver: never explained per entry.
_EXEMPT = frozenset({"self", "cls", "args", "kwargs"})


@pytest.fixture(scope="module")
def resolver():
    resolver = Resolver()  # the test interpreter: the one with the installed torch
    try:
        resolver.warm_up(NAMES)  # describes every entry's name once, for the whole module
        yield resolver
    finally:
        resolver.close()


def _shown(name: str) -> bool:
    return name not in _EXEMPT and not name.startswith("_")  # private parameters are hidden by the renderer


@pytest.mark.parametrize("name", NAMES)
def test_every_live_parameter_has_chinese_text(resolver, name):
    entry = KB.get(name)
    assert entry is not None
    doc = resolver.cached_doc(name)
    if doc is None:
        pytest.skip("jedi does not know this name: the card shows the entry's own signature")
    documented = {p.name for p in entry.params} | set(entry.omitted_params)
    missing = [p for p in dict.fromkeys(doc.param_names) if _shown(p) and p not in documented]
    assert not missing, (
        f"{name}: jedi's signature ({' | '.join(doc.signatures) or '?'}) shows parameters with no Chinese text "
        f"in `params` and not in `omitted_params`: {missing}"
    )
