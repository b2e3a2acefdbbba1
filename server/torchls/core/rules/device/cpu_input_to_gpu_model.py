from __future__ import annotations

import ast

from torchls.core.findings import Fix, Related, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.device import common
from torchls.core.values import ModuleValue


class CpuInputToGpuModel(Rule):
    """模型已经移到 GPU，调用时传入的张量却一直留在 CPU 上。

    **为什么是问题**：`model.to(device)` / `model.cuda()` 只移动模型的参数和缓冲区，不会移动之后传进来的输入。
    输入还在 CPU 上时，前向传播一碰到参数就报 `Expected all tensors to be on the same device` 或
    `Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same`。
    用 `torch.device("cuda" if torch.cuda.is_available() else "cpu")` 的代码在没有 GPU 的机器上能跑通，
    一换到有 GPU 的机器就出错，所以这个问题常常到上线或换机器时才暴露。本规则只在能证明输入从未离开 CPU
    时报告：没有 `device=` 创建的张量、`from_numpy` 的结果、从 CPU 数据集取出的 batch（包括
    `enumerate(loader)`、`tqdm(loader)`），且之后没有被移动过。
    模型自己在 `forward` 里处理设备（出现 `.to(`、`device` 等）时不报告；`nn.DataParallel` 会自动分发输入，也不报告。

    **示例**
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(4, 2).to(device)
    x = torch.randn(8, 4)
    out = model(x)          # x 还在 CPU 上
    ```

    **改正**：把输入移到模型所在的设备：`out = model(x.to(device))`；DataLoader 的循环里写
    `x, y = x.to(device), y.to(device)`。

    **自动修复**：安全：输入是一个简单表达式、且移动模型所用的设备在这里能访问到（`.cuda()`、设备字符串，或在此之前
    无条件赋值的设备变量）时，在输入后面加上同样的 `.to(device)` / `.cuda()`；其他情况不提供修复。
    """

    code = "TL202"
    raises = True
    requires_text = ("cuda", "mps")
    name = "cpu-input-to-gpu-model"
    severity = Severity.ERROR
    kb_entry = "torch.nn.Module.to"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        call = ctx.call(node)
        module = call.module
        if module is None:
            return
        device, move = common.module_device(module, node, ctx)
        if not common.accelerated(device) or not common.has_parameters(module, ctx):
            return
        if module.user_class is not None and common.handles_devices(module.user_class, ctx):
            return
        input_node = _input_node(module, call.node, ctx)
        if input_node is None or not common.node_on_cpu(input_node, ctx):
            return
        if _forward_parameter(input_node, ctx):
            return  # a model's forward evaluated for one call: that call is where the CPU input is reported
        related: tuple[Related, ...] = ()
        if move is not None:
            related += (Related(ctx.span(move), common.zh("模型在这里移到了", common.describe(device))),)
        related += common.cpu_origin(input_node, ctx)
        model = common.short(ctx.text(node.func))
        ctx.report(
            node,
            common.zh(
                f"`{model}` 在",
                common.describe(device),
                f"上，输入 `{common.short(ctx.text(input_node))}` 却一直在 CPU 上：前向传播会报设备不一致",
            ),
            fix=_fix(input_node, move, ctx),
            related=related,
        )


def _forward_parameter(node: ast.expr, ctx: Context) -> bool:
    """``node`` is a parameter of the ``forward`` being evaluated for a call's arguments."""
    function = ctx.function
    if ctx.call_site is None or function is None or function.name != "forward" or not isinstance(node, ast.Name):
        return False
    return node.id in {a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]}


def _input_node(module: ModuleValue, node: ast.Call, ctx: Context) -> ast.expr | None:
    """The model's main input: the first positional argument, or the keyword of ``forward``'s first parameter."""
    if node.args:
        first = node.args[0]
        return None if isinstance(first, ast.Starred) else first
    name = "input"
    if module.user_class is not None:
        for klass in common.class_chain(module.user_class, ctx):
            forward = next((s for s in klass.node.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
            if forward is not None:
                params = [a.arg for a in [*forward.args.posonlyargs, *forward.args.args]][1:]
                if not params:
                    return None
                name = params[0]
                break
    return next((k.value for k in node.keywords if k.arg == name), None)


def _fix(input_node: ast.expr, move: ast.AST | None, ctx: Context) -> Fix | None:
    """Move the input the way the model was moved, when that way can be spelled here."""
    suffix = common.move_suffix(move, input_node, ctx) if common.postfix_ready(input_node) else None
    if suffix is None:
        return None
    return Fix(f"把输入移到模型所在的设备：`{ctx.text(input_node)}{suffix}`", (ctx.insert_after(input_node, suffix),))
