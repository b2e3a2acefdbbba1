"""The fast path: qualified names through imports and the inference it can do for free."""

from __future__ import annotations

import textwrap

import pytest

from torchls.core.names import ModuleIndex, Value
from torchls.core.parsing import parse_tolerant
from torchls.core.text import Position, SourceText


def target(text: str, line_contains: str, symbol: str):
    index = ModuleIndex(parse_tolerant(text), SourceText(text))
    lines = text.splitlines()
    line = next(i for i, content in enumerate(lines) if line_contains in content)
    column = lines[line].index(symbol, lines[line].index(line_contains))
    return index.target_at(Position(line, column + 1))


def value_returned_last(name: str, text: str):
    """What the fast path proves ``name`` holds in the ``return`` on the last line of ``text``."""
    lines = text.splitlines()
    row = len(lines) - 1
    column = lines[row].index(f" {name}", lines[row].index("return")) + 1
    index = ModuleIndex(parse_tolerant(text), SourceText(text))
    return index.value_at(name, Position(row, column + len(name)))


def value_of(text: str, line_contains: str, name: str):
    """What the fast path proves ``name`` holds where it is written on the line containing ``line_contains``."""
    index = ModuleIndex(parse_tolerant(text), SourceText(text))
    lines = text.splitlines()
    line = next(i for i, content in enumerate(lines) if line_contains in content)
    column = lines[line].index(name, lines[line].index(line_contains))
    return index.value_at(name, Position(line, column))


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


TENSOR = Value("torch.Tensor")


def unpacking_source(binding: str, name: str) -> str:
    return (
        "import torch\nimport torch.nn as nn\n\n"
        "def 用户函数(x):\n    return x, load(x)\n\n"
        f"x = torch.randn(5, 4)\n{binding}\n说明 = '张量 🎲'; {name}.view(-1)\n"
    )


@pytest.mark.parametrize(
    ("binding", "name"),
    [
        ("q, k, v = x.unbind(0)", "k"),
        ("a, b = x.chunk(2, dim=-1)", "b"),
        ('h, w = torch.meshgrid(x[0], x[1], indexing="ij")', "w"),
        ("values, indices = torch.max(x, dim=1)", "indices"),
        ("values, indices = x.max(1)", "values"),
        ("top_v, top_i = x.topk(2)", "top_i"),
        ("first, second = torch.split(x, [2, 3])", "second"),
        ("均值, 方差 = torch.var_mean(x, dim=0)", "方差"),
        ("u, s, vh = torch.linalg.svd(x)", "vh"),
        ("row0, row1 = x", "row1"),
        ("[p, q], r = x.split(2)", "q"),
        ("*init, last = x.chunk(3)", "last"),
        ("a, b = x.chunk(2)\na, b = b, a", "a"),
        ("parts = x.chunk(2)\nleft, right = parts", "right"),
        ("w = nn.Parameter(torch.randn(2, 3))\nw0, w1 = w", "w1"),
        ("best = torch.max(x, 1)[0]", "best"),
    ],
)
def test_unpacking_a_sequence_of_tensors_binds_tensors(binding, name):
    text = unpacking_source(binding, name)
    assert value_of(text, f"{name}.view(-1)", name) == TENSOR
    found = target(text, f"{name}.view(-1)", "view")
    assert (found.kind, found.qualname) == ("reference", "torch.Tensor.view")


@pytest.mark.parametrize(
    ("binding", "name"),
    [
        ("a, b = 用户函数(x)", "b"),
        ("a, b = x.shape", "a"),
        ("a, b = x.size()", "b"),
        ("a, b = x.tolist()", "a"),
        ("*rest, last = x.chunk(3)", "rest"),
        ("a, b = x.chunk(2)\nb = load()", "b"),
        ("a, b = zip(x.unbind(0), x.unbind(1))", "a"),
        ("tail = x.chunk(3)[1:]", "tail"),
        ("parts = [x, x]\nparts.append(None)\nfirst, second = parts", "second"),
        ("self_made, other = x.chunk(2), None\na, b = self_made", "other"),
    ],
)
def test_unpacking_what_is_not_certainly_tensors_stays_unknown(binding, name):
    text = unpacking_source(binding, name)
    assert value_of(text, f"{name}.view(-1)", name) is None
    assert target(text, f"{name}.view(-1)", "view").qualname is None


LOOPS = """\
import torch

x = torch.randn(8, 4)
for 块 in x.split(4):
    说明 = "分块 🧩"; 块.sum()
for t in torch.unbind(x):
    说明 = "解绑 🔓"; t.sum()
for 行 in x:
    说明 = "逐行 📏"; 行.sum()
for i, 片 in enumerate(x.chunk(2)):
    说明 = "编号 🔢"; 片.sum(); i.bit_length()
for 左, 右 in zip(x.unbind(0), x.unbind(1)):
    说明 = "拉链 🤐"; 右.sum()
for 名字 in load():
    说明 = "未知 ❓"; 名字.sum()
for 块 in x.split(4):
    说明 = "重新绑定 🔁"; 块 = load()
    说明 = "重新绑定后 🔁"; 块.sum()
else:
    说明 = "否则 🚪"; t.sum()
说明 = "循环后 🚪"; 行.sum()
"""


