"""The final hidden state the checker gives a recurrent layer's call, against the installed torch."""

from __future__ import annotations

import ast

import pytest
import torch

from torchls.core.layers import layer_output
from torchls.core.values import ModuleValue, TensorValue, TupleValue

CONFIGS = [
    ("GRU", {"batch_first": True}, (4, 7, 8)),
    ("GRU", {"num_layers": 2, "bidirectional": True}, (7, 4, 8)),
    ("LSTM", {"batch_first": True, "num_layers": 3}, (4, 7, 8)),
    ("LSTM", {}, (7, 8)),  # unbatched
    ("RNN", {"bidirectional": True, "batch_first": True}, (2, 5, 8)),
]


@pytest.mark.parametrize("kind, options, shape", CONFIGS, ids=lambda c: str(c))
def test_the_final_state_has_torchs_shape(kind, options, shape):
    layer = getattr(torch.nn, kind)(8, 16, **options)
    _, state = layer(torch.randn(shape))
    module = ModuleValue(f"torch.nn.{kind}", (("input_size", 8), ("hidden_size", 16), *options.items()))
    result = layer_output(module, TensorValue(shape=shape), ast.Constant(0))
    assert isinstance(result, TupleValue)
    modelled = result.items[1]
    if kind == "LSTM":
        assert isinstance(modelled, TupleValue)
        assert [t.shape for t in modelled.items] == [tuple(s.shape) for s in state]
    else:
        assert isinstance(modelled, TensorValue) and modelled.shape == tuple(state.shape)
