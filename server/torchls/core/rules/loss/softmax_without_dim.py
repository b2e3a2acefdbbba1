from __future__ import annotations

import ast

from torchls.core.findings import Edit, Fix, Severity
from torchls.core.rules.base import CallInfo, Context, Rule
from torchls.core.values import TensorValue

# Functions that guess the dim when it is missing (with a deprecation warning).
_IMPLICIT = frozenset({"torch.nn.functional.softmax", "torch.nn.functional.log_softmax", "torch.nn.functional.softmin"})
# Functions whose dim is required: calling them without one raises TypeError.
_REQUIRED = frozenset({"torch.softmax", "torch.log_softmax", "torch.special.softmax", "torch.special.log_softmax"})
_LAYERS = frozenset({"torch.nn.Softmax", "torch.nn.LogSoftmax", "torch.nn.Softmin"})
_METHODS = frozenset({"softmax", "log_softmax"})


class SoftmaxWithoutDim(Rule):
    """调用 `softmax` / `log_softmax`（`F.`、`torch.`、张量方法、`nn.Softmax` / `nn.LogSoftmax`）时没有写 `dim`。

    **为什么是问题**：`F.softmax(x)`、`nn.Softmax()` 不写 `dim` 时 PyTorch 按维数去猜：0、1、3 维输入用第 0 维，
    其余用第 1 维，只给一条弃用警告。对 `(N, L, C)` 这样的 3 维输出，它会沿 batch 维归一化，结果静默出错；
    同一段代码换个输入维数，归一化的维度也跟着变。`torch.softmax(x)`、`x.softmax()` 则直接报 `TypeError`。

    **示例**
    ```python
    probs = F.softmax(logits)            # logits: (N, L, C)，沿第 0 维归一化
    head = nn.Sequential(nn.Linear(128, 10), nn.Softmax())
    ```

    **改正**：永远显式写出类别所在的维度：`F.softmax(logits, dim=-1)`、`nn.Softmax(dim=1)`。

    **自动修复**：安全，但只在不改变行为时提供：`F.softmax` / `F.log_softmax` 的输入维数已知，且 PyTorch 猜的维度
    就是最后一维（1 维、2 维输入）时补上 `dim=-1`，4 维及以上补上 `dim=1`（它猜的正是第 1 维）。
    3 维输入（猜的是第 0 维，多半不是本意）、维数未知、`nn.Softmax()` 和会报错的写法不提供修复。
    """

    code = "TL308"
    requires_text = ("softmax", "Softmax", "softmin", "Softmin")
    name = "softmax-without-dim"
    severity = Severity.WARNING
    kb_entry = "torch.nn.functional.softmax"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        call = ctx.call(node)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return
        qualname = call.qualname
        if qualname in _IMPLICIT:
            if _has_dim(node, call, 1):
                return
            self._implicit(node, call, ctx, "F." + qualname.rsplit(".", 1)[-1])  # type: ignore[union-attr]
        elif qualname in _LAYERS:
            if _has_dim(node, call, 0):
                return
            short = qualname.rsplit(".", 1)[-1]  # type: ignore[union-attr]
            ctx.report(
                node,
                f"`nn.{short}` 没有指定 `dim`：PyTorch 会按输入维数猜（3 维输入沿第 0 维），容易沿错误的维度归一化",
            )
        elif qualname in _REQUIRED:
            if _has_dim(node, call, 1):
                return
            ctx.report(node, f"`{qualname}` 必须指定 `dim`，这样调用会报 `TypeError`")
        elif qualname is None and call.method in _METHODS and isinstance(call.receiver, TensorValue):
            if _has_dim(node, call, 0):
                return
            ctx.report(node, f"`Tensor.{call.method}` 必须指定 `dim`，这样调用会报 `TypeError`")

    def _implicit(self, node: ast.Call, call: CallInfo, ctx: Context, label: str) -> None:
        x = ctx.tensor(call.arg_node(0, "input"))
        rank = x.rank if x is not None else None
        fix = None
        if rank in (1, 2) or (rank is not None and rank >= 4):
            dim = "-1" if rank in (1, 2) else "1"
            edit = _dim_edit(node, dim, ctx)
            if edit is not None:
                fix = Fix(f"补上 `dim={dim}`（与 PyTorch 现在猜的维度相同）", (edit,))
        if rank == 3:
            message = f"`{label}` 没有指定 `dim`：对这个 3 维输入会沿第 0 维（通常是 batch 维）归一化"
        else:
            message = f"`{label}` 没有指定 `dim`：PyTorch 会按输入维数猜（3 维输入沿第 0 维），容易沿错误的维度归一化"
        ctx.report(node, message, fix=fix, related=ctx.related(x.origin) if rank == 3 and x is not None else ())


def _has_dim(node: ast.Call, call: CallInfo, index: int) -> bool:
    """True when ``dim`` is given (positionally at ``index`` or by keyword) and is not the literal ``None``."""
    given = call.arg_node(index, "dim")
    return given is not None and not (isinstance(given, ast.Constant) and given.value is None)


def _dim_edit(node: ast.Call, dim: str, ctx: Context) -> Edit | None:
    call = ctx.call(node)
    given = call.arg_node(1, "dim")
    if given is not None:  # dim=None or a positional None: replace it
        return ctx.replace(given, dim)
    items: list[ast.AST] = [*node.args, *(k.value for k in node.keywords)]
    if not items:
        return None
    last = max(items, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))
    return ctx.insert_after(last, f", dim={dim}")
