from __future__ import annotations

import ast

from torchls.core import shapes
from torchls.core.findings import Severity
from torchls.core.layers import input_problem, layer_output
from torchls.core.rules.base import Context, Rule
from torchls.core.values import ModuleValue, TensorValue


class SequentialLayersDisconnected(Rule):
    """`nn.Sequential` 里相邻的层尺寸接不上：前一层的输出不是后一层要的输入。

    **为什么是问题**：`Sequential` 把每层的输出直接交给下一层。`nn.Linear(784, 256)` 后面接
    `nn.Linear(128, 10)`、`nn.Conv2d(3, 32, 3)` 后面接 `nn.BatchNorm2d(64)`，定义时不报错，第一次前向传播时
    才报形状错误。本规则在定义处就检查每一层与前面各层（中间的激活、Dropout 等不改变形状的层会被跳过）。

    **示例**
    ```python
    model = nn.Sequential(
        nn.Linear(784, 256),
        nn.ReLU(),
        nn.Linear(128, 10),   # 上一层输出 256
    )
    ```

    **改正**：`nn.Linear(256, 10)`。

    **自动修复**：无。
    """

    code = "TL111"
    raises = True
    requires_text = ("Sequential",)
    name = "sequential-layers-disconnected"
    severity = Severity.ERROR
    kb_entry = "torch.nn.Sequential"
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        call = ctx.call(node)
        if call.module is not None and call.module.qualname == "torch.nn.Sequential" and call.module.children:
            self._check_applied(node, call.layer_inputs, ctx)
            return
        if call.qualname != "torch.nn.Sequential" or node.keywords or call.starred:
            return
        # At the definition. For Sequential(*layers) with a list the code builds, the layers are known but not
        # where each is written.
        arg_nodes = node.args if not call.spliced else [node] * len(call.args)
        value: TensorValue | None = TensorValue()  # whatever goes in: only what the layers fix is checked
        for arg_node, layer in zip(arg_nodes, call.args, strict=True):
            if not isinstance(layer, ModuleValue) or value is None:
                return
            problem = input_problem(layer, value)
            if problem is not None:
                related = ctx.related(layer.origin) if call.spliced else ()
                ctx.report(arg_node, f"在 `Sequential` 里与前面的层接不上：{problem[1]}", related=related)
                return
            result = layer_output(layer, value, arg_node)
            value = result if isinstance(result, TensorValue) else None

    @staticmethod
    def _check_applied(node: ast.Call, steps: tuple[tuple[ModuleValue, object], ...], ctx: Context) -> None:
        """A Sequential called on an input of known shape: the first layer that the value reaching it does not fit."""
        first = steps[0][1] if steps else None
        if not isinstance(first, TensorValue) or first.shape is None:
            return  # with no known input, the definition-site check below already said what can be said
        for index, (layer, value) in enumerate(steps, 1):
            if not isinstance(value, TensorValue):
                return
            if index == 1 or layer.user_class is not None:
                # The first layer meets the caller's input, not a neighbour: the layer's own rule (TL101, TL108,
                # ...) reports that. The file's own block is checked inside its forward, for this input.
                continue
            problem = input_problem(layer, value)
            if problem is not None:
                ctx.report(
                    node,
                    f"形状为 {shapes.fmt(first.shape)} 的输入走到 `Sequential` 的第 {index} 层时接不上：{problem[1]}",
                    related=ctx.related(layer.origin),
                )
                return
