from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.shape.common import LayerInputRule


class ConvInChannelsMismatch(LayerInputRule):
    """卷积层的 `in_channels` 与输入的通道数不一致，或输入的维数不对。

    **为什么是问题**：`Conv2d` 要求输入是 `(N, C, H, W)`（或无 batch 的 `(C, H, W)`），且 `C` 等于
    `in_channels`；`Conv1d` 是 `(N, C, L)`。通道对不上时报 `expected input to have 3 channels, but got 1`，
    常见于灰度图配 RGB 模型、或前一层的 `out_channels` 与这一层没有对上。

    **示例**
    ```python
    conv1 = nn.Conv2d(3, 16, 3)
    conv2 = nn.Conv2d(32, 64, 3)
    y = conv2(conv1(x))      # conv1 输出 16 个通道
    ```

    **改正**：让 `in_channels` 等于上一层的 `out_channels`（这里是 `nn.Conv2d(16, 64, 3)`）。

    **自动修复**：无。
    """

    code = "TL108"
    raises = True
    requires_text = ("Conv",)
    name = "conv-in-channels-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.nn.Conv2d"
    problem_kind = "conv"
