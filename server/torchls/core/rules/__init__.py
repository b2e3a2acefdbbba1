"""The explicit registry of every rule. Each band's package lists its rules; a new rule is one module plus one
line in its band's ``__init__.py``."""

from __future__ import annotations

from torchls.core.rules import device, loop, loss, shape
from torchls.core.rules.base import Rule, WalkAnalysis
from torchls.core.rules.device.common import ModelMoves

ALL_RULES: list[type[Rule]] = sorted(
    [*shape.RULES, *device.RULES, *loss.RULES, *loop.RULES], key=lambda rule: rule.code
)

RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}

# The analyses recorded during the walk (``base.WalkAnalysis``): the checker runs them whichever rules are selected.
WALK_ANALYSES: tuple[type[WalkAnalysis], ...] = (ModelMoves,)
