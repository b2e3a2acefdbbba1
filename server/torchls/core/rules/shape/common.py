"""Shared machinery of the shape rules: problems the interpreter recorded, and layer-input checks."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import ClassVar

from torchls.core import shapes
from torchls.core.layers import input_problem, layer_output
from torchls.core.rules.base import Analysis, CallInfo, Context, Rule
from torchls.core.values import ModuleValue, TensorValue

# Kinds of layer problem that their own rule reports wherever the layer sits, in a Sequential too: a BatchNorm
# sized for the wrong channels is a norm problem first (TL109), not only two neighbours that do not fit (TL111).
OWN_RULE_IN_SEQUENTIAL = frozenset({"norm"})


def recorded_problem(node: ast.AST, ctx: Context, kind: str) -> str | None:
    """The message of a shape problem of ``kind`` the interpreter recorded while evaluating ``node``."""
    found = ctx.shape_problems.get(node)
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
        if "torch.nn.Sequential" in (call.qualname, layer and layer.qualname):
            found = sequential_problem(node, ctx)
            # Its own rule reports a layer that does not fit the value the call's input brings it, and a norm
            # layer wherever it sits; layers that do not fit each other are TL111's.
            if found is not None and found[2] == self.problem_kind and (found[4] or found[2] in OWN_RULE_IN_SEQUENTIAL):
                where, inner, _, message, _ = found
                ctx.report(where, message, related=ctx.related(inner.origin) if where is node else ())
                return
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


SequentialProblem = tuple[ast.AST, ModuleValue, str, str, bool]


@dataclass(slots=True)
class _SequentialProblems(Analysis):
    """:func:`sequential_problem`'s answer for each evaluation of a call (keyed by its :class:`CallInfo`): every
    layer-input rule and TL111 ask about each ``Sequential`` call, and walking its layers once is enough."""

    found: dict[ast.Call, tuple[CallInfo, SequentialProblem | None]] = field(default_factory=dict)


def sequential_problem(node: ast.Call, ctx: Context) -> SequentialProblem | None:
    """See :func:`_sequential_problem`; computed once per evaluation of ``node``."""
    call = ctx.call(node)
    memo = ctx.analysis(_SequentialProblems).found
    cached = memo.get(node)
    if cached is not None and cached[0] is call:
        return cached[1]
    found = _sequential_problem(node, call, ctx)
    memo[node] = (call, found)
    return found


def _sequential_problem(node: ast.Call, call: CallInfo, ctx: Context) -> SequentialProblem | None:
    """The first layer of an ``nn.Sequential`` that provably does not fit what reaches it: where to report it, the
    layer, the problem's kind, the message, and whether it is the call's input that does not fit (the layers
    themselves fit each other). At the definition (``nn.Sequential(...)``), what the layers fix is checked from
    any input; where a Sequential is called on a known input, that input goes through, and the first layer is
    left to the layer's own rule (it meets the caller's value, not a neighbour)."""
    if call.module is not None and call.module.qualname == "torch.nn.Sequential" and call.module.children:
        first = call.layer_inputs[0][1] if call.layer_inputs else None
        if not isinstance(first, TensorValue) or first.shape is None:
            return None  # with no known input, the definition-site check already said what can be said
        if _first_misfit(list(call.module.children), [node] * len(call.module.children)) is not None:
            return None  # the layers do not fit each other: the definition site reports that
        for index, (layer, value) in enumerate(call.layer_inputs, 1):
            if not isinstance(value, TensorValue):
                return None
            if index == 1 or layer.user_class is not None:
                continue  # the file's own block is checked inside its forward, for this input
            problem = input_problem(layer, value)
            if problem is not None:
                shown = shapes.fmt(first.shape)
                message = f"形状为 {shown} 的输入走到 `Sequential` 的第 {index} 层时接不上：{problem[1]}"
                # A Linear fed a feature map (N, C, H, W) lacks the Flatten before it: the chain is broken, not
                # the Linear's size.
                missing_flatten = layer.qualname == "torch.nn.Linear" and value.rank is not None and value.rank >= 4
                return node, layer, problem[0], message, not missing_flatten
        return None
    if call.qualname != "torch.nn.Sequential" or node.keywords or call.starred:
        return None
    # For Sequential(*layers) with a list the code builds, the layers are known but not where each is written.
    arg_nodes = node.args if not call.spliced else [node] * len(call.args)
    found = _first_misfit(list(call.args), arg_nodes)
    if found is None:
        return None
    index, layer, problem = found
    return arg_nodes[index], layer, problem[0], f"在 `Sequential` 里与前面的层接不上：{problem[1]}", False


def _first_misfit(layers: list, nodes: list) -> tuple[int, ModuleValue, tuple[str, str]] | None:
    """The first of ``layers`` (written at ``nodes``) that provably does not fit what the ones before it give,
    whatever goes in: only what the layers fix is checked."""
    value: TensorValue | None = TensorValue()
    for index, (layer, node) in enumerate(zip(layers, nodes, strict=True)):
        if not isinstance(layer, ModuleValue) or value is None:
            return None
        problem = input_problem(layer, value)
        if problem is not None:
            return index, layer, problem
        result = layer_output(layer, value, node)
        value = result if isinstance(result, TensorValue) else None
    return None
