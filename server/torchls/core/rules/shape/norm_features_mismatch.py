from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.shape.common import LayerInputRule


class NormFeaturesMismatch(LayerInputRule):
    """归一化层（`BatchNorm`、`LayerNorm`、`GroupNorm`）的特征数与输入对不上。

    **为什么是问题**：`BatchNorm2d(C)` 要求输入是 `(N, C, H, W)` 且通道数为 `C`；`BatchNorm1d(C)` 要求
    `(N, C)` 或 `(N, C, L)`；`LayerNorm(shape)` 要求输入的最后几维正好是 `shape`；`GroupNorm` 的
    `num_channels` 要等于第 1 维。不一致时报 `running_mean should contain 32 elements not 64` 之类的错误。

    **示例**
    ```python
    conv = nn.Conv2d(3, 64, 3)
    bn = nn.BatchNorm2d(32)
    y = bn(conv(x))          # 卷积输出 64 个通道
    ```

    **改正**：`nn.BatchNorm2d(64)`，与上一层的输出通道一致。

    **自动修复**：无。
    """

    code = "TL109"
    raises = True
    requires_text = ("Norm",)
    name = "norm-features-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.nn.BatchNorm2d"
    problem_kind = "norm"
