from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.loss.input_kinds import LogProbabilityInputRule


class NllLossWithoutLogSoftmax(LogProbabilityInputRule):
    """传给 `NLLLoss` / `F.nll_loss` 的不是对数概率，而是 softmax 的概率或原始 logits。

    **为什么是问题**：`NLLLoss` 只做一件事：取出目标类别那一项再取负，`loss = -input[n, y_n]`。它不做任何归一化，
    所以输入必须已经是 `log_softmax` 的结果。传概率算的是 `-p` 而不是 `-log p`；传 logits 算的是“负的目标 logit”，
    模型会学着无限放大它。两种情况都不报错，损失还可能是负数。

    **示例**
    ```python
    probs = F.softmax(logits, dim=1)
    loss = F.nll_loss(probs, labels)
    ```

    **改正**：`F.nll_loss(F.log_softmax(logits, dim=1), labels)`，或者直接 `F.cross_entropy(logits, labels)`，
    两者完全等价。

    **自动修复**：安全：softmax 直接写在损失函数的参数里时，把它改成同样参数的 log_softmax
    （`F.softmax` → `F.log_softmax`、`x.softmax(1)` → `x.log_softmax(1)`、
    `nn.Softmax(...)(x)` → `nn.LogSoftmax(...)(x)`）。
    logits 和写在别处的 softmax 不提供修复：该在哪一维做 log_softmax 要由作者决定。
    """

    code = "TL304"
    requires_text = ("nll_loss", "NLLLoss")
    name = "nll-loss-without-log-softmax"
    severity = Severity.ERROR
    kb_entry = "torch.nn.NLLLoss"
    loss_kind = "NLLLoss"
    argument = "输入"
