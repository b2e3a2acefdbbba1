from __future__ import annotations

import ast

from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule

# The constructors that split embed_dim into num_heads, and where each finds the two numbers.
_ATTENTION = {
    "torch.nn.MultiheadAttention": (0, "embed_dim", 1, "num_heads"),
    "torch.nn.TransformerEncoderLayer": (0, "d_model", 1, "nhead"),
    "torch.nn.TransformerDecoderLayer": (0, "d_model", 1, "nhead"),
    "torch.nn.Transformer": (0, "d_model", 1, "nhead"),
}


class AttentionHeadsNotDividing(Rule):
    """多头注意力的 `embed_dim`（`d_model`）不能被 `num_heads`（`nhead`）整除。

    **为什么是问题**：多头注意力把嵌入维平均分给每个头，每个头 `embed_dim // num_heads` 维。不能整除时
    构造就会失败：`embed_dim must be divisible by num_heads`。`TransformerEncoderLayer` 等内部用的也是它。

    **示例**
    ```python
    attn = nn.MultiheadAttention(embed_dim=100, num_heads=8)
    ```

    **改正**：选能整除的组合，例如 `embed_dim=128, num_heads=8`，或 `embed_dim=100, num_heads=5`。

    **自动修复**：无。
    """

    code = "TL110"
    raises = True
    requires_text = ("MultiheadAttention", "Transformer")
    name = "attention-heads-not-dividing"
    severity = Severity.ERROR
    kb_entry = "torch.nn.MultiheadAttention"
    node_types = (ast.Call,)

    def visit(self, node: ast.Call, ctx: Context) -> None:
        call = ctx.call(node)
        where = _ATTENTION.get(call.qualname or "")
        if where is None:
            return
        dim_index, dim_name, heads_index, heads_name = where
        dim, heads = call.arg(dim_index, dim_name), call.arg(heads_index, heads_name)
        dim_value = getattr(dim, "value", None)
        heads_value = getattr(heads, "value", None)
        if not isinstance(dim_value, int) or not isinstance(heads_value, int) or heads_value <= 0:
            return
        if isinstance(dim_value, bool) or isinstance(heads_value, bool) or dim_value % heads_value == 0:
            return
        short = call.qualname.rsplit(".", 1)[-1]  # type: ignore[union-attr]
        ctx.report(
            node,
            f"`{short}` 的 {dim_name}={dim_value} 不能被 {heads_name}={heads_value} 整除：每个头分不到整数维",
        )
