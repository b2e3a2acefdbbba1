from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.shape.common import RecordedProblemRule


class ViewSizeMismatch(RecordedProblemRule):
    """`view` / `reshape` 的目标形状与张量的元素个数不一致。

    **为什么是问题**：`view` 和 `reshape` 只改变形状，不增减元素：目标形状各维的乘积必须等于原来的元素个数，
    用了 `-1` 时其余维的乘积必须能整除元素个数，而且最多只能有一个 `-1`。否则运行时报
    `shape '[...]' is invalid for input of size N`。

    **示例**
    ```python
    x = torch.randn(2, 3, 4)      # 24 个元素
    y = x.view(5, -1)             # 24 不能被 5 整除
    ```

    **改正**：检查目标形状，通常应写成 `x.view(x.size(0), -1)` 这样与输入挂钩的形式，而不是写死数字。

    **自动修复**：无，正确的形状只有作者知道。
    """

    code = "TL103"
    raises = True
    requires_text = ("view", "reshape")
    name = "view-size-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.Tensor.view"
    problem_kind = "count"
