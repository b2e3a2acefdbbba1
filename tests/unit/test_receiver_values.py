"""What the interpreter proves about receivers (``x`` in ``x.view``), as hover reads it (``FileValues.class_of``).

These are the facts the editor's fast path used to prove alone: ``isinstance`` narrowing, items of
``model.modules()``, a layer's parameters, annotations, attributes assigned in several methods, buffers. Each
case has a near miss where the class must stay unknown, and the values that carry only a class never reach a
rule (``check_source`` stays quiet on code that only such values describe).
"""

from __future__ import annotations

import ast

import pytest

from torchls.core.checker import check_source
from torchls.core.parsing import parse_tolerant
from torchls.core.text import SourceText
from torchls.core.values_at import FileValues


def _classes(text: str, receiver: str) -> list[tuple[str, str | None] | None]:
    """The class of every ``receiver`` (as written) that is the receiver of an attribute, in source order."""
    parsed = parse_tolerant(text)
    values = FileValues(parsed.tree, SourceText(text))
    found = [
        (node.value.lineno, node.value.col_offset, values.class_of(node.value))
        for node in ast.walk(parsed.tree)
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) == receiver
    ]
    return [known for *_, known in sorted(found, key=lambda item: item[:2])]


HEADER = "import torch\nfrom torch import nn\nfrom typing import Optional, Tuple\n\n"


def test_isinstance_narrows_in_the_branch_only():
    text = HEADER + (
        "def init(m):\n"
        "    说明 = '初始化 🎯'\n"
        "    if isinstance(m, nn.Conv2d) and m.bias is not None:\n"
        "        m.weight\n"
        "    elif isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):\n"
        "        m.weight\n"
        "    m.training\n"
    )
    assert _classes(text, "m") == [
        ("torch.nn.Conv2d", None),
        ("torch.nn.Conv2d", None),
        ("torch.nn.Module", None),
        None,
    ]


def test_assert_isinstance_narrows_what_follows():
    text = HEADER + "def f(opt):\n    assert isinstance(opt, torch.optim.SGD)\n    opt.param_groups\n"
    assert _classes(text, "opt") == [("torch.optim.SGD", None)]


def test_module_iterators_and_layer_parameters():
    text = HEADER + (
        "model = nn.Sequential(nn.Linear(4, 4, bias=False), nn.ReLU())\n"
        "for m in model.modules():\n"
        "    m.eval()\n"
        "for name, p in model.named_parameters():\n"
        "    p.grad\n"
        "fc = nn.Linear(4, 2)\n"
        "fc.weight.zero_()\n"
        "plain = nn.Linear(4, 2, bias=False)\n"
        "plain.bias.zero_()\n"
    )
    assert _classes(text, "m") == [("torch.nn.Module", None)]
    assert _classes(text, "p") == [("torch.nn.Parameter", None)]
    assert _classes(text, "fc.weight") == [("torch.nn.Parameter", None)]
    assert _classes(text, "plain.bias") == [None], "bias=False: there is no bias tensor"


def test_annotations_give_a_class_and_nothing_more():
    text = HEADER + (
        "def f(x: Optional[torch.Tensor], pair: Tuple[torch.Tensor, torch.Tensor], net: nn.Module,\n"
        "      device: torch.device, n: int):\n"
        "    a, b = pair\n"
        "    x.view(-1); a.sum(); net.eval(); device.type; n.bit_length()\n"
    )
    assert _classes(text, "x") == [("torch.Tensor", None)]
    assert _classes(text, "a") == [("torch.Tensor", None)]
    assert _classes(text, "net") == [("torch.nn.Module", None)]
    assert _classes(text, "device") == [("torch.device", None)]
    assert _classes(text, "n") == [None]


def test_a_return_annotation_answers_where_the_returns_cannot_be_told():
    text = HEADER + (
        "CACHE = {}\n\n"
        "def table(key) -> torch.Tensor:\n"
        "    return CACHE[key]\n\n"
        "def untyped(key):\n"
        "    return CACHE[key]\n\n"
        "table(1).sum()\nt = table(2)\nt.mean()\nu = untyped(3)\nu.mean()\n"
    )
    assert _classes(text, "t") == [("torch.Tensor", None)]
    assert _classes(text, "u") == [None]


def test_unmodelled_tensor_functions_and_unbind_give_tensors():
    text = HEADER + (
        "def attend(q, k, v, qkv: torch.Tensor, other):\n"
        "    out = torch.nn.functional.scaled_dot_product_attention(q, k, v)\n"
        "    a, b, c = qkv.unbind(0)\n"
        "    out.transpose(1, 2); a.mean(); top = qkv.max(other); top.item()\n"
    )
    assert _classes(text, "out") == [("torch.Tensor", None)]
    assert _classes(text, "a") == [("torch.Tensor", None)]
    assert _classes(text, "top") == [None], (
        "max(other) is a tensor (other a tensor) or a (values, indices) pair (an int)"
    )


