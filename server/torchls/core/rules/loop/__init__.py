"""Training-loop and autograd rules (TL4xx)."""

from torchls.core.rules.loop.backward_under_no_grad import BackwardUnderNoGrad
from torchls.core.rules.loop.backward_without_zero_grad import BackwardWithoutZeroGrad
from torchls.core.rules.loop.clip_scaled_gradients import ClipScaledGradients
from torchls.core.rules.loop.eval_without_model_eval import EvalWithoutModelEval
from torchls.core.rules.loop.functional_dropout_always_on import FunctionalDropoutAlwaysOn
from torchls.core.rules.loop.grad_mode_call_without_with import GradModeCallWithoutWith
from torchls.core.rules.loop.inplace_on_leaf_requiring_grad import InplaceOnLeafRequiringGrad
from torchls.core.rules.loop.layer_added_after_optimizer import LayerAddedAfterOptimizer
from torchls.core.rules.loop.layers_in_plain_container import LayersInPlainContainer
from torchls.core.rules.loop.loss_accumulated_with_graph import LossAccumulatedWithGraph
from torchls.core.rules.loop.optimizer_step_bypasses_scaler import OptimizerStepBypassesScaler
from torchls.core.rules.loop.scheduler_step_before_optimizer_step import SchedulerStepBeforeOptimizerStep
from torchls.core.rules.loop.shuffled_loader_against_ordered_labels import ShuffledLoaderAgainstOrderedLabels
from torchls.core.rules.loop.train_mode_not_restored import TrainModeNotRestored
from torchls.core.rules.loop.zero_grad_between_backward_and_step import ZeroGradBetweenBackwardAndStep
from torchls.core.rules.loop.zero_grad_every_micro_batch import ZeroGradEveryMicroBatch
from torchls.core.rules.loop.zero_grad_wrong_optimizer import ZeroGradWrongOptimizer

RULES = [
    BackwardWithoutZeroGrad,
    LossAccumulatedWithGraph,
    EvalWithoutModelEval,
    LayersInPlainContainer,
    InplaceOnLeafRequiringGrad,
    SchedulerStepBeforeOptimizerStep,
    ClipScaledGradients,
    ZeroGradBetweenBackwardAndStep,
    BackwardUnderNoGrad,
    FunctionalDropoutAlwaysOn,
    GradModeCallWithoutWith,
    TrainModeNotRestored,
    OptimizerStepBypassesScaler,
    ZeroGradEveryMicroBatch,
    LayerAddedAfterOptimizer,
    ZeroGradWrongOptimizer,
    ShuffledLoaderAgainstOrderedLabels,
]