@pytest.mark.parametrize(
    ("line_contains", "name", "expected"),
    [
        ("块.sum()", "块", TENSOR),
        ("t.sum()", "t", TENSOR),
        ("行.sum()", "行", TENSOR),
        ("片.sum()", "片", TENSOR),
        ("i.bit_length()", "i", None),
        ("右.sum()", "右", TENSOR),
        ("名字.sum()", "名字", None),
        ("重新绑定后 🔁", "块", None),
        ("否则 🚪", "t", None),  # the loop's last element, or the earlier value when there was none
        ("循环后 🚪", "行", None),
    ],
)
def test_for_loop_targets(line_contains, name, expected):
    assert value_of(LOOPS, line_contains, name) == expected


def test_a_shadowed_enumerate_is_not_stepped_through():
    text = (
        "import torch\nx = torch.randn(4, 2)\ndef enumerate(xs):\n    return load(xs)\n"
        "for i, 片 in enumerate(x.chunk(2)):\n    说明 = '自定义 🛠️'; 片.sum()\n"
    )
    assert value_of(text, "片.sum()", "片") is None


ATTENTION = """\
import torch
import torch.nn as nn


class 注意力(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def reset(self):
        self.proj, self.scale = build()

    def forward(self, x: torch.Tensor):
        B, N, C = x.shape
        qkv = x.reshape(B, N, 3, 8).permute(2, 0, 1, 3)
        q, k, v = qkv.unbind(0)
        说明 = "注意力 🎯"; attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        说明 = "输出 📤"; return self.proj(attn @ v)
"""


def test_unpacking_in_a_method():
    assert target(ATTENTION, "k.transpose", "transpose").qualname == "torch.Tensor.transpose"
    assert value_of(ATTENTION, "attn @ v", "v") == TENSOR
    assert value_of(ATTENTION, "qkv = x.reshape(B", "B") is None


def test_unpacking_into_self_attributes_forgets_them():
    found = target(ATTENTION, "self.proj(attn", "proj")
    assert found.qualname is None


LAYERS_CALLED = """\
import torch.nn as nn


class 块(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)
        self.norm = nn.LayerNorm(dim)
        self.blocks = nn.Sequential(nn.Linear(dim, dim))
        self.blocks2 = nn.Sequential(*make_layers(dim))

    def helper(self, x):
        return x

    def forward(self, x):
        qkv = self.qkv(x).reshape(2, 3, -1)
        q, k, v = qkv.unbind(0)
        y = self.norm(x)
        z = self.blocks(x)
        z2 = self.blocks2(x)
        w = self.helper(x)
        说明 = "层的输出 🧮"; return qkv, q, y, z, z2, w
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("qkv", TENSOR),  # a Linear the module holds, called: a tensor (then reshape)
        ("q", TENSOR),
        ("y", TENSOR),  # LayerNorm
        ("z", TENSOR),  # Sequential: whatever its last layer returns (a Linear)
        ("z2", None),  # a Sequential built from a list the file does not show
        ("w", None),  # the module's own method
    ],
)
def test_calling_a_layer_the_module_holds(name, expected):
    line = LAYERS_CALLED.splitlines()[-1]
    column = line.index(f" {name}", line.index("return")) + 1
    index = ModuleIndex(parse_tolerant(LAYERS_CALLED), SourceText(LAYERS_CALLED))
    row = len(LAYERS_CALLED.splitlines()) - 1
    assert index.value_at(name, Position(row, column + len(name))) == expected


USER_LAYERS = """\
import torch
import torch.nn as nn
from torch import Tensor


class 投影(nn.Module):
    def forward(self, x) -> torch.Tensor:
        return x


class 没有标注(nn.Module):
    def forward(self, x):
        return x


class 子类(投影):
    pass


class 自己的调用(nn.Module):
    def __call__(self, x):
        return 1

    def forward(self, x) -> Tensor:
        return x


class 不是模块:
    def forward(self, x) -> Tensor:
        return x


class 模型(nn.Module):
    def __init__(self):
        super().__init__()
        self.p = 投影()
        self.q = 没有标注()
        self.s = 子类()
        self.w = 自己的调用()
        self.n = 不是模块()

    def forward(self, x):
        a = self.p(x); b = self.q(x); c = self.s(x); d = self.w(x); e = self.n(x); f = 投影()(x)
        说明 = "自定义层 🧩"; return a, b, c, d, e, f
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a", TENSOR),  # forward annotated -> torch.Tensor
        ("b", None),  # no annotation
        ("c", TENSOR),  # inherited from a local base
        ("d", None),  # its own __call__ decides
        ("e", None),  # not an nn.Module: calling it does not run forward
        ("f", TENSOR),
    ],
)
def test_calling_a_module_of_the_file_uses_its_forward_annotation(name, expected):
    assert value_returned_last(name, USER_LAYERS) == expected


