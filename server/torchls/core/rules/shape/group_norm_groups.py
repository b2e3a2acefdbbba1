from __future__ import annotations

import ast

from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule


class GroupNormGroupsNotDividing(Rule):
    """`nn.GroupNorm` 的通道数不能被组数整除。

    **为什么是问题**：`GroupNorm(num_groups, num_channels)` 把通道平均分成 `num_groups` 组分别归一化，
    `num_channels` 必须是 `num_groups` 的整数倍，否则构造时报 `num_channels must be divisible by num_groups`。

    **示例**
    ```python
    norm = nn.GroupNorm(32, 48)
    ```

    **改正**：选能整除的组数，例如 `nn.GroupNorm(16, 48)`。

    **自动修复**：无。
    """

    code = "TL114"
    raises = True
    requires_text = ("GroupNorm",)
    name = "group-norm-groups-not-dividing"
    severity = Severity.ERROR
    kb_entry = "torch.nn.BatchNorm2d"
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        call = ctx.call(node)
        if call.qualname != "torch.nn.GroupNorm":
            return
        groups = getattr(call.arg(0, "num_groups"), "value", None)
        channels = getattr(call.arg(1, "num_channels"), "value", None)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (groups, channels)) or groups <= 0:
            return
        if channels % groups:
            ctx.report(node, f"`GroupNorm` 的 num_channels={channels} 不能被 num_groups={groups} 整除")
