from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.loss.input_kinds import ActivationBeforeLossRule


class SigmoidBeforeBceWithLogits(ActivationBeforeLossRule):
    """传给 `BCEWithLogitsLoss` / `F.binary_cross_entropy_with_logits` 的输入已经做过 sigmoid。

    **为什么是问题**：`BCEWithLogitsLoss` 内部自带 sigmoid，要的是 logits（最后一层的原始输出）。
    先 sigmoid 再传进去等于做了两次 sigmoid：输入被压在 `(0.5, 0.73)` 附近，损失降不下去、梯度很小，
    训练几乎不动，而且不报错。模型最后一层是 `nn.Sigmoid`、`forward` 里 `return torch.sigmoid(...)` 时同样会被发现。

    **示例**
    ```python
    probs = torch.sigmoid(model(x))
    loss = nn.BCEWithLogitsLoss()(probs, y)
    ```

    **改正**：`loss = nn.BCEWithLogitsLoss()(model(x), y)`；推理时需要概率再另外 `torch.sigmoid(logits)`。
    想保留模型里的 sigmoid，就改用 `nn.BCELoss`（数值稳定性较差，不推荐）。

    **自动修复**：安全：sigmoid 直接写在损失函数的参数里时（包括后面跟着 `.squeeze(1)`、`.float()` 这类只改形状或
    类型的方法），去掉这层 sigmoid；写在别处的 sigmoid 不动，不提供修复。
    """

    code = "TL302"
    requires_text = ("with_logits", "WithLogits")
    name = "sigmoid-before-bce-with-logits"
    severity = Severity.ERROR
    kb_entry = "torch.nn.BCEWithLogitsLoss"
    loss_kind = "BCEWithLogitsLoss"
    activation = "sigmoid"
    inside = "一次 sigmoid"
