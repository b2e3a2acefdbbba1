from __future__ import annotations

import ast

from torchls.core.findings import Edit, Fix, Related, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.device import common
from torchls.core.text import Span
from torchls.core.values import InstanceValue, Literal

# DataLoader options that only make sense with worker processes: num_workers=0 would make them fail.
_WORKER_OPTIONS = frozenset({"persistent_workers", "prefetch_factor", "worker_init_fn", "multiprocessing_context"})


class DataloaderOverGpuTensors(Rule):
    """`DataLoader` 的 `TensorDataset` 里装的是 GPU 张量，却又开了 `pin_memory=True` 或多个 worker 进程。

    **为什么是问题**：`pin_memory=True` 是把 CPU 上的 batch 放进锁页内存、加快拷到 GPU 的速度，只能用于 CPU 张量；
    数据已经在 GPU 上时，第一个 batch 就会报 `cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can
    be pinned`。`num_workers > 0` 时，worker 子进程要读 GPU 张量，在 Linux 默认的 fork 方式下会报
    `Cannot re-initialize CUDA in forked subprocess`。先把整个数据集 `.to(device)`、再照着教程加上
    `pin_memory=True, num_workers=4`，是很常见的组合。用 `torch.device("cuda" if ... else "cpu")` 的代码在
    CPU 机器上不会出错，到了 GPU 机器才报错。

    **示例**
    ```python
    X, y = X.to(device), y.to(device)
    loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True, pin_memory=True)
    ```

    **改正**：数据集留在 CPU 上，在训练循环里按 batch 移动：
    `loader = DataLoader(TensorDataset(X_cpu, y_cpu), batch_size=64, pin_memory=True, num_workers=4)`，
    循环里 `x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)`；数据很小、想整体放在 GPU
    上时，去掉 `pin_memory=True` 并使用 `num_workers=0`。

    **自动修复**：安全：去掉 `pin_memory=True`（锁页内存只影响拷贝速度，不影响数据）；`num_workers` 是字面整数、
    且没有只在多进程下才有效的选项（`persistent_workers`、`prefetch_factor` 等）时，把它改成 `0`
    （batch 的内容和顺序不变）。
    """

    code = "TL208"
    raises = True
    requires_text = ("cuda", "mps")
    name = "dataloader-over-gpu-tensors"
    severity = Severity.ERROR
    kb_entry = "torch.utils.data.DataLoader"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        call = ctx.call(node)
        if call.qualname != "torch.utils.data.DataLoader":
            return
        dataset = call.arg(0, "dataset")
        if not isinstance(dataset, InstanceValue) or not dataset.qualname.endswith("TensorDataset"):
            return
        if dataset.origin is None or not isinstance(dataset.origin.node, ast.Call):
            return
        gpu_node, device = _gpu_tensor(dataset.origin.node, ctx)
        if gpu_node is None:
            return
        pin = next((k for k in node.keywords if k.arg == "pin_memory"), None)
        workers = next((k for k in node.keywords if k.arg == "num_workers"), None)
        pinned = pin is not None and _literal(ctx, pin.value) is True
        worker_count = _literal(ctx, workers.value) if workers is not None else None
        forked = isinstance(worker_count, int) and not isinstance(worker_count, bool) and worker_count > 0
        if not pinned and not forked:
            return
        problems = []
        if pinned:
            problems.append("`pin_memory=True` 只能锁定 CPU 张量")
        if forked:
            problems.append("worker 子进程读不了 GPU 张量")
        ctx.report(
            node,
            common.zh(
                f"`TensorDataset` 里的 `{ctx.text(gpu_node)}` 在",
                common.describe(device),
                "上，而 " + "，".join(problems) + "：取第一个 batch 时就会报错",
            ),
            fix=_fix(node, pin if pinned else None, workers if forked else None, ctx),
            related=(Related(ctx.span(gpu_node), "这个张量在 GPU 上"),),
        )


def _literal(ctx: Context, node: ast.expr) -> object:
    value = ctx.value(node)
    return value.value if isinstance(value, Literal) else None


def _gpu_tensor(dataset: ast.Call, ctx: Context) -> tuple[ast.expr | None, str | None]:
    for arg in dataset.args:
        if isinstance(arg, ast.Starred):
            continue
        device = common.device_of(arg, ctx)
        if common.accelerated(device):
            return arg, device
    return None, None


def _fix(node: ast.Call, pin: ast.keyword | None, workers: ast.keyword | None, ctx: Context) -> Fix | None:
    """Drop ``pin_memory=True`` and use ``num_workers=0``: both, or no fix (a fix must remove the finding)."""
    edits: list[Edit] = []
    titles = []
    if pin is not None:
        arguments = sorted([*node.args, *node.keywords], key=lambda n: (n.lineno, n.col_offset))
        index = next(i for i, a in enumerate(arguments) if a is pin)
        if index == 0:
            return None
        edits.append(Edit(Span(ctx.span(arguments[index - 1]).end, ctx.span(pin).end), ""))
        titles.append("去掉 `pin_memory=True`")
    if workers is not None:
        if any(k.arg in _WORKER_OPTIONS or k.arg is None for k in node.keywords):
            return None
        edits.append(ctx.replace(workers.value, "0"))
        titles.append("改用 `num_workers=0`")
    return Fix("，".join(titles), tuple(edits)) if edits else None
