"""The fast path's tables about torch layers hold for the installed torch."""

from __future__ import annotations

import pytest
import torch.nn as nn

from torchls.core import facts

# The smallest arguments that build each layer.
_ARGUMENTS = {
    "Linear": (2, 2),
    "Bilinear": (2, 2, 2),
    "LayerNorm": (2,),
    "GroupNorm": (1, 2),
    "RMSNorm": (2,),
    "Embedding": (2, 2),
    "EmbeddingBag": (2, 2),
    "PReLU": (),
    "RNNCell": (2, 2),
    "LSTMCell": (2, 2),
    "GRUCell": (2, 2),
}


def _build(name: str) -> nn.Module:
    layer = getattr(nn, name)
    if name.startswith(("Conv", "ConvTranspose")):
        return layer(2, 2, 1)
    if "Norm" in name and name not in _ARGUMENTS:  # BatchNorm*, SyncBatchNorm, InstanceNorm*
        return layer(2)
    return layer(*_ARGUMENTS[name])


@pytest.mark.parametrize("qualname", sorted(facts.MODULE_TENSOR_ATTRIBUTES))
def test_every_listed_attribute_is_a_registered_parameter_or_buffer(qualname):
    layer = _build(qualname.rsplit(".", 1)[-1])
    registered = {**layer._parameters, **layer._buffers}
    for attribute in facts.MODULE_TENSOR_ATTRIBUTES[qualname]:
        assert attribute in registered, f"{qualname}.{attribute} is not a parameter or buffer"
        kind = facts.module_attribute_result(qualname, attribute)
        value = registered[attribute]
        if value is not None:  # None when built without it (InstanceNorm has no affine weight by default)
            expected = "torch.nn.Parameter" if isinstance(value, nn.Parameter) else "torch.Tensor"
            assert kind == expected, (qualname, attribute, kind)


def test_other_attributes_are_not_claimed():
    assert facts.module_attribute_result("torch.nn.Linear", "in_features") is None
    assert facts.module_attribute_result("torch.nn.ReLU", "weight") is None
    assert facts.module_attribute_result("torch.nn.Sequential", "weight") is None


def _structure(value):
    """What facts would write for a real result: tensors as their class name, tuples by position."""
    import torch

    if isinstance(value, tuple):
        return tuple(_structure(part) for part in value)
    return facts.TENSOR if isinstance(value, torch.Tensor) else type(value).__name__


@pytest.mark.parametrize("qualname", sorted(facts.MODULE_CALL_PARTS))
def test_layers_that_return_tuples_return_what_the_table_says(qualname):
    import torch

    name = qualname.rsplit(".", 1)[-1]
    if name == "MultiheadAttention":
        layer, inputs = nn.MultiheadAttention(4, 2), (torch.randn(3, 1, 4),) * 3
    elif name == "LSTMCell":
        layer, inputs = nn.LSTMCell(2, 2), (torch.randn(1, 2),)
    else:
        layer, inputs = getattr(nn, name)(2, 2), (torch.randn(3, 1, 2),)
    assert _structure(layer(*inputs)) == facts.MODULE_CALL_PARTS[qualname]


@pytest.mark.parametrize("method", sorted(facts.MODULE_SELF_METHODS))
def test_module_methods_listed_as_returning_the_module_do(method):
    import torch

    layer = nn.Linear(2, 2)
    arguments = {"to": ("cpu",), "to_empty": (), "apply": (lambda m: None,), "type": (torch.float32,)}
    if method in ("cuda", "xpu", "mtia", "ipu"):
        assert callable(getattr(layer, method))  # no such device here: only that the method exists
        return
    keywords = {"device": "cpu"} if method == "to_empty" else {}
    assert getattr(layer, method)(*arguments.get(method, ()), **keywords) is layer


@pytest.mark.parametrize("method", sorted(facts.MODULE_ITERATORS))
def test_module_iterators_yield_what_the_table_says(method):
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    first = next(iter(getattr(model, method)()))
    expected = facts.MODULE_ITERATORS[method]
    kinds = {"torch.nn.Parameter": nn.Parameter, facts.TENSOR: __import__("torch").Tensor, facts.MODULE: nn.Module}
    if isinstance(expected, tuple):
        assert isinstance(first, tuple) and len(first) == len(expected)
        assert isinstance(first[0], str) and expected[0] is None
        assert isinstance(first[1], kinds[expected[1]])
    else:
        assert isinstance(first, kinds[expected])
