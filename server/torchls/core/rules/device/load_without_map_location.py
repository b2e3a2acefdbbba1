from __future__ import annotations

import ast

from torchls.core import control_flow
from torchls.core.findings import Fix, Related, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.device import common
from torchls.core.values import ACCELERATOR, DeviceValue, ModuleValue, TensorValue

_LOADERS = frozenset({"torch.load", "torch.jit.load"})


class LoadWithoutMapLocation(Rule):
    """`torch.load` 没有写 `map_location`，而这个文件会把模型或张量放到 GPU 上。

    **为什么是问题**：`torch.load` 默认把每个张量放回**保存时**所在的设备。同一份代码在 GPU 上训练、保存的
    checkpoint 里都是 cuda 张量；在没有 GPU 的机器上加载会报
    `Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False`，
    多卡训练的进程还会都把 checkpoint 加载到 0 号卡上，白白多占显存。本规则只在同一文件里能看到模型或张量被移到
    GPU（`.cuda()`、`.to(device)`、`device="cuda"`、`torch.device("cuda" if ... else "cpu")`）时报告。
    用 `io.BytesIO` 或同一函数里刚 `torch.save` 的文件原地读回时，不会跨机器，不报告。

    **示例**
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    ...
    model.load_state_dict(torch.load("best.pt"))
    ```

    **改正**：`model.load_state_dict(torch.load("best.pt", map_location="cpu"))`（`load_state_dict` 会把数值
    拷进模型已在的设备），或者 `torch.load(path, map_location=device)`。

    **自动修复**：安全：结果直接交给 `load_state_dict` 时加 `map_location="cpu"`（参数会被拷到模型所在的设备，
    结果不变）；否则在此处能访问到 `torch.device("cuda" if ... else "cpu")` 这样的设备变量时加
    `map_location=<该变量>`；都不满足时不提供修复。
    """

    code = "TL205"
    raises = True
    requires_text = ("cuda", "mps")
    name = "load-without-map-location"
    severity = Severity.WARNING
    kb_entry = "torch.load"
    node_types = (ast.Call,)
    fixable = True

    def __init__(self) -> None:
        self._evidence: ast.Call | None = None  # the first call that puts something on an accelerator
        self._loads: list[tuple[ast.Call, Fix | None]] = []  # loads without map_location, with their fix

    def visit(self, node: ast.Call, ctx: Context) -> None:
        if self._evidence is None and _uses_accelerator(node, ctx):
            self._evidence = node
        call = ctx.call(node)
        if call.qualname not in _LOADERS or not node.args or isinstance(node.args[0], ast.Starred):
            return
        if len(node.args) > 1 or any(k.arg in ("map_location", None) for k in node.keywords):
            return
        if _reads_back_in_place(node, ctx):
            return
        self._loads.append((node, _fix(node, ctx)))

    def finish(self, ctx: Context) -> None:
        evidence = self._evidence
        if evidence is None:
            return
        for node, fix in self._loads:
            name = ctx.text(node.func)
            ctx.report(
                node,
                f"`{name}` 没有指定 `map_location`，而这个文件会把模型或张量放到 GPU 上："
                "GPU 上保存的 checkpoint 在没有 GPU 的机器上加载会失败",
                fix=fix,
                related=(Related(ctx.span(evidence), "这里把模型或张量放到了 GPU 上"),),
            )


def _uses_accelerator(node: ast.Call, ctx: Context) -> bool:
    """True when this call puts a model or a tensor on a GPU (or makes a device that may be one)."""
    value = ctx.value(node)
    if isinstance(value, TensorValue | ModuleValue | DeviceValue):
        kind = value.kind if isinstance(value, DeviceValue) else value.device
        if common.accelerated(kind):
            return True
    func = node.func
    if isinstance(func, ast.Attribute) and ctx.qualify(func) is None:
        if func.attr == "cuda":
            return True
        if func.attr == "to":
            call = ctx.call(node)
            is_move, device, _named = common.move_device(call, ctx)
            return is_move and common.accelerated(device)
    return False


def _reads_back_in_place(node: ast.Call, ctx: Context) -> bool:
    """``torch.load(buffer)`` of an ``io.BytesIO``, or of a file the same function has just saved."""
    source = node.args[0]
    value_text = ctx.text(source)
    scope = control_flow.enclosing_function(node, ctx.parents()) or ctx.tree
    for inner in control_flow.walk_pruned(scope):
        if not isinstance(inner, ast.Call):
            continue
        qualname = ctx.qualify(inner.func)
        if (
            qualname in ("torch.save", "torch.jit.save")
            and len(inner.args) >= 2
            and ctx.text(inner.args[1]) == value_text
            and inner.lineno <= node.lineno
        ):
            return True  # saved earlier in the same run: read back on the same machine
        if qualname in ("io.BytesIO", "io.BufferedReader", "tempfile.TemporaryFile", "tempfile.NamedTemporaryFile"):
            parent = ctx.parents().get(inner)
            if isinstance(parent, ast.Assign) and any(ctx.text(t) == value_text for t in parent.targets):
                return True
            if (
                isinstance(parent, ast.withitem)
                and parent.optional_vars is not None
                and ctx.text(parent.optional_vars) == value_text
            ):
                return True
    return isinstance(source, ast.Call) and ctx.qualify(source.func) == "io.BytesIO"


def _fix(node: ast.Call, ctx: Context) -> Fix | None:
    arguments: list[ast.AST] = [*node.args, *(k.value for k in node.keywords)]
    last = max(arguments, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))
    if _feeds_load_state_dict(node, ctx):
        location = '"cpu"'
    else:
        names = common.device_variables(frozenset({ACCELERATOR}), node, ctx)
        if not names:
            return None
        location = names[0]
    return Fix(f"加上 `map_location={location}`", (ctx.insert_after(last, f", map_location={location}"),))


def _feeds_load_state_dict(node: ast.Call, ctx: Context) -> bool:
    """``x.load_state_dict(torch.load(...))`` or ``x.load_state_dict(torch.load(...)["model"])``."""
    table = ctx.parents()
    current: ast.AST = node
    parent = table.get(current)
    while isinstance(parent, ast.Subscript) and parent.value is current and isinstance(parent.slice, ast.Constant):
        current, parent = parent, table.get(parent)
    return (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr == "load_state_dict"
        and bool(parent.args)
        and parent.args[0] is current
    )
