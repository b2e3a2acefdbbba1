from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.shape.common import RecordedProblemRule


class CatStackShapeMismatch(RecordedProblemRule):
    """`torch.cat` / `torch.stack` 的张量形状不兼容。

    **为什么是问题**：`cat` 沿已有的一维拼接，其余各维必须相同，维数也必须相同；`stack` 新建一维堆叠，
    要求所有张量形状完全一样。否则运行时报 `Sizes of tensors must match except in dimension ...` 或
    `stack expects each tensor to be equal size`。`cat` 和 `stack` 用混了是最常见的原因。

    **示例**
    ```python
    a = torch.randn(4, 3)
    b = torch.randn(5, 2)
    torch.cat([a, b], dim=0)   # 第 1 维 3 和 2 不同
    ```

    **改正**：确认拼接维度（`dim`）是否写对；需要新建维度时用 `stack` 并保证形状一致。

    **自动修复**：无。
    """

    code = "TL105"
    raises = True
    requires_text = ("cat", "stack", "concat")
    name = "cat-stack-shape-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.cat"
    problem_kind = "join"
