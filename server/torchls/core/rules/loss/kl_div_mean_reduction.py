from __future__ import annotations

import ast

from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule


class KlDivMeanReduction(Rule):
    """`nn.KLDivLoss()` / `F.kl_div(...)` 没有指定 `reduction`，用的是默认的 `'mean'`，算出的不是 KL 散度。

    **为什么是问题**：默认的 `reduction='mean'` 把所有元素求和后除以**元素总数**（batch 大小 × 类别数），
    而 KL 散度的定义是每个样本求和、再对 batch 求平均，也就是 `reduction='batchmean'`。用默认值得到的损失
    小了“类别数”倍：蒸馏时这一项的权重被悄悄调小，换类别数时损失量级也跟着变。PyTorch 每次调用都会给出警告，
    并计划在以后的大版本把 `'mean'` 改成 `'batchmean'` 的行为。

    **示例**
    ```python
    kd = nn.KLDivLoss()
    loss = kd(F.log_softmax(student, dim=1), F.softmax(teacher, dim=1))
    ```

    **改正**：`nn.KLDivLoss(reduction="batchmean")`；确实想要逐元素平均就显式写 `reduction="mean"`。

    **自动修复**：无：改成 `'batchmean'` 会让损失放大“类别数”倍，损失权重、学习率可能要一起调整，要由作者决定。
    """

    code = "TL312"
    requires_text = ("kl_div", "KLDivLoss")
    name = "kl-div-mean-reduction"
    severity = Severity.WARNING
    kb_entry = "torch.nn.functional.kl_div"
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        call = ctx.call(node)
        if call.qualname == "torch.nn.functional.kl_div":
            first_option = 2  # input, target, then size_average, reduce, reduction
            label = "F.kl_div"
        elif call.qualname == "torch.nn.KLDivLoss":
            first_option = 0  # size_average, reduce, reduction
            label = "nn.KLDivLoss"
        else:
            return
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return
        if len(node.args) > first_option or any(
            k.arg in ("reduction", "size_average", "reduce") for k in node.keywords
        ):
            return  # a reduction (or the legacy size_average/reduce) is given
        ctx.report(
            node,
            f"`{label}` 没有指定 `reduction`，默认的 `'mean'` 除以的是元素总数，不是 KL 散度；"
            '应写 `reduction="batchmean"`',
        )
