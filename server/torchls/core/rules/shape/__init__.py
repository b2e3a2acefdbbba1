"""Shape rules (TL1xx): sizes that provably do not fit."""

from torchls.core.rules.shape.linear_in_features import LinearInFeaturesMismatch

RULES = [LinearInFeaturesMismatch]
