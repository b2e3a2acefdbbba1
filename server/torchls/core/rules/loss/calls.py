"""Recognising a loss computation, whichever way it is written: ``criterion(out, y)`` with
``criterion = nn.CrossEntropyLoss()``, ``nn.CrossEntropyLoss()(out, y)`` or ``F.cross_entropy(out, y)``."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchls.core.rules.base import CallInfo, Context
from torchls.core.values import ModuleValue, TensorValue

# Functional loss -> the module class that computes the same thing.
FUNCTIONAL_LOSSES = {
    "torch.nn.functional.cross_entropy": "CrossEntropyLoss",
    "torch.nn.functional.nll_loss": "NLLLoss",
    "torch.nn.functional.binary_cross_entropy": "BCELoss",
    "torch.nn.functional.binary_cross_entropy_with_logits": "BCEWithLogitsLoss",
    "torch.nn.functional.mse_loss": "MSELoss",
    "torch.nn.functional.l1_loss": "L1Loss",
    "torch.nn.functional.smooth_l1_loss": "SmoothL1Loss",
    "torch.nn.functional.huber_loss": "HuberLoss",
    "torch.nn.functional.kl_div": "KLDivLoss",
}


@dataclass(frozen=True, slots=True)
class LossCall:
    kind: str  # the module class name: CrossEntropyLoss, BCELoss...
    call: CallInfo
    input_node: ast.expr | None
    target_node: ast.expr | None
    module: ModuleValue | None  # the loss module, when called through one (its constructor arguments)
    functional: bool

    def input(self, ctx: Context) -> TensorValue | None:
        return ctx.tensor(self.input_node)

    def target(self, ctx: Context) -> TensorValue | None:
        return ctx.tensor(self.target_node)

    @property
    def label(self) -> str:
        """How the message names the loss: ``CrossEntropyLoss`` or ``F.cross_entropy``."""
        if self.functional and self.call.qualname:
            return "F." + self.call.qualname.rsplit(".", 1)[-1]
        return self.kind


def loss_call(node: ast.Call, ctx: Context) -> LossCall | None:
    """The loss this call computes, or None when it is not a loss call we recognise."""
    call = ctx.call(node)
    if (
        call.module is not None
        and call.module.qualname.startswith("torch.nn.")
        and call.module.qualname.endswith("Loss")
    ):
        kind = call.module.qualname.rsplit(".", 1)[-1]
        return LossCall(kind, call, call.arg_node(0, "input"), call.arg_node(1, "target"), call.module, False)
    if call.qualname in FUNCTIONAL_LOSSES:
        kind = FUNCTIONAL_LOSSES[call.qualname]
        return LossCall(kind, call, call.arg_node(0, "input"), call.arg_node(1, "target"), None, True)
    return None
