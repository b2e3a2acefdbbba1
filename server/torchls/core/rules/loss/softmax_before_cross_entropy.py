from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.loss.input_kinds import ActivationBeforeLossRule


class SoftmaxBeforeCrossEntropy(ActivationBeforeLossRule):
    """传给 `CrossEntropyLoss` / `F.cross_entropy` 的输入已经做过 softmax。

    **为什么是问题**：交叉熵内部会先做 `log_softmax`，它要的是 logits（模型最后一层的原始输出）。
    先 softmax 再交叉熵等于做了两次 softmax：概率被压到很窄的范围，梯度变得很小，训练几乎不动，而且不报错。
    模型最后一层是 `nn.Softmax`、`forward` 里 `return F.softmax(...)` 时同样会被发现。

    **示例**
    ```python
    probs = F.softmax(logits, dim=1)
    loss = nn.CrossEntropyLoss()(probs, labels)
    ```

    **改正**：`loss = nn.CrossEntropyLoss()(logits, labels)`；需要概率时（如计算准确率）另外做 softmax。

    **自动修复**：安全：softmax 直接写在损失函数的参数里时（包括后面跟着 `.view(-1, C)`、`.float()` 这类只改形状或
    类型的方法），去掉这层 softmax；写在别处的 softmax 不动，不提供修复。
    """

    code = "TL301"
    requires_text = ("cross_entropy", "CrossEntropyLoss")
    name = "softmax-before-cross-entropy"
    severity = Severity.ERROR
    kb_entry = "torch.nn.CrossEntropyLoss"
    loss_kind = "CrossEntropyLoss"
    activation = "softmax"
    inside = " log_softmax"
