from __future__ import annotations

import ast

from torchls.core import control_flow
from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.device import common
from torchls.core.values import ACCELERATOR, DeviceValue

# Names whose presence anywhere in the file means the code decides about the GPU at run time.
_CHECKS = frozenset({"is_available", "device_count", "current_accelerator", "is_cuda"})
# Words that name a device choice made elsewhere (a parameter, a command-line flag, a config field).
_DEVICE_WORDS = ("device", "gpu", "cuda", "accelerator", "local_rank", "rank")
# torch calls whose `device=` argument does not fail without a GPU (they warn and fall back).
_CONFIG_NAMES = frozenset(
    "args opt opts options cfg conf config configs hparams hp params flags settings parser namespace".split()
)
_TOLERANT = ("autocast", "GradScaler", ".amp.")
_METHODS_WITH_DEVICE = frozenset({"to", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"})


class HardcodedCudaWithoutCheck(Rule):
    """脚本里写死了 `.cuda()` 或 `"cuda"` 设备，整个文件却从不检查 GPU 是否可用。

    **为什么是问题**：写死 `cuda` 的脚本只能在有 NVIDIA GPU 且装了 CUDA 版 PyTorch 的机器上运行；在笔记本、
    CPU 服务器或 Apple 芯片上会直接报 `Torch not compiled with CUDA enabled` 或
    `Found no NVIDIA driver on your system`。同一份代码给同事复现、放到 CI 里跑测试时最常见的就是这个错误。
    本规则只检查会作为脚本直接运行的代码（模块顶层、`if __name__ == "__main__":` 以及从那里调用的函数），
    并且只在整个文件里既没有 `torch.cuda.is_available()` 之类的检查，也没有设备参数（函数参数、命令行选项、
    `args.device` 这类配置）时报告：库函数通常由调用者决定设备，不在检查范围内。写在
    `if ...cuda...:` 分支或 `try` 里的 `.cuda()` 也不报告。

    **示例**
    ```python
    model = Net().cuda()
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
    ```

    **改正**：在开头选一次设备，之后统一用它：
    `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`，
    `model = Net().to(device)`，`x, y = x.to(device), y.to(device)`。

    **自动修复**：无：需要先在合适的位置定义设备变量，再改所有用到 GPU 的地方，改动范围要由作者决定。
    """

    code = "TL206"
    raises = True
    requires_text = ("cuda",)
    name = "hardcoded-cuda-without-check"
    severity = Severity.INFO
    kb_entry = "torch.cuda.is_available"
    node_types = (ast.Call, ast.Assign)

    def __init__(self) -> None:
        self._sites: dict[ast.AST, str] = {}  # each place that names a GPU, and what it names

    def visit(self, node: ast.Call | ast.Assign, ctx: Context) -> None:
        site = _site(node, ctx) if isinstance(node, ast.Call) else _assigned_site(node, ctx)
        if site is not None:
            self._sites.setdefault(site[0], site[1])

    def finish(self, ctx: Context) -> None:
        sites = self._sites
        if not sites or _decides_at_run_time(ctx):
            return
        reachable = _script_functions(ctx)
        for node, what in sites.items():
            if not _runs_as_script(node, reachable, ctx) or _guarded(node, ctx):
                continue
            ctx.report(
                node,
                common.zh("这里写死了", what, "，而整个文件都没有检查 GPU 是否可用：在没有 GPU 的机器上运行会直接报错"),
            )


def _is_cuda_literal(node: ast.expr | None) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == "cuda" or node.value.startswith("cuda:"))
    )


def _site(node: ast.Call, ctx: Context) -> tuple[ast.AST, str] | None:
    """The place that hard-codes the GPU in this call, and how the message names it."""
    func = node.func
    qualname = ctx.qualify(func)
    if qualname == "torch.device":
        first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "type"), None)
        if _is_cuda_literal(first) and _used_as_device(node, ctx):
            return node, f"`{ctx.text(node)}`"
        return None
    if qualname == "torch.set_default_device" and node.args and _is_cuda_literal(node.args[0]):
        return node, f"`{ctx.text(node)}`"
    if isinstance(func, ast.Attribute) and qualname is None:
        if func.attr == "cuda" and not _is_torch_module(func.value, ctx):
            return node, "`.cuda()`"
        if func.attr in _METHODS_WITH_DEVICE:
            candidates = [*node.args[:1]] if func.attr == "to" else []
            candidates += [k.value for k in node.keywords if k.arg == "device"]
            for candidate in candidates:
                if _is_cuda_literal(candidate):
                    return candidate, f"设备 `{ctx.text(candidate)}`"
        return None
    if qualname and qualname.startswith("torch.") and not any(word in qualname for word in _TOLERANT):
        for keyword in node.keywords:
            if keyword.arg == "device" and _is_cuda_literal(keyword.value):
                return keyword.value, f"设备 `{ctx.text(keyword.value)}`"
    return None


