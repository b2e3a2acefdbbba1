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
