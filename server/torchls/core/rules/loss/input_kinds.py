"""Two families of loss rules that differ only in their loss and wording, written once.

- :class:`ActivationBeforeLossRule`: the loss applies an activation itself (``CrossEntropyLoss`` a log_softmax,
  ``BCEWithLogitsLoss`` a sigmoid), so an input that already went through it is applied twice.
- :class:`LogProbabilityInputRule`: the loss expects log-probabilities (``NLLLoss``, ``KLDivLoss``), so
  probabilities or raw logits are wrong.
"""

from __future__ import annotations

import ast
from typing import ClassVar

from torchls.core.findings import Fix
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import loss_call, reliable, remove_call, softmax_to_log_softmax, written_call
from torchls.core.values import LOGITS, SIGMOID, SOFTMAX

NOT_LOG_PROBABILITIES = {
    SOFTMAX: "经过 softmax 的概率",
    SIGMOID: "经过 sigmoid 的概率",
    LOGITS: "未做 log_softmax 的 logits",
}


class ActivationBeforeLossRule(Rule):
    """Base: the input of ``loss_kind`` already went through ``activation``, which the loss applies itself."""

    loss_kind: ClassVar[str]
    activation: ClassVar[str]  # the provenance and the spelling: "softmax" / "sigmoid"
    inside: ClassVar[str]  # what the loss does internally, for the message
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind != self.loss_kind or loss.input_node is None:
            return
        x = loss.input(ctx)
        if x is None or x.provenance != self.activation or not reliable(loss.input_node, ctx):
            return
        fix = None
        written = written_call(loss.input_node, ctx, self.activation)
        if written is not None:
            edit = remove_call(loss.input_node, written[0], written[1], ctx)
            if edit is not None:
                fix = Fix(f"去掉损失函数参数里的 {self.activation}，直接传 logits", (edit,))
        ctx.report(
            node,
            f"`{loss.label}` 的输入已经过 {self.activation}；它内部会再做{self.inside}，应直接传 logits",
            fix=fix,
            related=ctx.related(x.origin),
        )


class LogProbabilityInputRule(Rule):
    """Base: ``loss_kind`` expects log-probabilities, and its input provably is something else."""

    loss_kind: ClassVar[str]
    argument: ClassVar[str]  # how the message names the input: "输入" / "第一个参数"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind != self.loss_kind or loss.input_node is None:
            return
        x = loss.input(ctx)
        if x is None or x.provenance not in NOT_LOG_PROBABILITIES or not reliable(loss.input_node, ctx):
            return
        fix = None
        if x.provenance == SOFTMAX:
            written = written_call(loss.input_node, ctx, "softmax")
            edit = softmax_to_log_softmax(written[0], ctx) if written is not None else None
            if edit is not None:
                fix = Fix("把 softmax 改为 log_softmax", (edit,))
        ctx.report(
            node,
            f"`{loss.label}` 的{self.argument}是{NOT_LOG_PROBABILITIES[x.provenance]}，"
            "而它要的是对数概率（`log_softmax` 的输出）",
            fix=fix,
            related=ctx.related(x.origin),
        )
