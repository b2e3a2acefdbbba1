"""Output shapes the checker gives torch layers, against the installed torch; and arguments it cannot read stay
unknown instead of falling back to a default."""

from __future__ import annotations

import ast

import pytest
import torch

from torchls.core.layers import layer_output
from torchls.core.values import ModuleValue, TensorValue

CASES = [
    ("Conv1d", (("in_channels", 4), ("out_channels", 6), ("kernel_size", 5), ("padding", 2)), (2, 4, 33)),
    ("Conv2d", (("in_channels", 3), ("out_channels", 8), ("kernel_size", 3), ("stride", 2)), (2, 3, 17, 20)),
    ("MaxPool1d", (("kernel_size", 2),), (2, 6, 33)),
    ("AvgPool1d", (("kernel_size", 3), ("stride", 2), ("padding", 1)), (6, 33)),
    ("MaxPool2d", (("kernel_size", 2),), (2, 3, 17, 20)),
    ("AdaptiveAvgPool1d", (("output_size", 1),), (2, 6, 33)),
    ("TransformerEncoderLayer", (("d_model", 16), ("nhead", 4), ("batch_first", True)), (2, 7, 16)),
    (
        "ConvTranspose2d",
        (("in_channels", 3), ("out_channels", 2), ("kernel_size", 4), ("stride", 2), ("padding", 1)),
        (1, 3, 7, 7),
    ),
]


@pytest.mark.parametrize("kind, args, shape", CASES, ids=lambda c: str(c))
def test_the_output_shape_is_torchs(kind, args, shape):
    real = getattr(torch.nn, kind)(**dict(args))(torch.randn(shape))
    modelled = layer_output(ModuleValue(f"torch.nn.{kind}", args), TensorValue(shape=shape), ast.Constant(0))
    assert isinstance(modelled, TensorValue) and modelled.shape == tuple(real.shape)


@pytest.mark.parametrize(
    "kind, args",
    [
        ("Conv2d", (("in_channels", 3), ("out_channels", 8), ("kernel_size", None))),  # nn.Conv2d(3, 8, k)
        ("Conv2d", (("in_channels", 3), ("out_channels", 8), ("kernel_size", 3), ("padding", None))),
        ("MaxPool2d", (("kernel_size", None),)),
        ("MaxPool1d", (("kernel_size", 2), ("stride", None))),
    ],
)
def test_an_argument_passed_but_not_known_leaves_the_sizes_unknown(kind, args):
    modelled = layer_output(
        ModuleValue(f"torch.nn.{kind}", args),
        TensorValue(shape=(2, 3, 16, 16)[: 4 if "2d" in kind else 3]),
        ast.Constant(0),
    )
    assert not isinstance(modelled, TensorValue) or modelled.shape is None or modelled.shape[-1] is None


def test_pooling_with_indices_is_a_pair_not_a_tensor():
    module = ModuleValue("torch.nn.MaxPool2d", (("kernel_size", 2), ("return_indices", True)))
    assert not isinstance(layer_output(module, TensorValue(shape=(2, 3, 8, 8)), ast.Constant(0)), TensorValue)


def test_an_embedding_bag_gives_one_vector_per_row_of_ids():
    layer = torch.nn.EmbeddingBag(50, 8, mode="mean")
    real = layer(torch.randint(0, 50, (4, 6)))
    module = ModuleValue("torch.nn.EmbeddingBag", (("num_embeddings", 50), ("embedding_dim", 8), ("mode", "mean")))
    modelled = layer_output(module, TensorValue(shape=(4, 6)), ast.Constant(0))
    assert isinstance(modelled, TensorValue) and modelled.shape == tuple(real.shape)


def test_shapes_of_padding_resizing_repeating_and_new_tensors_are_torchs():
    from torchls.core.text import SourceText
    from torchls.core.values_at import FileValues

    source = """import torch
import torch.nn.functional as F
x = torch.randn(2, 3, 8, 8)
a = F.pad(x, (1, 2, 0, 3))
b = F.interpolate(x, scale_factor=2)
c = F.interpolate(x, size=(5, 7))
d = x.repeat(2, 1, 1, 3)
e = x.new_zeros(4, 5)
f = torch.where(x > 0, x, 0.0)
"""
    values = {v.text: v.value.shape for v in FileValues(ast.parse(source), SourceText(source)).all()}
    x = torch.randn(2, 3, 8, 8)
    real = {
        "a": torch.nn.functional.pad(x, (1, 2, 0, 3)),
        "b": torch.nn.functional.interpolate(x, scale_factor=2),
        "c": torch.nn.functional.interpolate(x, size=(5, 7)),
        "d": x.repeat(2, 1, 1, 3),
        "e": x.new_zeros(4, 5),
        "f": torch.where(x > 0, x, 0.0),
    }
    assert {name: values[name] for name in real} == {name: tuple(t.shape) for name, t in real.items()}


def test_differences_keep_or_lose_entries_as_torch_does():
    from torchls.core.text import SourceText
    from torchls.core.values_at import FileValues

    source = """import torch
m = torch.randn(50, 40)
a = torch.diff(m, dim=0, prepend=m[:1])
b = torch.diff(a, dim=0)
c = m.diff()
e = torch.diff(m, n=2, dim=1, append=m[:, :3])
"""
    values = {v.text: v.value.shape for v in FileValues(ast.parse(source), SourceText(source)).all()}
    m = torch.randn(50, 40)
    a = torch.diff(m, dim=0, prepend=m[:1])
    real = {"a": a, "b": torch.diff(a, dim=0), "c": m.diff(), "e": torch.diff(m, n=2, dim=1, append=m[:, :3])}
    assert {name: values[name] for name in real} == {name: tuple(t.shape) for name, t in real.items()}
