"""Loss-function rules (TL3xx): inputs and targets a loss does not expect."""

from torchls.core.rules.loss.class_indices_to_regression_loss import ClassIndicesToRegressionLoss
from torchls.core.rules.loss.cross_entropy_class_dim_last import CrossEntropyClassDimLast
from torchls.core.rules.loss.integer_target_to_bce import IntegerTargetToBce
from torchls.core.rules.loss.invalid_cross_entropy_target import InvalidCrossEntropyTarget
from torchls.core.rules.loss.kl_div_input_not_log_probs import KlDivInputNotLogProbs
from torchls.core.rules.loss.kl_div_log_target_mismatch import KlDivLogTargetMismatch
from torchls.core.rules.loss.kl_div_mean_reduction import KlDivMeanReduction
from torchls.core.rules.loss.logits_to_bce_loss import LogitsToBceLoss
from torchls.core.rules.loss.loss_target_shape_mismatch import LossTargetShapeMismatch
from torchls.core.rules.loss.nll_loss_without_log_softmax import NllLossWithoutLogSoftmax
from torchls.core.rules.loss.sigmoid_applied_twice import SigmoidAppliedTwice
from torchls.core.rules.loss.sigmoid_before_bce_with_logits import SigmoidBeforeBceWithLogits
from torchls.core.rules.loss.single_class_cross_entropy import SingleClassCrossEntropy
from torchls.core.rules.loss.softmax_before_cross_entropy import SoftmaxBeforeCrossEntropy
from torchls.core.rules.loss.softmax_without_dim import SoftmaxWithoutDim

RULES = [
    SoftmaxBeforeCrossEntropy,
    SigmoidBeforeBceWithLogits,
    LogitsToBceLoss,
    NllLossWithoutLogSoftmax,
    KlDivInputNotLogProbs,
    InvalidCrossEntropyTarget,
    ClassIndicesToRegressionLoss,
    SoftmaxWithoutDim,
    LossTargetShapeMismatch,
    IntegerTargetToBce,
    KlDivLogTargetMismatch,
    KlDivMeanReduction,
    SingleClassCrossEntropy,
    CrossEntropyClassDimLast,
    SigmoidAppliedTwice,
]
