"""One import model (core/imports.py): hover's index and the checker's rules read the same meaning of each name."""

from __future__ import annotations

import ast

import pytest

from torchls.core.checker import Checker
from torchls.core.imports import file_imports
from torchls.core.names import ModuleIndex
from torchls.core.parsing import parse_tolerant
from torchls.core.rules.base import Context
from torchls.core.text import Position, SourceText

PROGRAM = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    import apex
except ImportError:
    apex = None


def smooth(F, logits):
    # 说明 😀: F here is the caller's smoothing object, not torch.nn.functional
    return F.softmax(logits)


def plain(logits):
    return F.softmax(logits, dim=-1)


def lazily(x):
    import numpy as np

    return np.asarray(x)


def outer(nn):
    def inner(x):
        return nn.Linear(4, 2)(x)

    return inner
"""


def _hover_qualname(line_contains: str, symbol: str) -> str | None:
    """What hover's index says ``symbol`` on the line containing ``line_contains`` is (a reference's name)."""
    index = ModuleIndex(parse_tolerant(PROGRAM), SourceText(PROGRAM))
    lines = PROGRAM.splitlines()
    line = next(i for i, content in enumerate(lines) if line_contains in content)
    column = lines[line].index(symbol, lines[line].index(line_contains))
    target = index.target_at(Position(line, column + len(symbol) - 1))
    return target.qualname if target is not None and target.kind == "reference" else None


def _rule_qualname(line_contains: str, symbol: str) -> str | None:
    """What the checker's Context says the same expression is."""
    tree = ast.parse(PROGRAM)
    ctx = Context(SourceText(PROGRAM), file_imports(tree))
    ctx.tree = tree
    line = next(i for i, content in enumerate(PROGRAM.splitlines()) if line_contains in content) + 1
    found = [
        n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.lineno == line and ast.unparse(n) == symbol
    ]
    assert len(found) == 1, symbol
    return ctx.qualify(found[0])


@pytest.mark.parametrize(
    ("line_contains", "symbol", "expected"),
    [
        ("return F.softmax(logits)", "F.softmax", None),  # a parameter named F shadows the import
        ("return F.softmax(logits, dim=-1)", "F.softmax", "torch.nn.functional.softmax"),
        ("return np.asarray", "np.asarray", "numpy.asarray"),  # a function's own import
        ("return nn.Linear(4, 2)", "nn.Linear", None),  # shadowed by the enclosing function's parameter
    ],
)
def test_hover_and_rules_agree_on_what_a_name_is(line_contains, symbol, expected):
    assert _rule_qualname(line_contains, symbol) == expected
    assert _hover_qualname(line_contains, symbol.rsplit(".", 1)[-1]) == expected


def test_a_module_level_name_also_assigned_is_not_the_import():
    imports = file_imports(ast.parse(PROGRAM))
    assert "apex" not in imports.table  # `apex = None` where the import failed
    assert imports.table["F"] == "torch.nn.functional"
    assert imports.table["torch"] == "torch"


def test_a_lazy_import_in_a_function_stands_for_the_module_elsewhere():
    text = "def load():\n    import numpy as np\n    return np.zeros(3)\n\n\ndef use():\n    return np.ones(2)\n"
    assert file_imports(ast.parse(text)).table == {"np": "numpy"}


def test_relative_imports_resolve_only_with_the_files_module():
    text = "from ..layers import DropPath\nfrom . import helpers\n"
    assert file_imports(ast.parse(text)).relative == {}
    assert file_imports(ast.parse(text), ("timm.models.vit", False)).relative == {
        "DropPath": "timm.layers.DropPath",
        "helpers": "timm.models.helpers",
    }


def test_a_rule_stays_silent_where_a_parameter_shadows_the_import():
    # TL308 (softmax without dim) is about torch's softmax only: a parameter F is something else
    shadowed = "import torch.nn.functional as F\n\n\ndef smooth(F, logits):\n    return F.softmax(logits)\n"
    assert not [f for f in Checker().check(shadowed).findings if f.code == "TL308"]
    plain = "import torch.nn.functional as F\n\n\ndef smooth(logits):\n    return F.softmax(logits)\n"
    assert [f.code for f in Checker().check(plain).findings] == ["TL308"]
