"""Shape rules (TL1xx): sizes that provably do not fit."""

from torchls.core.rules.shape.attention_heads_not_dividing import AttentionHeadsNotDividing
from torchls.core.rules.shape.broadcast_mismatch import BroadcastMismatch
from torchls.core.rules.shape.cat_stack_shape_mismatch import CatStackShapeMismatch
from torchls.core.rules.shape.conv_in_channels import ConvInChannelsMismatch
from torchls.core.rules.shape.dim_out_of_range import DimOutOfRange
from torchls.core.rules.shape.group_norm_groups import GroupNormGroupsNotDividing
from torchls.core.rules.shape.linear_in_features import LinearInFeaturesMismatch
from torchls.core.rules.shape.matmul_shape_mismatch import MatmulShapeMismatch
from torchls.core.rules.shape.norm_features_mismatch import NormFeaturesMismatch
from torchls.core.rules.shape.sequence_input_size import SequenceInputSizeMismatch
from torchls.core.rules.shape.sequential_layers_disconnected import SequentialLayersDisconnected
from torchls.core.rules.shape.squeeze_non_singleton import SqueezeNonSingletonDim
from torchls.core.rules.shape.view_on_non_contiguous import ViewOnNonContiguous
from torchls.core.rules.shape.view_size_mismatch import ViewSizeMismatch

RULES = [
    LinearInFeaturesMismatch,
    MatmulShapeMismatch,
    ViewSizeMismatch,
    ViewOnNonContiguous,
    CatStackShapeMismatch,
    SqueezeNonSingletonDim,
    DimOutOfRange,
    ConvInChannelsMismatch,
    NormFeaturesMismatch,
    AttentionHeadsNotDividing,
    SequentialLayersDisconnected,
    BroadcastMismatch,
    SequenceInputSizeMismatch,
    GroupNormGroupsNotDividing,
]
