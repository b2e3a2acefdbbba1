"""The fast path: qualified names through imports and the inference it can do for free."""

from __future__ import annotations

import pytest

from torchls.core.names import ModuleIndex
from torchls.core.parsing import parse_tolerant
from torchls.core.text import Position, SourceText


def target(text: str, line_contains: str, symbol: str):
    index = ModuleIndex(parse_tolerant(text), SourceText(text))
    lines = text.splitlines()
    line = next(i for i, content in enumerate(lines) if line_contains in content)
    column = lines[line].index(symbol, lines[line].index(line_contains))
    return index.target_at(Position(line, column + 1))


@pytest.mark.parametrize(
    ("imports", "use", "expected"),
    [
        ("import torch", "torch.randn(3)", "torch.randn"),
        ("import torch.nn as nn", "nn.Linear(2, 3)", "torch.nn.Linear"),
        ("from torch import nn", "nn.Linear(2, 3)", "torch.nn.Linear"),
        ("from torch.nn import functional as F", "F.softmax(x)", "torch.nn.functional.softmax"),
        ("import torch.nn.functional as F", "F.softmax(x)", "torch.nn.functional.softmax"),
        ("from torch.optim import AdamW", "AdamW(p)", "torch.optim.AdamW"),
        ("from torch.nn import CrossEntropyLoss as CE", "CE()", "torch.nn.CrossEntropyLoss"),
        ("import torch.nn", "torch.nn.ReLU()", "torch.nn.ReLU"),
    ],
)
def test_imports_qualify_names(imports, use, expected):
    text = f"{imports}\n说明 = '中文 🎉'; y = {use}\n"
    symbol = use.split("(")[0].rsplit(".", 1)[-1]
    found = target(text, use, symbol)
    assert found.kind == "reference"
    assert found.qualname == expected


def test_import_statement_names_are_targets():
    text = "import torch.nn.functional as F\nfrom torch.nn import CrossEntropyLoss as CE\n"
    assert target(text, "import torch.nn", "nn").qualname == "torch.nn"
    assert target(text, "import torch.nn", "F").qualname == "torch.nn.functional"
    assert target(text, "from torch.nn", "CrossEntropyLoss").qualname == "torch.nn.CrossEntropyLoss"
    assert target(text, "from torch.nn", "CE").qualname == "torch.nn.CrossEntropyLoss"
    assert target(text, "from torch.nn", "torch").qualname == "torch"


TRAINING = """\
import torch
import torch.nn as nn
from torch import optim

class Base(nn.Module):
    pass

class Net(Base):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.fc(self.act(x))

    def parameters_count(self):
        return sum(p.numel() for p in self.parameters())

model = Net()
opt = optim.AdamW(model.parameters())
criterion = nn.CrossEntropyLoss()
x = torch.randn(8, 4)
x = x.view(8, 4)
h = (x @ x.T).relu()
loss = criterion(model(x), torch.zeros(8).long())
loss.backward()
opt.step()
model.parameters_count()
"""


@pytest.mark.parametrize(
    ("line_contains", "symbol", "kind", "expected"),
    [
        ("return self.fc(self.act(x))", "fc", "instance", "torch.nn.Linear"),
        ("return self.fc(self.act(x))", "act", "instance", "torch.nn.ReLU"),
        ("opt = optim.AdamW(model.parameters())", "parameters", "reference", "torch.nn.Module.parameters"),
        ("return sum(p.numel() for p in self.parameters())", "parameters", "reference", "torch.nn.Module.parameters"),
        ("x = x.view(8, 4)", "view", "reference", "torch.Tensor.view"),
        ("h = (x @ x.T).relu()", "relu", "reference", "torch.Tensor.relu"),
        ("loss.backward()", "backward", "reference", "torch.Tensor.backward"),
        ("opt.step()", "step", "reference", "torch.optim.AdamW.step"),
        ("loss = criterion(", "criterion", "instance", "torch.nn.CrossEntropyLoss"),
    ],
)
def test_simple_inference(line_contains, symbol, kind, expected):
    found = target(TRAINING, line_contains, symbol)
    assert (found.kind, found.qualname) == (kind, expected)


def test_user_methods_are_not_torch():
    found = target(TRAINING, "model.parameters_count()", "parameters_count")
    assert found.qualname is None


def test_keyword_argument_names_its_callee():
    text = 'import torch.nn as nn\n说明 = "🎯"; c = nn.CrossEntropyLoss(reduction="sum")\n'
    found = target(text, "reduction=", "reduction")
    assert (found.kind, found.qualname, found.keyword) == ("keyword", "torch.nn.CrossEntropyLoss", "reduction")


def test_unknown_values_stay_unknown():
    text = "import torch\nx = load()\nx.view(3)\nfor t in xs:\n    t.view(2)\n"
    assert target(text, "x.view", "view").qualname is None
    assert target(text, "t.view", "view").qualname is None


def test_a_rebound_import_name_is_not_trusted():
    text = "import torch.nn.functional as F\nF = MyFunctional()\nF.relu(x)\n"
    assert target(text, "F.relu", "relu").qualname is None


def test_whitespace_has_no_target():
    text = "import torch\n\nx = torch.randn(3)   \n"
    index = ModuleIndex(parse_tolerant(text), SourceText(text))
    assert index.target_at(Position(1, 0)) is None
    assert index.target_at(Position(2, 21)) is None
    assert index.target_at(Position(99, 3)) is None


def test_syntax_error_elsewhere_keeps_other_lines():
    text = "import torch\nx = torch.randn(3\ny = torch.zeros(2)\nif True\nz = torch.ones(1)\n"
    assert target(text, "z = torch.ones", "ones").qualname == "torch.ones"
