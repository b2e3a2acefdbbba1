from __future__ import annotations

import ast

from torchls.core.findings import Severity
from torchls.core.layers import state_problem
from torchls.core.rules.base import Context
from torchls.core.rules.shape.common import LayerInputRule


class SequenceInputSizeMismatch(LayerInputRule):
    """`LSTM`/`GRU`/`RNN` 的 `input_size`（或传入的初始隐状态）或 `MultiheadAttention` 的 `embed_dim` 与输入对不上。

    **为什么是问题**：循环层要求输入最后一维等于 `input_size`，注意力层要求 query 的最后一维等于
    `embed_dim`，否则报 `input.size(-1) must be equal to input_size`。常见于词向量维度改了而网络没跟着改。

    **示例**
    ```python
    lstm = nn.LSTM(input_size=128, hidden_size=64, batch_first=True)
    out, _ = lstm(torch.randn(8, 20, 100))   # 最后一维是 100
    ```

    **改正**：让 `input_size` 等于实际的特征维（这里是 100），或检查前面的 `Embedding` 维度。

    初始隐状态 `h_0`（LSTM 还有 `c_0`）的形状必须是 `(num_layers × 方向数, batch, hidden_size)`。没加
    `batch_first=True` 时，循环层把输入的第 0 维当时间、第 1 维当 batch：把 `(batch, 时间, 特征)` 的输入和按
    batch 建的 `h_0` 一起传进去，就报 `Expected hidden size (…), got […]`。

    **自动修复**：无。
    """

    code = "TL113"
    raises = True
    requires_text = ("LSTM", "GRU", "RNN", "MultiheadAttention")
    name = "sequence-input-size-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.nn.LSTM"
    problem_kind = "sequence"

    def visit(self, node: ast.Call, ctx: Context) -> None:
        super().visit(node, ctx)
        call = ctx.call(node)
        if call.module is None or call.module.user_class is not None or (len(node.args) < 2 and not node.keywords):
            return
        x, state = ctx.tensor(call.arg_node(0, "input")), call.arg(1, "hx")
        if x is None or state is None:
            return
        message = state_problem(call.module, x, state)
        if message is not None:
            ctx.report(node, message, related=ctx.related(call.module.origin))
