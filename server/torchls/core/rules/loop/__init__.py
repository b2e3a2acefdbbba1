"""Training-loop and autograd rules (TL4xx)."""

from torchls.core.rules.loop.backward_without_zero_grad import BackwardWithoutZeroGrad

RULES = [BackwardWithoutZeroGrad]