INFERRED_FORWARDS = """\
import torch
import torch.nn as nn


class 归一化线性(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.linear = nn.Linear(n, n)
        self.bn = nn.BatchNorm1d(n)

    def forward(self, x):
        x = self.linear(x)
        return self.bn(x.flatten(0, 1)).reshape_as(x)


class 分支都返回张量(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        if x is None:
            raise ValueError("空输入")
        elif self.training:
            return self.fc(x) * 2
        else:
            return torch.relu(self.fc(x))


class 可能落空(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        if self.training:
            return self.fc(x)


class 返回元组(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x), x


class 返回参数(nn.Module):
    def forward(self, x):
        return x


class 生成器(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        yield self.fc(x)
        return self.fc(x)


class 递归(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = 递归()

    def forward(self, x):
        return self.inner(x)


class 模型(nn.Module):
    def __init__(self, n, 有头):
        super().__init__()
        self.a = 归一化线性(n)
        self.b = 分支都返回张量()
        self.c = 可能落空()
        self.d = 返回元组()
        self.e = 返回参数()
        self.f = 生成器()
        self.g = 递归()
        self.head = nn.Linear(n, 2) if 有头 else nn.Identity()
        self.maybe = nn.Linear(n, 2) if 有头 else None
        self.never = None

    def forward(self, x):
        a = self.a(x); b = self.b(x); c = self.c(x); d = self.d(x); e = self.e(x); f = self.f(x); g = self.g(x)
        h = self.head(x); m = self.maybe(x); n = self.never(x)
        说明 = "推断前向 🔁"; return a, b, c, d, e, f, g, h, m, n
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a", TENSOR),  # every return is a torch layer's output, reshaped
        ("b", TENSOR),  # every branch returns a tensor or raises
        ("c", None),  # may fall off the end: None
        ("d", None),  # a tuple
        ("e", None),  # returns its argument, which the file does not know
        ("f", None),  # a generator
        ("g", None),  # only itself to go by
        ("h", TENSOR),  # a Linear or an Identity: a tensor either way
        ("m", TENSOR),  # a Linear or None: where the call returns, it was the Linear
        ("n", None),  # only ever None
    ],
)
def test_calling_a_module_of_the_file_infers_an_unannotated_forward(name, expected):
    assert value_returned_last(name, INFERRED_FORWARDS) == expected


LAYER_TENSORS = """\
import torch
import torch.nn as nn


class 融合(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.act = nn.ReLU()

    def fuse(self):
        conv, bn = self.conv, self.bn
        scale = bn.weight / (bn.running_var + bn.eps) ** 0.5
        w = conv.weight * scale[:, None, None, None]
        p = conv.weight; r = bn.running_mean; a = self.act.weight; e = bn.eps
        说明 = "融合 BN 🔧"; return w, p, r, a, e
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("w", TENSOR),  # arithmetic on Parameters gives a plain tensor
        ("p", Value("torch.nn.Parameter")),
        ("r", TENSOR),  # a buffer
        ("a", None),  # ReLU has no weight
        ("e", None),  # a float
    ],
)
def test_parameters_and_buffers_of_torch_layers(name, expected):
    assert value_returned_last(name, LAYER_TENSORS) == expected


def test_hovering_a_layer_weight_still_names_the_layer_attribute():
    found = target(LAYER_TENSORS, "p = conv.weight", "weight")
    assert (found.kind, found.qualname) == ("reference", "torch.nn.Conv2d.weight")


CLOSURES = """\
import torch


def 外层(x: torch.Tensor, n):
    y = x * 2

    def 内层(scale):
        说明 = "闭包 🪆"; return x.view(-1), y.sum(), n.bit_length(), z.abs()

    def 遮蔽():
        x.view(-1)
        x = 3
        return x

    z = x
    return 内层
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("x", TENSOR),  # the enclosing function's annotated parameter
        ("y", TENSOR),  # bound before the inner function
        ("n", None),
        ("z", None),  # bound only after the inner function is defined: not proven
    ],
)
def test_a_closure_sees_the_enclosing_functions_names(name, expected):
    assert value_of(CLOSURES, "闭包", name) == expected


def test_a_name_the_inner_function_binds_itself_hides_the_enclosing_one():
    assert value_of(CLOSURES, "        x.view", "x") is None


BRANCHES = """\
import torch


def 分支(x: torch.Tensor, 形状):
    if x.ndim == 4:
        x = 形状.patchify(x)
    elif x.ndim == 5:
        说明 = "另一个分支 🌿"; y = x.flatten(2)
    else:
        z = x
    if 形状:
        x = 形状.to_list()
    说明 = "分支之后 🍂"; w = x
