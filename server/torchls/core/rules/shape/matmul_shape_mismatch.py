from __future__ import annotations

from torchls.core.findings import Severity
from torchls.core.rules.shape.common import RecordedProblemRule


class MatmulShapeMismatch(RecordedProblemRule):
    """矩阵乘法（`@`、`matmul`、`mm`、`bmm`）两边的内维不匹配，或维数不符合 `mm`/`bmm` 的要求。

    **为什么是问题**：`A @ B` 要求 `A` 的最后一维等于 `B` 的倒数第二维；`mm` 只接受二维矩阵，`bmm` 只接受
    `(B, N, M)` 的三维张量且 batch 维相同。形状对不上时运行时报 `mat1 and mat2 shapes cannot be multiplied`
    或 `batch1 must be a 3D tensor`。

    **示例**
    ```python
    a = torch.randn(4, 3)
    b = torch.randn(4, 5)
    c = a @ b        # 内维 3 和 4 不一致
    ```

    **改正**：确认哪一个应该转置：`a.T @ b` 得到 `(3, 5)`；批量矩阵乘法用 `bmm` 或 `matmul`。

    **自动修复**：无，要转置哪一边只有作者知道。
    """

    code = "TL102"
    raises = True
    requires_text = ("@", "matmul", "mm(", "bmm")
    name = "matmul-shape-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.matmul"
    problem_kind = "matmul"
