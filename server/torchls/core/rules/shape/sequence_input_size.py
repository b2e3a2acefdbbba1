from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.shape.common import LayerInputRule


class SequenceInputSizeMismatch(LayerInputRule):
    """`LSTM`/`GRU`/`RNN` 的 `input_size` 或 `MultiheadAttention` 的 `embed_dim` 与输入的最后一维不一致。

    **为什么是问题**：循环层要求输入最后一维等于 `input_size`，注意力层要求 query 的最后一维等于
    `embed_dim`，否则报 `input.size(-1) must be equal to input_size`。常见于词向量维度改了而网络没跟着改。

    **示例**
    ```python
    lstm = nn.LSTM(input_size=128, hidden_size=64, batch_first=True)
    out, _ = lstm(torch.randn(8, 20, 100))   # 最后一维是 100
    ```

    **改正**：让 `input_size` 等于实际的特征维（这里是 100），或检查前面的 `Embedding` 维度。

    **自动修复**：无。
    """

    code = "TL113"
    raises = True
    requires_text = ("LSTM", "GRU", "RNN", "MultiheadAttention")
    name = "sequence-input-size-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.nn.LSTM"
    problem_kind = "sequence"
