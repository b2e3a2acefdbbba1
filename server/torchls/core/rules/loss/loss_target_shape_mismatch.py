from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import (
    BCE_LOSSES,
    REGRESSION_LOSSES,
    format_shape,
    is_atomic,
    loss_call,
    reliable,
)
from torchls.core.values import Dim

_MISSING = object()  # a dim the shorter shape does not have (broadcasts like a 1)


class LossTargetShapeMismatch(Rule):
    """回归损失或 BCE 损失的 `input` 和 `target` 形状不同，例如 `(N, 1)` 对 `(N,)`。

    **为什么是问题**：`MSELoss`、`L1Loss`、`SmoothL1Loss`、`HuberLoss` 逐元素计算，形状不同时会**静默广播**：
    `(N, 1)` 的预测配 `(N,)` 的标签得到 `(N, N)` 的误差矩阵，算的是每个预测与所有标签的误差，只有一条
    `UserWarning`，模型只能学到均值。`BCELoss` / `BCEWithLogitsLoss` 不做广播，形状不同直接报 `ValueError`。
    只在形状能从代码里证明时报告；参数里显式写了 `unsqueeze` / `[:, None]` 的（如有意计算成对距离）不报告。

    **示例**
    ```python
    pred = model(x)                # (N, 1)
    loss = F.mse_loss(pred, y)     # y: (N,)
    ```

    **改正**：先对齐形状：`F.mse_loss(pred.squeeze(-1), y)`，或 `y.unsqueeze(-1)` / `y.view_as(pred)`。

    **自动修复**：安全：两者只差一个大小为 1 的维度、其余各维都相同时，在多出这一维的一方后面加 `.squeeze(k)`。
    其他形状差异不提供修复。
    """

    code = "TL309"
    requires_text = ("mse_loss", "MSELoss", "l1_loss", "L1Loss", "huber", "Huber", "binary_cross_entropy", "BCE")
    name = "loss-target-shape-mismatch"
    severity = Severity.ERROR
    kb_entry = "torch.nn.MSELoss"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind not in REGRESSION_LOSSES | BCE_LOSSES:
            return
        if loss.input_node is None or loss.target_node is None:
            return
        x, target = loss.input(ctx), loss.target(ctx)
        if not (reliable(loss.input_node, ctx, shape_only=True) and reliable(loss.target_node, ctx, shape_only=True)):
            return  # an in-place squeeze_/unsqueeze_ may have changed a shape the interpreter recorded
        if x is None or target is None or x.shape is None or target.shape is None:
            return
        a, b = x.shape, target.shape
        width = max(len(a), len(b))
        pairs = [(_dim(a, i), _dim(b, i)) for i in range(-width, 0)]
        shapes = f"输入 {format_shape(a)} 与目标 {format_shape(b)} "
        if loss.kind in REGRESSION_LOSSES:
            if any(_conflict(p, q) for p, q in pairs):
                return  # not broadcastable at all: a runtime error of another kind
            if _adds_dims(loss.input_node) or _adds_dims(loss.target_node):
                return  # x.unsqueeze(1) / x[:, None]: broadcasting on purpose (pairwise distances)
            input_grows = any(_expands(p, q) for p, q in pairs)
            target_grows = any(_expands(q, p) for p, q in pairs)
            if not (input_grows and target_grows):
                return
            result = format_shape(tuple(_broadcast(p, q) for p, q in pairs))
            message = f"`{loss.label}` 的{shapes}形状不同，会被静默广播成 {result} 再求损失，结果是错的"
        else:
            if len(a) == len(b) and not any(p is not None and q is not None and p != q for p, q in pairs):
                return
            message = f"`{loss.label}` 的{shapes}形状不同，运行时会报 `ValueError`"
        fix = None
        squeeze = _squeeze_fix(a, b, loss.input_node, loss.target_node, ctx)
        if squeeze is not None:
            side, edit = squeeze
            fix = Fix(f"对{side}去掉多出的大小为 1 的维度", (edit,))
        ctx.report(node, message, fix=fix)


def _dim(shape: tuple[Dim, ...], index: int) -> object:
    return shape[index] if -index <= len(shape) else _MISSING


def _adds_dims(node: ast.expr) -> bool:
    """The expression inserts a size-1 dim itself: ``unsqueeze``, ``None`` in an index, ``expand``."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and inner.attr in ("unsqueeze", "expand", "expand_as", "broadcast_to"):
            return True
        if isinstance(inner, ast.Subscript):
            index = inner.slice
            items = index.elts if isinstance(index, ast.Tuple) else [index]
            if any(isinstance(item, ast.Constant) and item.value is None for item in items):
                return True
    return False


def _broadcast(p: object, q: object) -> Dim:
    if p is _MISSING or p == 1:
        return q  # type: ignore[return-value]
    if q is _MISSING or q == 1 or q is None:
        return p  # type: ignore[return-value]
    return q if p is None else p  # type: ignore[return-value]


def _conflict(p: object, q: object) -> bool:
    return isinstance(p, int) and isinstance(q, int) and p != q and p != 1 and q != 1


def _expands(p: object, q: object) -> bool:
    """The side with ``p`` is provably stretched at this dim: it has 1 (or nothing) where the other has more."""
    return (p == 1 or p is _MISSING) and q is not _MISSING and q != 1


def _squeeze_fix(a, b, input_node, target_node, ctx: Context):
    """``pred.squeeze(-1)`` when ``a`` is ``b`` with one extra size-1 dim (or the other way round)."""
    for big, small, node, side in ((a, b, input_node, "输入"), (b, a, target_node, "目标")):
        if len(big) != len(small) + 1:
            continue
        for k in range(len(big) - 1, -1, -1):
            rest = big[:k] + big[k + 1 :]
            if big[k] == 1 and all(p == q for p, q in zip(rest, small, strict=True)):
                index = "-1" if k == len(big) - 1 else str(k)
                text = ctx.text(node) if is_atomic(node) else f"({ctx.text(node)})"
                return side, ctx.replace(node, f"{text}.squeeze({index})")
    return None
