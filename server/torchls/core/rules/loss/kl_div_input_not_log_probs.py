from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.loss.input_kinds import LogProbabilityInputRule


class KlDivInputNotLogProbs(LogProbabilityInputRule):
    """`KLDivLoss` / `F.kl_div` 的第一个参数（预测）不是对数概率，而是 softmax 的概率或原始 logits。

    **为什么是问题**：`kl_div(input, target)` 按 `target * (log(target) - input)` 计算，`input` 必须是
    **对数概率**（`log_softmax` 的输出），这与 `target`（默认是普通概率）不同。传概率或 logits 不会报错，
    但算出的值不是 KL 散度，可能为负，模型朝错误的方向优化。知识蒸馏里最常见。

    **示例**
    ```python
    loss = F.kl_div(F.softmax(student_logits, dim=1), F.softmax(teacher_logits, dim=1), reduction="batchmean")
    ```

    **改正**：第一个参数改用 `log_softmax`：
    `F.kl_div(F.log_softmax(student_logits, dim=1), F.softmax(teacher_logits, dim=1), reduction="batchmean")`。

    **自动修复**：安全：softmax 直接写在第一个参数里时，把它改成同样参数的 log_softmax
    （`F.softmax` → `F.log_softmax`、`x.softmax(1)` → `x.log_softmax(1)`、
    `nn.Softmax(...)(x)` → `nn.LogSoftmax(...)(x)`）。
    logits 和写在别处的 softmax 不提供修复。
    """

    code = "TL305"
    requires_text = ("kl_div", "KLDivLoss")
    name = "kl-div-input-not-log-probs"
    severity = Severity.ERROR
    kb_entry = "torch.nn.KLDivLoss"
    loss_kind = "KLDivLoss"
    argument = "第一个参数"
