from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import SIGMOID_FUNCTIONS, is_atomic, reliable
from torchls.core.values import SIGMOID, ModuleValue, TensorValue

_SIGMOID_LAYER = "torch.nn.Sigmoid"


class SigmoidAppliedTwice(Rule):
    """对已经是 sigmoid 输出的张量又做了一次 sigmoid。

    **为什么是问题**：sigmoid 的输出在 `(0, 1)` 内，再做一次 sigmoid，结果被压进 `(0.5, 0.731)`：按 `0.5`
    取阈值时所有样本都判为正类，`BCELoss` 的梯度也几乎为零，而且不报错。常见于模型最后一层已经是
    `nn.Sigmoid()`（或 `forward` 里已经 `return torch.sigmoid(...)`），调用处又 `torch.sigmoid(model(x))`；
    或者辅助函数里已经 `.sigmoid()`，拿到结果后又 sigmoid 一次。sigmoid 逐元素计算，中间的 `view`、`squeeze`、
    `.float()` 不改变这一点；中间做过算术（`sigmoid(a) * b`、`1 - p`）或索引赋值时不报告。

    **示例**
    ```python
    model = nn.Sequential(nn.Linear(16, 1), nn.Sigmoid())
    probs = torch.sigmoid(model(x))
    preds = probs > 0.5  # 全是 True
    ```

    **改正**：只保留一次 sigmoid：`probs = model(x)`；或者去掉模型里的 `nn.Sigmoid()`，让模型输出 logits
    （训练时配合 `BCEWithLogitsLoss`），在需要概率的地方再 sigmoid。

    **自动修复**：安全：第二次 sigmoid 写成 `torch.sigmoid(p)`、`F.sigmoid(p)` 或 `p.sigmoid()` 时，去掉这一层，
    直接用 `p`（它已经是概率）；`nn.Sigmoid` 层不动，不提供修复。
    """

    code = "TL315"
    requires_text = ("sigmoid", "Sigmoid", "expit")
    name = "sigmoid-applied-twice"
    severity = Severity.ERROR
    kb_entry = "torch.sigmoid"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        call = ctx.call(node)
        module = call.module
        if module is not None and module.user_class is None:
            if module.qualname == _SIGMOID_LAYER:
                self._check(node, call.arg_node(0, "input"), ctx, fixable=False)
            elif module.qualname == "torch.nn.Sequential" and call.layer_inputs:
                self._check_applied_sequential(node, call.layer_inputs, ctx)
            return
        if call.qualname in SIGMOID_FUNCTIONS:
            if call.starred or call.unknown_keywords:
                return
            self._check(node, call.arg_node(0, "input"), ctx, fixable=not node.keywords or _only_input(node))
        elif call.qualname == "torch.nn.Sequential":
            self._check_definition(node, ctx)
        elif (
            call.qualname is None
            and call.method == "sigmoid"
            and isinstance(node.func, ast.Attribute)
            and isinstance(call.receiver, TensorValue)
            and not node.args
            and not node.keywords
        ):
            self._check(node, node.func.value, ctx, fixable=True)

    def _check(self, node: ast.Call, argument: ast.expr | None, ctx: Context, fixable: bool) -> None:
        value = ctx.tensor(argument)
        if argument is None or value is None or value.provenance != SIGMOID or not reliable(argument, ctx):
            return
        fix = None
        if fixable:
            text = ctx.text(argument)
            if not is_atomic(argument) and not _standalone(node, ctx):
                text = f"({text})"
            fix = Fix("去掉第二次 sigmoid，直接使用已经是概率的值", (ctx.replace(node, text),))
        ctx.report(
            node,
            f"`{ctx.text(argument)}` 已经是 sigmoid 的输出，再做一次 sigmoid 会把它压进 (0.5, 0.731)",
            fix=fix,
            related=ctx.related(value.origin),
        )

    def _check_definition(self, node: ast.Call, ctx: Context) -> None:
        """``nn.Sequential(..., nn.Sigmoid(), nn.Sigmoid())``: two sigmoid layers with nothing but shape-keeping
        layers (``Flatten``, ``Dropout`` is not one of them) between them, written in the definition."""
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return
        previous_sigmoid: ast.expr | None = None
        for arg_node in node.args:
            layer = ctx.value(arg_node)
            if not isinstance(layer, ModuleValue) or layer.user_class is not None:
                previous_sigmoid = None
                continue
            if layer.qualname == _SIGMOID_LAYER:
                if previous_sigmoid is not None:
                    ctx.report(
                        arg_node,
                        "`Sequential` 里这个 `nn.Sigmoid()` 紧跟在另一个 `nn.Sigmoid()` 之后，"
                        "对概率又做了一次 sigmoid，输出被压进 (0.5, 0.731)",
                    )
                previous_sigmoid = arg_node
            elif layer.qualname not in _VALUE_KEEPING_LAYERS:
                previous_sigmoid = None

    def _check_applied_sequential(
        self, node: ast.Call, steps: tuple[tuple[ModuleValue, object], ...], ctx: Context
    ) -> None:
        """A called Sequential whose sigmoid layer receives a sigmoid output that the definition does not show:
        the caller's input (first layer), or the output of a block of the file's own."""
        for index, (layer, value) in enumerate(steps):
            if layer.qualname != _SIGMOID_LAYER or layer.user_class is not None:
                continue
            if not isinstance(value, TensorValue) or value.provenance != SIGMOID:
                continue
            if index == 0:
                if not reliable(node.args[0] if len(node.args) == 1 and not node.keywords else None, ctx):
                    return
            elif steps[index - 1][0].user_class is None:
                continue  # two torch layers next to each other: reported at the definition
            ctx.report(
                node,
                "这个 `Sequential` 的 `nn.Sigmoid()` 层收到的已经是 sigmoid 的输出，输出被压进 (0.5, 0.731)",
                related=ctx.related(value.origin),
            )
            return


# Layers between two Sigmoids that keep the values they pass on (only their arrangement or dtype may change).
_VALUE_KEEPING_LAYERS = frozenset({"torch.nn.Flatten", "torch.nn.Unflatten", "torch.nn.Identity"})


def _only_input(node: ast.Call) -> bool:
    return len(node.keywords) == 1 and node.keywords[0].arg == "input" and not node.args


def _standalone(node: ast.Call, ctx: Context) -> bool:
    """The call is a whole expression (an assignment's value, an argument, a return value): no parentheses needed."""
    parent = ctx.parents().get(node)
    return isinstance(parent, ast.Assign | ast.AnnAssign | ast.Return | ast.Expr | ast.keyword | ast.Call) and (
        not isinstance(parent, ast.Call) or node is not parent.func
    )
