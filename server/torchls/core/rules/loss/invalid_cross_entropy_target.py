from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loss.calls import (
    append_method,
    format_shape,
    loss_call,
    reliable,
    remove_call,
    typed_target,
    written_call,
)
from torchls.core.values import FLOAT_DTYPES, INTEGER_DTYPES, ONE_HOT, TensorValue

_NARROW_INTEGERS = frozenset({"torch.int32", "torch.int16", "torch.int8"})


class InvalidCrossEntropyTarget(Rule):
    """`CrossEntropyLoss` / `NLLLoss` 的目标格式不对：整数 one-hot、浮点类别索引，或 int32 的类别索引。

    **为什么是问题**：交叉熵的目标只有两种合法形式：
    - 类别索引：比输入少一个类别维（输入 `(N, C)` 时是 `(N,)`），dtype 必须是 `torch.long`（`uint8` 也可以）；
    - 类别概率：与输入同形状，dtype 必须是浮点（只有 `CrossEntropyLoss` 支持，`NLLLoss` 不支持）。

    `F.one_hot` 的输出是 int64、与输入同形状，两种都不是；`torch.tensor([0., 2., 1.])` 这样的浮点标签、
    `.int()` 得到的 int32 标签也不行。这些都会在运行时报
    `Expected floating point type for target with class probabilities` 或 `expected target dtype to be Long` 之类的错。

    **示例**
    ```python
    loss = F.cross_entropy(logits, F.one_hot(labels, num_classes=10))
    loss = criterion(logits, labels.float())
    ```

    **改正**：直接传类别索引 `labels`（`torch.long`）；确实要用 one-hot/软标签时先 `.float()`（仅 `CrossEntropyLoss`）。

    **自动修复**：安全：one-hot 直接写在参数里时去掉 `F.one_hot`，改传类别索引本身；浮点或 int32 的类别索引
    在后面加 `.long()`。这几种写法原本都会报错，修复后的含义与作者的意图一致。整数 one-hot 来自别处时不提供修复。
    """

    code = "TL306"
    raises = True
    requires_text = ("cross_entropy", "CrossEntropyLoss", "nll_loss", "NLLLoss")
    name = "invalid-cross-entropy-target"
    severity = Severity.ERROR
    kb_entry = "torch.nn.CrossEntropyLoss"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        loss = loss_call(node, ctx)
        if loss is None or loss.kind not in ("CrossEntropyLoss", "NLLLoss") or loss.target_node is None:
            return
        target = typed_target(loss, ctx)
        if target is None or target.dtype is None:
            return
        dtype = target.dtype
        x = loss.input(ctx)
        input_rank = x.rank if x is not None else None
        if not (reliable(loss.input_node, ctx) and reliable(loss.target_node, ctx)):
            input_rank = None  # an in-place squeeze_/unsqueeze_ may have changed a rank the interpreter recorded
            target = target.with_(shape=None, tail=None)
        same_rank = input_rank is not None and target.rank == input_rank
        fewer_dims = input_rank is not None and target.rank is not None and target.rank == input_rank - 1
        label = loss.label
        fix = None
        if dtype in _NARROW_INTEGERS and not same_rank:
            message = f"`{label}` 的类别索引必须是 int64（`torch.long`），这里是 `{dtype}`，运行时会报错"
            fix = Fix("把目标转成 `.long()`", (append_method(loss.target_node, "long", ctx),))
        elif dtype in INTEGER_DTYPES and (same_rank or (target.provenance == ONE_HOT and input_rank is None)):
            if target.provenance == ONE_HOT:
                message = f"`{label}` 的目标是整数 one-hot（`F.one_hot` 的输出），运行时会报错；应直接传类别索引"
                written = written_call(loss.target_node, ctx, "one_hot")
                edit = remove_call(loss.target_node, *written, ctx) if written is not None else None
                if edit is not None:
                    fix = Fix("去掉 `F.one_hot`，直接传类别索引", (edit,))
            else:
                message = (
                    f"`{label}` 的目标是与输入同维数的整数张量（像 one-hot），运行时会报错；类别索引应比输入少一维"
                )
        elif dtype in FLOAT_DTYPES and fewer_dims:
            message = f"`{label}` 的目标是浮点类别索引（比输入少一维），而类别索引必须是 int64，运行时会报错"
            if _integral(loss.target_node, target, ctx):  # .long() keeps the values only when they are whole
                fix = Fix("把目标转成 `.long()`", (append_method(loss.target_node, "long", ctx),))
        elif dtype in FLOAT_DTYPES and loss.kind == "NLLLoss":
            message = f"`{label}` 只接受 int64 类别索引，不接受浮点目标（软标签请用 `cross_entropy`），运行时会报错"
        elif dtype in FLOAT_DTYPES and input_rank is None and _last_dims_differ(x, target):
            message = (
                f"`{label}` 的目标是浮点张量 {format_shape(target.shape)}，最后一维与输入的最后一维不同："  # type: ignore[arg-type]
                "既不是类别索引（必须是 int64），也不是与输入同形状的概率目标，运行时会报错"
            )
        else:
            return
        ctx.report(node, message, fix=fix, related=ctx.related(target.origin))


def _integral(node: ast.expr, target: TensorValue, ctx: Context) -> bool:
    """True when a float target provably holds whole numbers: ``labels.float()`` of an integer tensor, or a
    ``torch.tensor`` literal of whole floats. Only then does ``.long()`` keep its values."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("float", "double"):
        receiver = ctx.tensor(node.func.value)
        return receiver is not None and receiver.dtype in INTEGER_DTYPES
    origin = target.origin.node if target.origin is not None else None
    if isinstance(origin, ast.Call) and ctx.qualify(origin.func) == "torch.tensor" and origin.args:
        numbers = [n for n in ast.walk(origin.args[0]) if isinstance(n, ast.Constant)]
        return bool(numbers) and all(isinstance(n.value, int | float) and float(n.value).is_integer() for n in numbers)
    return False


def _last_dims_differ(x: TensorValue | None, target: TensorValue) -> bool:
    """The input's known last dim (its classes, or a spatial size) differs from the target's known last dim."""
    last = x.trailing(1) if x is not None else None
    if last is None or last[0] is None or not target.shape:
        return False
    return target.shape[-1] is not None and target.shape[-1] != last[0]
