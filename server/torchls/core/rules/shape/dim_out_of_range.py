from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.shape.common import RecordedProblemRule


class DimOutOfRange(RecordedProblemRule):
    """`dim` 参数超出了张量的维数范围。

    **为什么是问题**：一个 `n` 维张量的 `dim` 只能取 `-n` 到 `n - 1`（`unsqueeze` 可以到 `n`）。超出范围时
    运行时报 `Dimension out of range`。常见于把 `(N, C)` 的代码搬到没有 batch 维的张量上，或 `dim=2` 写成了
    三维数据的习惯。

    **示例**
    ```python
    x = torch.randn(4, 10)
    p = x.softmax(dim=2)     # 二维张量没有第 2 维
    ```

    **改正**：按实际维数写 `dim`，取最后一维时写 `dim=-1` 最稳妥。

    **自动修复**：无。
    """

    code = "TL107"
    raises = True
    name = "dim-out-of-range"
    severity = Severity.ERROR
    kb_entry = "torch.Tensor.dim"
    problem_kind = "dim"
