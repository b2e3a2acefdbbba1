from __future__ import annotations

import ast

from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.device import common
from torchls.core.rules.loss.calls import loss_call
from torchls.core.values import InstanceValue, Literal


class CpuAndGpuTensorsMixed(Rule):
    """一个运算同时用到一定在 CPU 上的张量和在 GPU 上的张量。

    **为什么是问题**：PyTorch 不会自动跨设备搬数据，参与同一运算（加减乘除、比较、`matmul`、`torch.cat`、
    损失函数等）的张量必须在同一设备上，否则报 `Expected all tensors to be on the same device, but found at
    least two devices, cuda:0 and cpu!`。最常见的是训练循环里只把输入移到了 GPU，标签还在 CPU 上，
    或者新建张量时忘了写 `device=`。用 `torch.device("cuda" if torch.cuda.is_available() else "cpu")` 的代码
    在 CPU 机器上不会出错，到了 GPU 机器才报错。

    两边都必须能证明：CPU 一方是没有 `device=` 新建、`from_numpy` 得到、或来自 CPU 数据集的 DataLoader batch
    （包括 `enumerate(loader)`、`tqdm(loader)`）且之后没有移动过的张量；GPU 一方是移到或建在 GPU 上的张量，
    或者已移到 GPU 的模型（带参数、`forward` 里不自己搬设备）的输出。0 维的 CPU 张量（如 `torch.tensor(2.0)`）
    可以和 GPU 张量做逐元素运算，不报告。
    函数式损失（`F.cross_entropy`、`F.nll_loss`、`F.binary_cross_entropy(_with_logits)`）的 `weight=`、`pos_weight=`
    也必须和输入在同一设备上：按标签频率算出的类别权重常常还留在 CPU 上。

    **示例**
    ```python
    out = layer(x.to(device))
    loss = F.cross_entropy(out, y)     # y 还在 CPU 上
    ```

    **改正**：把 CPU 上的一方移过去：`F.cross_entropy(out, y.to(device))`，或新建时写
    `torch.zeros(n, device=out.device)`。

    **自动修复**：安全：另一方是一个变量时，给 CPU 上的张量加上 `.to(<变量>.device)`；否则在此处能访问到同一个
    设备变量时加 `.to(<设备变量>)`；都不满足时不提供修复。
    """

    code = "TL207"
    raises = True
    requires_text = ("cuda", "mps")
    name = "cpu-and-gpu-tensors-mixed"
    severity = Severity.ERROR
    kb_entry = "torch.Tensor.to"
    node_types = (ast.BinOp, ast.Compare, ast.Call)
    fixable = True

    def visit(self, node: ast.AST, ctx: Context) -> None:
        # (one operand, the other, whether a 0-dim CPU operand is allowed there)
        pairs = [(a, b, True) for a, b in common.operand_pairs(node, ctx)]
        if isinstance(node, ast.Call) and not pairs:
            pairs = _loss_pairs(node, ctx)
        for a, b, elementwise in pairs:
            for cpu_node, gpu_node in ((a, b), (b, a)):
                if not common.node_on_cpu(cpu_node, ctx):
                    continue
                device = common.device_of(gpu_node, ctx)
                if not common.accelerated(device):
                    continue
                if elementwise and not _has_dims(cpu_node, ctx):
                    continue  # a 0-dim CPU tensor may meet a GPU tensor
                gpu = ctx.tensor(gpu_node)
                ctx.report(
                    node,
                    common.zh(
                        f"`{common.short(ctx.text(cpu_node))}` 在 CPU 上，`{common.short(ctx.text(gpu_node))}` 却在",
                        common.describe(device),
                        "上：不同设备上的张量不能一起运算",
                    ),
                    fix=_fix(cpu_node, gpu_node, device, ctx),
                    related=common.cpu_origin(cpu_node, ctx) + ctx.related(gpu.origin if gpu is not None else None),
                )
                return


# Functional losses whose ``weight`` (third, or by keyword) and ``pos_weight`` must be on the input's device.
_WEIGHTED_LOSSES = frozenset({"CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss"})


def _loss_pairs(node: ast.Call, ctx: Context) -> list[tuple[ast.expr, ast.expr, bool]]:
    """A loss call's input with its target, and a functional loss's input with its class weights."""
    loss = loss_call(node, ctx)
    if loss is None or loss.input_node is None:
        return []
    pairs = [(loss.input_node, loss.target_node, False)] if loss.target_node is not None else []
    if loss.functional and loss.kind in _WEIGHTED_LOSSES and not loss.call.starred:
        for weight in (loss.call.arg_node(2, "weight"), loss.call.arg_node(len(node.args), "pos_weight")):
            if weight is not None:
                # class weights of a classification loss are 1-D; BCE's broadcast, and a 0-dim one may stay put
                pairs.append((loss.input_node, weight, loss.kind in ("BCELoss", "BCEWithLogitsLoss")))
    return pairs


def _has_dims(node: ast.expr, ctx: Context) -> bool:
    """True when the tensor provably has at least one dim."""
    tensor = ctx.tensor(node)
    if tensor is not None:
        if tensor.shape is not None:
            return len(tensor.shape) > 0
        if tensor.tail:
            return True
    loader = None
    if tensor is not None and tensor.origin is not None and "DataLoader" in tensor.origin.what:
        loader = ctx.value(tensor.origin.node)
    # The default collate stacks samples into a batch: one more dim, unless batching is switched off.
    return isinstance(loader, InstanceValue) and loader.arg("batch_size") != Literal(None)


def _fix(cpu_node: ast.expr, gpu_node: ast.expr, device: str | None, ctx: Context) -> Fix | None:
    if isinstance(gpu_node, ast.Name):
        target = f"{gpu_node.id}.device"
    else:
        names = common.device_variables(frozenset({device}) if device else frozenset(), cpu_node, ctx)
        if not names:
            return None
        target = names[0]
    suffix = f".to({target})"
    text = ctx.text(cpu_node)
    if common.postfix_ready(cpu_node):
        edits = (ctx.insert_after(cpu_node, suffix),)
        shown = text + suffix
    else:
        edits = (ctx.replace(cpu_node, f"({text}){suffix}"),)
        shown = f"({text}){suffix}"
    return Fix(f"把 CPU 上的张量移过去：`{common.short(shown)}`", edits)