"""


def test_a_binding_in_one_branch_does_not_reach_the_other_branch():
    assert value_of(BRANCHES, "另一个分支", "x") == TENSOR  # the parameter, not the patchify of the if branch
    assert value_of(BRANCHES, "z = x", "x") == TENSOR


def test_a_binding_in_a_branch_still_reaches_the_code_after_the_if():
    assert value_of(BRANCHES, "分支之后", "x") is None  # maybe the list from the last if


CALLED_HELPERS = """\
import torch


def 显示(img, 标题=None):
    说明 = "参数 🖼️"; return img.permute(1, 2, 0), 标题


def 混合(a, b):
    说明 = "混合 🥣"; return a, b


def 传来传去(t):
    说明 = "传递 📨"; return t


def 默认值(t=None):
    说明 = "默认 🫥"; return t


class 画家:
    def 画(self, canvas):
        说明 = "方法 🎨"; return canvas


x = torch.randn(3, 8, 8)
显示(x, "第一张")
显示(img=x * 2)
混合(x, [1, 2])
混合(x.float(), x)
handlers = [传来传去]
传来传去(x)
默认值()
默认值(x)
画家().画(x)
"""


@pytest.mark.parametrize(
    ("line", "name", "expected"),
    [
        ("参数", "img", TENSOR),  # every call passes a tensor, by position or by keyword
        ("参数", "标题", None),  # a string, and once not passed at all
        ("混合 🥣", "a", TENSOR),
        ("混合 🥣", "b", None),  # one call passes a list
        ("传递", "t", None),  # the function is also stored in a list: other callers are unknown
        ("默认", "t", None),  # one call leaves the default
        ("方法", "canvas", None),  # methods are called through objects: not guessed here
    ],
)
def test_an_unannotated_parameter_is_what_every_call_in_the_file_passes(line, name, expected):
    assert value_of(CALLED_HELPERS, line, name) == expected


def test_torch_uses_are_what_completion_prefetches():
    text = (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport numpy as np\n"
        "说明 = '预取 📦'; layer = nn.Linear(2, 3)\ny = F.relu(torch.jit.script(layer)(np.ones(2)))\n"
    )
    index = ModuleIndex(parse_tolerant(text), SourceText(text))
    calls, classes, modules = index.torch_uses()
    assert calls == {"torch.nn.Linear", "torch.nn.functional.relu", "torch.jit.script"}
    assert classes == {"torch.nn.Linear"}
    assert modules == {"torch", "torch.nn", "torch.nn.functional", "torch.jit"}


FILE_FUNCTIONS = """\
import functools
import torch
import torch.nn as nn
from torch import Tensor
from typing import List, Optional, Tuple


