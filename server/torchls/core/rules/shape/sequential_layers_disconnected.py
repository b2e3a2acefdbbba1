from __future__ import annotations

import ast

from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.shape.common import OWN_RULE_IN_SEQUENTIAL, sequential_problem


class SequentialLayersDisconnected(Rule):
    """`nn.Sequential` 里相邻的层尺寸接不上：前一层的输出不是后一层要的输入。

    **为什么是问题**：`Sequential` 把每层的输出直接交给下一层。`nn.Linear(784, 256)` 后面接
    `nn.Linear(128, 10)`、`nn.Conv2d(3, 32, 3)` 后面接 `nn.Conv2d(64, 64, 3)`，定义时不报错，第一次前向传播时
    才报形状错误。本规则在定义处就检查每一层与前面各层（中间的激活、Dropout 等不改变形状的层会被跳过）；
    各层彼此接得上、只是调用时传入的输入走到
    某层时不合适（例如 `Flatten` 之后的 `Linear` 与输入图像尺寸不符），由那一层自己的规则报告（TL101、TL108
    等）；归一化层的特征数不对由 TL109 报告。

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
        found = sequential_problem(node, ctx)
        if found is None or found[2] in OWN_RULE_IN_SEQUENTIAL or found[4]:
            return  # a norm layer sized wrong is TL109's wherever it sits; a misfit input is the layer's own rule's
        where, layer, _, message, _ = found
        applied = where is node and ctx.call(node).module is not None
        spliced = ctx.call(node).spliced
        ctx.report(where, message, related=ctx.related(layer.origin) if applied or spliced else ())
