"""Device rules (TL2xx): tensors and models on different devices, moves that do not happen."""

from torchls.core.rules.device.tensor_move_discarded import TensorMoveDiscarded

RULES = [TensorMoveDiscarded]