def 旋转一半(x: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def 未标注(x):
    return torch.stack([-x[..., 1::2], x[..., ::2]], -1)


def 可能为空(x) -> Optional[torch.Tensor]:
    return None if x is None else x


def 拆成两半(x: Tensor) -> Tuple[Tensor, Tensor]:
    return x.chunk(2)


def 列表(x: Tensor) -> List[Tensor]:
    return list(x.unbind())


def 混合(x: Tensor) -> Tuple[Tensor, int]:
    return x, 1


@functools.lru_cache(maxsize=None)
def 缓存的(n: int) -> torch.Tensor:
    return torch.arange(n)


def 装饰器(f):
    return f


@装饰器
def 被包装(x: Tensor) -> Tensor:
    return x


async def 异步(x: Tensor) -> Tensor:
    return x


def 生成器(x):
    yield x
    return x


def 有时无返回(x):
    if x.ndim:
        return x.float()


def 返回字符串(x) -> str:
    return "张量 🎉"


def 重名():
    return torch.zeros(1)


重名 = len


class 注意力(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(4, 12)
        self.bias_cache = {}

    def bias(self, device: torch.device) -> torch.Tensor:
        return torch.zeros(4, device=device)

    @torch.no_grad()
    def 无梯度(self, x: Tensor) -> Tensor:
        return x * 2

    @staticmethod
    def 静态(x: Tensor) -> "torch.Tensor":
        return x

    def 推断(self, x):
        return self.qkv(x)

    def 拆头(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        return self.qkv(x).chunk(3, dim=-1)

    def bias_cache(self) -> Tensor:  # the instance attribute of the same name hides it
        return torch.zeros(1)

    @property
    def 属性(self) -> Tensor:
        return torch.zeros(1)

    def forward(self, x):
        a = 旋转一半(x); b = 未标注(torch.ones(2)); c = 可能为空(x); d, e = 拆成两半(x); f = 列表(x)[0]
        g, h = 混合(x); i = 缓存的(3); j = 被包装(x); k = 异步(x); m = 生成器(x); n = 有时无返回(x)
        o = 返回字符串(x); p = 重名(); q = self.bias(x.device) + 1; r = self.无梯度(x); s = self.静态(x)
        t = self.推断(x); u, v, w = self.拆头(x); y = self.bias_cache(); z = self.属性
        for 块 in 列表(x):
            说明 = "中文 🎉"; return a, b, c, d, e, f, g, h, i, j, k, m, n, o, p, q, r, s, t, u, v, w, y, z, 块
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a", Value("torch.Tensor")),  # annotated ``-> Tensor``
        ("b", Value("torch.Tensor")),  # unannotated, every return a proven tensor
        ("c", Value("torch.Tensor")),  # ``Optional[Tensor]``: where its members are used it is a tensor
        ("d", Value("torch.Tensor")),  # ``Tuple[Tensor, Tensor]`` unpacked
        ("e", Value("torch.Tensor")),
        ("f", Value("torch.Tensor")),  # an element of ``List[Tensor]``
        ("g", Value("torch.Tensor")),  # ``Tuple[Tensor, int]``: the first element is a tensor
        ("h", None),  # the second an int
        ("i", Value("torch.Tensor")),  # ``functools.lru_cache`` keeps the result
        ("j", None),  # a decorator of the file may return anything
        ("k", None),  # ``async def``: a coroutine
        ("m", None),  # a generator
        ("n", None),  # may fall off the end and return None
        ("o", None),  # annotated ``-> str``
        ("p", None),  # the name is bound twice
        ("q", Value("torch.Tensor")),  # a method annotated ``-> torch.Tensor``, plus arithmetic
        ("r", Value("torch.Tensor")),  # ``@torch.no_grad()`` keeps the result
        ("s", Value("torch.Tensor")),  # ``@staticmethod``, a string annotation
        ("t", Value("torch.Tensor")),  # an unannotated method returning a layer's output
        ("u", Value("torch.Tensor")),  # a method returning ``Tuple[Tensor, Tensor, Tensor]``
        ("w", Value("torch.Tensor")),
        ("y", None),  # ``self.bias_cache = {}`` hides the method
        ("z", None),  # a property is not called
        ("块", Value("torch.Tensor")),  # iterating ``List[Tensor]``
    ],
)
def test_calling_a_function_of_the_file_uses_its_return(name, expected):
    assert value_returned_last(name, FILE_FUNCTIONS) == expected


CONTAINERS = """\
import torch

def dict(**kwargs):  # shadows the builtin in this file
    return kwargs

def 统计(批次):
    尺寸 = {}; 列表 = [t for t in 批次]; 集合 = {1, 2}; 元组 = (1, 2); 文本 = f"批次 🎉 {len(批次)}"
    映射 = dict(a=1); 字面 = "中文"; 注解: dict = {}; 张量 = torch.zeros(2); 又变 = {}; 又变 = 张量.tolist()
    return 尺寸, 列表, 集合, 元组, 文本, 映射, 字面, 注解, 张量, 又变
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("尺寸", "builtins.dict"),
        ("列表", "builtins.list"),
        ("集合", "builtins.set"),
        ("元组", "builtins.tuple"),
        ("文本", "builtins.str"),
        ("字面", "builtins.str"),
        ("映射", None),  # ``dict`` is the file's own function here
        ("注解", None),  # annotated: the annotation decides, not the value
        ("张量", None),  # a torch value: ``value_at`` answers it
        ("又变", None),  # rebound to what a method returns
    ],
)
def test_builtin_containers_are_told_from_their_binding(name, expected):
    lines = CONTAINERS.splitlines()
    row = len(lines) - 1
    column = lines[row].index(name)
    index = ModuleIndex(parse_tolerant(CONTAINERS), SourceText(CONTAINERS))
    assert index.container_at(name, Position(row, column + len(name))) == expected


# ------------------------------------------------------------------ receivers the code proves (issue 12, point 4)

PIPELINE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset


class 数据集(Dataset):
    def __init__(self, n):
        self.images = torch.randn(n, 3, 8, 8)
        self.labels = torch.randint(0, 10, (n,))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], int(self.labels[i])


class 字典数据集(Dataset):
    def __getitem__(self, i):
        return {"x": torch.zeros(2)}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        说明 = "前向 ➡️"; h = self.conv(x)
        return self.head(h.mean((2, 3)))


class 自定义移动(nn.Module):
    def to(self, device):
        return device


def train(model, loader, device):
    model.train()
    for step, (images, labels) in enumerate(loader):
        说明 = "批次 📦"; images, labels = images.to(device), labels.to(device)
        说明 = "模型 🧠"; loss = F.cross_entropy(model(images), labels)
    for 图, 标签 in loader:
        说明 = "循环 🔁"; print(图.shape, 标签.shape)


def main():
    device = torch.device("cpu")
    model = Net().to(device)
    评估模型 = Net().eval()
    奇怪 = 自定义移动().to(device)
    loader = DataLoader(TensorDataset(torch.randn(4, 3, 8, 8), torch.arange(4)), batch_size=2)
    train(model, loader, device)
    自己的 = DataLoader(数据集(8), batch_size=4, shuffle=True)
    for 图像, 类别 in 自己的:
        说明 = "自定义数据集 🖼️"; print(图像.shape, 类别.shape)
    拼接的 = DataLoader(数据集(8), batch_size=4, collate_fn=lambda b: b)
    for 样本 in 拼接的:
        说明 = "自定义 collate 🧩"; print(样本)
    for 字典 in DataLoader(字典数据集(), batch_size=2):
        说明 = "字典 📚"; print(字典)
    第一批 = next(iter(自己的))
    说明 = "取一批 🎁"; print(第一批[0].shape, model, 评估模型, 奇怪)
"""


@pytest.mark.parametrize(
    ("line_contains", "name", "expected"),
    [
        ("批次", "images", TENSOR),  # a loader passed to a function: the call in main says what it is
        ("批次", "labels", TENSOR),
        ("模型 🧠", "model", Value("torch.nn.Module", "Net")),  # ``Net().to(device)`` is still the Net
        ("循环", "图", TENSOR),
        ("前向", "x", TENSOR),  # forward's parameter: ``model(images)`` passes a batch tensor
        ("自定义数据集", "图像", TENSOR),  # a Dataset of the file: __getitem__'s tensor, collated
        ("自定义数据集", "类别", TENSOR),  # an int in the sample becomes a tensor once collated
        ("取一批", "第一批", None),  # a tuple, not one value
        ("取一批", "评估模型", Value("torch.nn.Module", "Net")),
        ("取一批", "奇怪", None),  # the class defines its own ``to``
        ("自定义 collate", "样本", None),  # a collate_fn decides what a batch is
        ("字典", "字典", None),  # dict samples are not followed
    ],
)
def test_data_pipelines_and_modules_moved_to_a_device(line_contains, name, expected):
    assert value_of(PIPELINE, line_contains, name) == expected


def test_indexing_a_batch_from_next_iter():
    text = PIPELINE + "    说明 = '下标 🔢'; 第一批[0].view(-1)\n"
    assert value_of(text, "第一批[0].view", "第一批[0]") == TENSOR


GPT_STYLE = """\
import torch
import torch.nn as nn


class 注意力(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x):
        说明 = "注意力 🎯"; B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        return q


class 块(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.attn = 注意力(d)

    def forward(self, x):
        说明 = "块 🧱"; return x + self.attn(self.ln(x))


class 模型(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(100, d), h=nn.ModuleList([块(d) for _ in range(n)])))
        self.extra = nn.ModuleList()
        self.extra.append(nn.Linear(d, d))
        self.extra.append(nn.Linear(d, d))
        self.mixed = nn.ModuleList()
        self.mixed.append(nn.Linear(d, d))
        self.mixed.append(make_layer(d))
        self.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 100))

    def forward(self, idx):
        说明 = "嵌入 🔤"; x = self.transformer.wte(idx)
        说明 = "嵌入后 🔡"; print(x)
        for block in self.transformer.h:
            说明 = "循环块 🔁"; x = block(x)
        for layer in self.extra:
            说明 = "追加的层 ➕"; x = layer(x)
        for other in self.mixed:
            说明 = "混合的层 🔀"; other(x)
        logits = self.head(x)
        说明 = "头 🗣️"; print(logits)
        params = {name: p for name, p in self.named_parameters() if p.requires_grad}
        说明 = "参数 ⚙️"; decay = [p for p in params.values() if p.dim() >= 2]
        weight = next(self.parameters())
        说明 = "下一个 ⏭️"; return logits, weight

    @torch.no_grad()
    def generate(self, idx, steps):
        for _ in range(steps):
            说明 = "生成 🧪"; logits, _ = self(idx[:, -8:])
            idx = torch.cat((idx, logits.argmax(-1)[:, -1:]), dim=1)
        return idx


def run():
    m = 模型(16, 2)
    out = m.generate(torch.zeros(1, 1, dtype=torch.long), 4)
    说明 = "结果 📤"; print(out.tolist())
"""


@pytest.mark.parametrize(
    ("line_contains", "name", "expected"),
    [
        ("注意力 🎯", "x", TENSOR),  # called as self.attn(self.ln(x)) by 块, called for each block of a ModuleList
        ("块 🧱", "x", TENSOR),
        ("嵌入后 🔡", "x", TENSOR),  # a ModuleDict(dict(...)) member: an Embedding
        ("嵌入 🔤", "idx", TENSOR),  # forward called through self(...) in generate, from run(): m.generate(zeros)
        ("循环块", "block", Value("torch.nn.Module", "块")),
        ("追加的层", "layer", Value("torch.nn.Linear")),  # layers appended to an empty ModuleList
        ("混合的层", "other", None),  # one of them is unknown
        ("头 🗣️", "logits", TENSOR),  # a Sequential returns what its last layer returns
        ("参数", "p", Value("torch.nn.Parameter")),  # dict comprehension over named_parameters, then .values()
        ("下一个 ⏭️", "weight", Value("torch.nn.Parameter")),
        ("生成", "idx", TENSOR),
        ("结果", "out", TENSOR),  # generate returns idx, a tensor on every path
    ],
)
def test_gpt_style_models(line_contains, name, expected):
    assert value_of(GPT_STYLE, line_contains, name) == expected


RECURRENT = """\
import torch
import torch.nn as nn


class 标注器(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.attn = nn.MultiheadAttention(16, 2)
        if kind == "gru":
            self.rnn = nn.GRU(8, 16)
        else:
            self.rnn = nn.LSTM(8, 16)

    def forward(self, x, state):
        h, _ = self.lstm(x)
        out, (h_n, c_n) = self.lstm(x, state)
        y, weights = self.attn(h, h, h)
        first = self.attn(h, h, h)[0]
        output, hidden = self.rnn(x)
        说明 = "循环 🔁"; return h, out, h_n, c_n, y, weights, first, output, hidden


def repackage(h):
    if isinstance(h, torch.Tensor):
        说明 = "收窄 🎯"; return h.detach()
    if isinstance(h, torch.Tensor):
        h = h.tolist()
        说明 = "又绑定 🔗"; return h
    return tuple(repackage(v) for v in h)
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("h", TENSOR),  # LSTM returns (output, (h_n, c_n))
        ("out", TENSOR),
        ("h_n", TENSOR),
        ("c_n", TENSOR),
        ("y", TENSOR),  # MultiheadAttention returns (output, weights)
        ("weights", TENSOR),
        ("first", TENSOR),
        ("output", TENSOR),  # a GRU or an LSTM: the output is a tensor either way
        ("hidden", None),  # a tensor for the GRU, a tuple for the LSTM
    ],
)
def test_recurrent_layers_unpack_by_position(name, expected):
    assert value_returned_last(name, RECURRENT.split("\n\n\ndef repackage")[0] + "\n") == expected


def test_isinstance_narrows_a_name_until_it_is_bound_again():
    assert value_of(RECURRENT, "收窄", "h") == TENSOR
    assert value_of(RECURRENT, "又绑定", "h") is None


CALLED_METHODS = """\
import torch
import torch.nn as nn


class 编码器(nn.Module):
    def __init__(self, norm=None, dim=8):
        super().__init__()
        self.norm = norm
        self.proj = nn.Linear(dim, dim)
        self.apply(self._init)

    def _init(self, module):
        说明 = "回调 📞"; print(module)

    def split(self, t, n):
        说明 = "方法 🔧"; return t.chunk(n)

    def forward(self, x):
        if self.norm is not None:
            说明 = "可选层 🧩"; x = self.norm(x)
        return self.split(self.proj(x), 2)


class 工厂用户:
    def __init__(self, block):
        说明 = "工厂 🏭"; self.block = block


def build():
    工厂用户(nn.Linear)
    return 编码器(nn.LayerNorm(8))
"""


@pytest.mark.parametrize(
    ("line_contains", "name", "expected"),
    [
        ("方法", "t", TENSOR),  # self.split(self.proj(x), 2)
        ("回调", "module", None),  # passed to self.apply: its calls are elsewhere
        ("可选层", "self.norm", Value("torch.nn.LayerNorm")),  # __init__'s norm from 编码器(nn.LayerNorm(8))
        ("工厂 🏭", "block", None),  # the class itself is passed: not an instance
    ],
)
def test_parameters_from_the_calls_the_file_makes(line_contains, name, expected):
    assert value_of(CALLED_METHODS, line_contains, name) == expected


def test_a_class_passed_as_a_factory_hides_its_constructor_calls():
    text = CALLED_METHODS.replace("    工厂用户(nn.Linear)\n", "    工厂用户(编码器)\n")
    assert value_of(text, "可选层", "self.norm") is None


@pytest.mark.parametrize(
    ("use", "symbol", "expected"),
    [
        ("x.device.type", "type", "torch.device.type"),  # a tensor's device is a torch.device
        ("x.dtype.is_floating_point", "is_floating_point", "torch.dtype.is_floating_point"),
        ("x.shape", "shape", "torch.Tensor.shape"),  # still the tensor's own attribute
        ("x.device", "device", "torch.Tensor.device"),
    ],
)
def test_attributes_of_a_tensor_hold_other_torch_classes(use, symbol, expected):
    text = f"import torch\nx = torch.randn(2)\n说明 = '设备 🖥️'; print({use})\n"
    found = target(text, use, symbol)
    assert found.kind == "reference" and found.qualname == expected


def test_an_import_inside_another_function_is_not_seen_elsewhere():
    text = "import torch\n\ndef load():\n    import jax\n    return jax\n\ndef use(x):\n    return x.copy_(x)\n"
    index = ModuleIndex(parse_tolerant(text), SourceText(text))
    assert "jax" in index.imported_modules(Position(4, 4))
    assert index.imported_modules(Position(7, 10)) == frozenset({"torch"})


DATA_AND_GRAD = """\
import torch
import torch.nn as nn


class Data(torch.utils.data.Dataset):
    def __init__(self):
        self.data = [1, 2]

    def count(self):
        return self.data.count(1)


def step(model: nn.Module, t: torch.Tensor, dtype):
    for name, param in model.named_parameters():
        param.grad.zero_()
    t.data.to(dtype)


x = torch.randn(3)
y = x.data.to(torch.float16)
module = nn.Linear(2, 2)
module.weight.data.normal_()
"""


@pytest.mark.parametrize(
    ("line_contains", "symbol", "expected"),
    [
        ("param.grad", "zero_", "torch.Tensor.zero_"),
        ("t.data", "to", "torch.Tensor.to"),
        ("x.data", "to", "torch.Tensor.to"),  # not torch.nn.Module.to
        ("module.weight", "normal_", "torch.Tensor.normal_"),
        ("return self.data", "count", None),  # a dataset's own list
    ],
)
def test_methods_through_data_and_grad_are_tensor_methods(line_contains, symbol, expected):
    found = target(DATA_AND_GRAD, line_contains, symbol)
    assert found is not None and found.qualname == expected


@pytest.mark.parametrize(
    ("bases", "expected"),
    [
        ("nn.Module", "torch.nn.Module.train"),  # only torch's class can define it
        ("Local, nn.Module", "torch.nn.Module.train"),  # a base of this file that does not define it
        ("LoggerMixin, nn.Module", None),  # a mixin from elsewhere may define it: jedi decides
    ],
)
def test_a_member_a_class_does_not_define_is_its_torch_bases_only_when_every_base_is_known(bases, expected):
    text = (
        "import torch.nn as nn\nfrom helpers import LoggerMixin\n\n\nclass Local:\n    pass\n\n\n"
        f"class 网络({bases}):\n    def forward(self, x):\n        说明 = '模式 🔁'; self.train()\n        return x\n"
    )
    found = target(text, "模式", "train")
    assert found.qualname == expected


@pytest.mark.parametrize(
    ("code", "symbol", "expected"),
    [
        ("torch.finfo(x.dtype).min", "min", "torch.finfo.min"),  # a lower-case class: the call makes an instance
        ("torch.iinfo(torch.int8).max", "max", "torch.iinfo.max"),
        ("torch.get_default_dtype().is_floating_point", "is_floating_point", "torch.dtype.is_floating_point"),
        ("torch.get_default_device().type", "type", "torch.device.type"),
    ],
)
def test_calls_that_return_other_torch_classes(code, symbol, expected):
    text = f"import torch\n\n\ndef f(x):\n    说明 = '类型 🧪'; return {code}\n"
    assert target(text, "类型", symbol).qualname == expected


@pytest.mark.parametrize(
    ("code", "symbol", "expected"),
    [
        ("x.topk(3, dim=1).indices", "indices", "torch.return_types.topk.indices"),  # a named tuple, not a tensor
        ("torch.sort(x).values", "values", "torch.return_types.sort.values"),
        ("x.max(1).indices", "indices", None),  # max returns a named tuple only with a dim: not proven
        ("x.sum(1).abs", "abs", "torch.Tensor.abs"),
    ],
)
def test_calls_that_return_named_tuples(code, symbol, expected):
    text = f"import torch\n\n\ndef f():\n    x = torch.randn(3, 4)\n    说明 = '元组 🧮'; return {code}\n"
    assert target(text, "元组", symbol).qualname == expected


def test_a_layer_or_none_is_the_layer_where_code_uses_it():
    text = textwrap.dedent(
        """\
        import torch.nn as nn


        class 头(nn.Module):
            def __init__(self, talking):
                super().__init__()
                self.talk = nn.Conv2d(4, 4, 1) if talking else None
                self.mix = None if talking else 3

            def forward(self, x):
                说明 = '对话 🗣'; w = self.talk.weight
                说明 = '混合 🥣'; return self.mix
        """
    )
    assert target(text, "对话", "weight").qualname == "torch.nn.Conv2d.weight"
    assert target(text, "混合", "mix").qualname is None  # None or a number: nothing torch


def test_a_receivers_other_members_are_read_where_it_is_bound_once():
    text = textwrap.dedent(
        """\
        def 损失(features, other):
            n = features.shape[0]
            说明 = '设备 🖥'; device = features.device
            other = other.float()
            说明 = '重绑 🔁'; return features.permute(1, 0), other.device
        """
    )
    index = ModuleIndex(parse_tolerant(text), SourceText(text))
    lines = text.splitlines()

    def at(marker: str, symbol: str) -> Position:
        line = next(i for i, content in enumerate(lines) if marker in content)
        return Position(line, lines[line].index(symbol, lines[line].index(marker)) + 1)

    assert index.receiver_members(at("设备", ".device")) == {"shape", "permute"}
    assert index.receiver_members(at("重绑", ".device")) == frozenset()  # ``other`` is bound twice


def test_a_member_read_on_a_class_of_the_file_is_its_torch_bases():
    text = textwrap.dedent(
        """\
        import torch


        class 交换(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()


        def run(x):
            说明 = '应用 🔄'; y = 交换.apply(x)
            说明 = '前向 ➡️'; return 交换.forward(None, y)
        """
    )
    assert target(text, "应用", "apply").qualname == "torch.autograd.Function.apply"
    assert target(text, "前向", "forward").qualname is None  # the class's own staticmethod
