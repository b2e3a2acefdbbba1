"""jedi's inference state is shared between requests for speed; an edit must still change the answers."""

from __future__ import annotations

import pytest

from torchls.resolve import Resolver

BEFORE = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(2, 3)

    def forward(self, x):
        return self.layer
"""


@pytest.fixture(scope="module")
def resolver():
    resolver = Resolver()
    yield resolver
    resolver.close()


def _layer_type(resolver: Resolver, text: str, path: str) -> list[tuple[str, bool]]:
    line = text.splitlines().index("        return self.layer")
    return resolver.submit(resolver.receiver_types, text, path, line, len("        return self.layer")).result(60)


def test_an_edit_elsewhere_in_the_file_changes_the_inferred_type(resolver, tmp_path):
    path = str(tmp_path / "model.py")
    assert _layer_type(resolver, BEFORE, path) == [("torch.nn.modules.linear.Linear", True)]
    after = BEFORE.replace("nn.Linear(2, 3)", "nn.Conv2d(2, 3, 1)")
    assert _layer_type(resolver, after, path) == [("torch.nn.modules.conv.Conv2d", True)]
    # Back to the first text: its memoized answers are still right.
    assert _layer_type(resolver, BEFORE, path) == [("torch.nn.modules.linear.Linear", True)]


def test_a_saved_module_is_read_again_after_forget(resolver, tmp_path):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")  # a project root, as jedi finds one
    helper = tmp_path / "helpers.py"
    helper.write_text("import torch.nn as nn\nLAYER = nn.Linear(2, 3)\n", encoding="utf-8")
    user = "from helpers import LAYER\nLAYER\n"
    path = str(tmp_path / "user.py")

    def infer() -> list[tuple[str, bool]]:
        return resolver.submit(resolver.receiver_types, user, path, 1, len("LAYER")).result(60)

    assert infer() == [("torch.nn.modules.linear.Linear", True)]
    helper.write_text("import torch.nn as nn\nLAYER = nn.ReLU()\n", encoding="utf-8")
    resolver.submit(resolver.forget_inference).result(10)
    assert infer() == [("torch.nn.modules.activation.ReLU", True)]