def _device_name(target: ast.expr) -> bool:
    name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""
    lowered = name.lower()
    return ("device" in lowered or lowered in ("dev", "gpu")) and "type" not in lowered and "amp" not in lowered


def _used_as_device(node: ast.Call, ctx: Context) -> bool:
    """A ``torch.device("cuda")`` that places something: stored in a device variable, or passed as the device of
    a move or a factory. Building one to print or compare touches no GPU."""
    parent = ctx.parents().get(node)
    if isinstance(parent, ast.Assign):
        return len(parent.targets) == 1 and _device_name(parent.targets[0])
    if isinstance(parent, ast.keyword):
        return parent.arg == "device"
    return (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr in ("to", "cuda")
        and node in parent.args
    )


def _assigned_site(node: ast.Assign, ctx: Context) -> tuple[ast.AST, str] | None:
    """``device = "cuda"``: a device variable that holds a hard-coded GPU."""
    if not _is_cuda_literal(node.value) or len(node.targets) != 1:
        return None
    if not _device_name(node.targets[0]):
        return None  # `device_type = "cuda"` is for autocast, which works without a GPU
    return node.value, f"设备 `{ctx.text(node.value)}`"


def _is_torch_module(node: ast.expr, ctx: Context) -> bool:
    qualname = ctx.qualify(node)
    return bool(qualname) and (qualname == "torch" or qualname.startswith("torch."))


def _decides_at_run_time(ctx: Context) -> bool:
    """True when the file checks for a GPU, or takes the device from somewhere (a parameter, a flag, a config)."""
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Name) and node.id in _CHECKS:
            return True
        if isinstance(node, ast.Attribute):
            if node.attr in _CHECKS:
                return True
            if _names_choice(node.attr) and _is_config(node.value):
                return True  # args.device, cfg.gpu_ids, self.opt.cuda
        elif isinstance(node, ast.arg) and _names_choice(node.arg):
            return True  # def train(model, device): the caller decides
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.lower()
            if text in ("nccl", "local_rank", "cuda_visible_devices") or (
                text.startswith("--") and _names_choice(text)
            ):
                return True
        elif isinstance(node, ast.Call):
            value = ctx.value(node)
            if isinstance(value, DeviceValue) and value.kind == ACCELERATOR:
                return True  # torch.device("cuda" if ... else "cpu")
    return False


def _is_config(node: ast.expr) -> bool:
    """``args``, ``opt``, ``cfg``, ``self.config``: where scripts keep their command-line options and settings."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    lowered = name.lower()
    return lowered in _CONFIG_NAMES or lowered.endswith(("args", "config", "cfg", "opt", "opts", "options"))


def _names_choice(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _DEVICE_WORDS)


def _script_functions(ctx: Context) -> set[ast.AST]:
    """Module-level functions that run when the file runs as a script: called from top-level code, transitively."""
    functions = {s.name: s for s in ctx.tree.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    reachable: set[ast.AST] = set()
    pending: list[ast.AST] = [
        s for s in ctx.tree.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    while pending:
        scope = pending.pop()
        for node in [scope, *control_flow.walk_pruned(scope)]:
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                function = functions.get(node.func.id)
                if function is not None and function not in reachable:
                    reachable.add(function)
                    pending.extend(function.body)
    return reachable


def _runs_as_script(node: ast.AST, reachable: set[ast.AST], ctx: Context) -> bool:
    outermost = None
    for parent in control_flow.ancestors(node, ctx.parents()):
        if isinstance(parent, ast.ClassDef | ast.Lambda):
            return False
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
            outermost = parent
    return outermost is None or outermost in reachable


def _guarded(node: ast.AST, ctx: Context) -> bool:
    """True inside a branch that tests for a GPU (``if use_cuda:``, ``if x.is_cuda:``) or inside a ``try``."""
    child: ast.AST = node
    for parent in control_flow.ancestors(node, ctx.parents()):
        if (
            isinstance(parent, ast.If | ast.IfExp | ast.While)
            and child is not parent.test
            and _mentions_device(parent.test)
        ):
            return True
        if isinstance(parent, ast.Try) and parent.handlers and child in parent.body:
            return True
        child = parent
    return False


def _mentions_device(test: ast.expr) -> bool:
    for node in ast.walk(test):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        if name and (_names_choice(name) or name in _CHECKS):
            return True
    return False
