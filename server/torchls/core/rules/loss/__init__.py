"""Loss-function rules (TL3xx): inputs and targets a loss does not expect."""

from torchls.core.rules.loss.softmax_before_cross_entropy import SoftmaxBeforeCrossEntropy

RULES = [SoftmaxBeforeCrossEntropy]
