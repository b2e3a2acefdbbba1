"""Shared machinery of the shape rules: problems the interpreter recorded, and layer-input checks."""

from __future__ import annotations

import ast
from typing import ClassVar

from torchls.core.layers import input_problem
from torchls.core.rules.base import Context, Rule
from torchls.core.values import TensorValue


def recorded_problem(node: ast.AST, ctx: Context, kind: str) -> str | None:
    """The message of a shape problem of ``kind`` the interpreter recorded while evaluating ``node``."""
    problems = ctx.file_facts.get("problems")
    found = problems.get(node) if problems else None
    return found[1] if found and found[0] == kind else None


class RecordedProblemRule(Rule):
    """Reports the interpreter's shape problems of one kind (the shape logic lives in ``core/shapes.py``)."""

    problem_kind: ClassVar[str]
    node_types = (ast.Call, ast.BinOp)

    def visit(self, node: ast.AST, ctx: Context) -> None:
        message = recorded_problem(node, ctx, self.problem_kind)
        if message is None:
            return
        related = ()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            tensor = ctx.tensor(node.func.value)
            related = ctx.related(tensor.origin) if tensor is not None else ()
        ctx.report(node, message, related=related)


class LayerInputRule(Rule):
    """Reports a layer called on an input whose size provably does not fit it (``core/layers.input_problem``)."""

    problem_kind: ClassVar[str]
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        call = ctx.call(node)
        layer = call.module
        if layer is None or layer.user_class is not None:
            return
        if layer.qualname == "torch.nn.Sequential" and call.layer_inputs:
            # A Sequential's first layer gets the call's input (the ones after it are TL111's business)
            layer, first = call.layer_inputs[0]
            if not isinstance(first, TensorValue) or layer.user_class is not None:
                return
            problem = input_problem(layer, first)
            if problem is not None and problem[0] == self.problem_kind:
                ctx.report(node, f"`Sequential` 的第一层：{problem[1]}", related=ctx.related(layer.origin))
            return
        x = ctx.tensor(call.arg_node(0, "input") or call.arg_node(0, "query"))
        if x is None:
            return
        problem = input_problem(layer, x)
        if problem is None or problem[0] != self.problem_kind:
            return
        ctx.report(node, problem[1], related=ctx.related(layer.origin) + ctx.related(x.origin))
