from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.shape.common import RecordedProblemRule


class BroadcastMismatch(RecordedProblemRule):
    """逐元素运算的两个张量形状无法广播。

    **为什么是问题**：`+ - * /` 等逐元素运算按广播规则对齐形状：从最后一维往前比，每一对维度要么相等，
    要么有一个是 1。都不满足时运行时报 `The size of tensor a (3) must match the size of tensor b (4)`。

    **示例**
    ```python
    a = torch.randn(8, 3)
    b = torch.randn(8, 4)
    c = a + b      # 最后一维 3 和 4
    ```

    **改正**：检查两边的形状是否本应相同；需要按行或按列广播时用 `unsqueeze` 补出大小为 1 的维度。

    **自动修复**：无。
    """

    code = "TL112"
    raises = True
    name = "broadcast-shape-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.Tensor.expand"
    problem_kind = "broadcast"
