from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.shape.common import LayerInputRule


class LinearInFeaturesMismatch(LayerInputRule):
    """`nn.Linear` 的 `in_features` 与输入张量的最后一维不一致。

    **为什么是问题**：`Linear` 只变换输入的最后一维，要求它等于 `in_features`，否则运行时报
    `mat1 and mat2 shapes cannot be multiplied`。最常见的原因是卷积输出展平后的长度算错了，或者前一层的
    `out_features` 与这一层的 `in_features` 没有对上。

    **示例**
    ```python
    fc = nn.Linear(512, 10)
    x = torch.randn(32, 500)
    fc(x)  # 最后一维是 500，不是 512
    ```

    **改正**：让 `in_features` 等于实际的最后一维（这里是 `nn.Linear(500, 10)`），或者检查前面的展平和池化。

    **自动修复**：无，正确的数值只有作者知道。
    """

    code = "TL101"
    raises = True
    requires_text = ("Linear",)
    name = "linear-in-features-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.nn.Linear"
    problem_kind = "linear"