def test_an_attribute_assigned_in_several_methods_keeps_the_class_they_share():
    text = HEADER + (
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.head = nn.Linear(8, 2)\n"
        "        self.cache = nn.Linear(8, 2)\n"
        "        self.register_buffer('mask', torch.ones(4))\n\n"
        "    def reset(self, n):\n"
        "        self.head = nn.Linear(8, n) if n else nn.Identity()\n"
        "        self.cache = 0\n\n"
        "    def forward(self, x):\n"
        "        说明 = '头 🧠'; self.head.train(); self.cache.train(); self.mask.sum()\n"
        "        return x\n"
    )
    assert _classes(text, "self.head") == [("torch.nn.Module", None)]
    assert _classes(text, "self.cache") == [None], "a module once, an int later: no class to name"
    assert _classes(text, "self.mask") == [("torch.Tensor", None)]


def test_self_in_a_plain_class_reaches_its_methods():
    text = HEADER + (
        "class Pipeline:\n"
        "    def encode(self) -> torch.Tensor:\n"
        "        return self.table[0]\n\n"
        "    def run(self):\n"
        "        emb = self.encode()\n"
        "        emb.shape\n"
    )
    assert _classes(text, "emb") == [("torch.Tensor", None)]


@pytest.mark.parametrize(
    "body",
    [
        # a merged module is no Linear: a rule about Linear inputs must not check it
        "def build(deep):\n    head = nn.Linear(8, 2)\n    if deep:\n        head = nn.Linear(3, 2)\n"
        "    return head(torch.randn(4, 5))\n",
        # narrowed to a layer class: nothing about its arguments or device is known
        "def f(m, x):\n    if isinstance(m, nn.Linear):\n        y = m(x.cuda())\n        y.cpu()\n",
        # an annotated module and tensor: only classes
        "def g(net: nn.Module, x: torch.Tensor):\n    net.to('cuda')\n    return net(x)\n",
    ],
)
def test_class_only_values_give_no_rule_anything_to_report(body):
    assert check_source(HEADER + body).findings == []


def test_parameters_are_named_as_parameters():
    text = HEADER + (
        "class Scale(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.gamma = nn.Parameter(torch.ones(4))\n"
        "        self.register_buffer('steps', torch.zeros(1))\n\n"
        "    def forward(self, x):\n"
        "        说明 = '参数 ⚖️'; self.gamma.data; self.steps.add_(1)\n"
        "        return x\n"
        "fc = nn.Linear(4, 2)\n"
        "fc.weight.grad\n"
        "for p in fc.parameters():\n"
        "    p.grad\n"
    )
    assert _classes(text, "self.gamma") == [("torch.nn.Parameter", None)]
    assert _classes(text, "self.steps") == [("torch.Tensor", None)], "a buffer is a plain tensor"
    assert _classes(text, "fc.weight") == [("torch.nn.Parameter", None)]
    assert _classes(text, "p") == [("torch.nn.Parameter", None)]


def test_data_and_grad_of_a_tensor_or_a_parameter_are_tensors():
    text = HEADER + (
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(4, 2)\n"
        "        self.fc.weight.data.normal_(0, 0.02)\n\n"
        "def step(model: nn.Module, t: torch.Tensor, dtype):\n"
        "    for name, param in model.named_parameters():\n"
        "        param.data.add_(1); param.grad.zero_()\n"
        "    t.data.to(dtype)\n"
        "x = torch.randn(3)\n"
        "x.data.to(torch.float16); x.grad.zero_()\n"
        "module = nn.Linear(2, 2)\n"
        "module.weight.data.normal_(); module.bias.grad.zero_()\n"
        "net = Net()\n"
        "net.fc.weight.data.fill_(0)\n"
    )
    tensor = ("torch.Tensor", None)
    for receiver in ("self.fc.weight.data", "param.data", "param.grad", "t.data", "x.data", "x.grad"):
        assert _classes(text, receiver) == [tensor], receiver
    for receiver in ("module.weight.data", "module.bias.grad", "net.fc.weight.data"):
        assert _classes(text, receiver) == [tensor], receiver


def test_data_and_grad_of_what_is_no_tensor_stay_unknown():
    text = HEADER + (
        "import numpy as np\n"
        "class Box(torch.utils.data.Dataset):\n"
        "    def __init__(self):\n"
        "        self.data = [1, 2]\n"
        "        self.grad = None\n\n"
        "    def count(self):\n"
        "        return self.data.count(1)\n\n"
        "def f(batch):\n"
        "    batch.data.to('cpu')\n"
        "arr = np.zeros(3)\n"
        "arr.data.tobytes()\n"
        "box = Box()\n"
        "box.data.count(1); box.grad.zero_()\n"
    )
    for receiver in ("self.data", "batch.data", "arr.data", "box.data", "box.grad"):
        assert _classes(text, receiver) == [None], receiver
