from __future__ import annotations

import ast

from torchls.core import control_flow
from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow, modules

# Functional dropouts whose ``training`` argument (third) defaults to True.
_DROPOUTS = frozenset("torch.nn.functional." + name for name in ("dropout", "dropout1d", "dropout2d", "dropout3d"))


class FunctionalDropoutAlwaysOn(Rule):
    """模型的 `forward` 里调用 `F.dropout(x, p)` 却没有传 `training=self.training`。

    **为什么是问题**：函数式 `F.dropout` 的 `training` 参数默认是 `True`，它不知道模型处于哪种模式：
    `model.eval()` 之后它仍在随机丢弃激活，验证/推理结果每次都不一样、指标偏低。`nn.Dropout` 模块会自动
    跟随 `train()`/`eval()`，函数式写法必须自己传。只在 `nn.Module` 子类的 `forward`（或 `forward` 调用的
    本类方法）里、丢弃概率不为 0、也不在 `if self.training:` 分支里时才报告。

    **示例**
    ```python
    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.dropout(x, p=0.5)
        return self.fc2(x)
    ```

    **改正**：`x = F.dropout(x, p=0.5, training=self.training)`，或在 `__init__` 里用 `nn.Dropout(0.5)`。

    **自动修复**：安全：在参数末尾加上 `training=self.training`；训练模式下行为不变，评估模式下不再丢弃。
    """

    code = "TL410"
    requires_text = ("dropout",)
    name = "functional-dropout-always-on"
    severity = Severity.WARNING
    kb_entry = "torch.nn.functional.dropout"
    node_types = (ast.Call,)
    fixable = True

    def visit(self, node: ast.Call, ctx: Context) -> None:
        if not flow.file_mentions(ctx, "dropout") or ctx.qualify(node.func) not in _DROPOUTS:
            return
        if any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) > 2:
            return
        if any(k.arg in ("training", None) for k in node.keywords):
            return
        given, p = modules.literal_argument(node, 1, "p")
        if given and isinstance(p, int | float) and p <= 0:
            return  # p=0 drops nothing in either mode
        method = control_flow.scope_function(node, ctx.parents())
        me = _model_method(method, ctx)
        if method is None or me is None or _guarded_by_training(node, method, me, ctx):
            return
        last = (node.args + [k.value for k in node.keywords])[-1] if node.args or node.keywords else None
        fix = None
        if last is not None:
            fix = Fix(f"传入 `training={me}.training`", (ctx.insert_after(last, f", training={me}.training"),))
        short = ctx.text(node.func)
        message = f"`{short}` 没有传 `training={me}.training`：`model.eval()` 之后它仍在随机丢弃"
        ctx.report(node, message, fix=fix)


def _model_method(method: ast.FunctionDef | ast.AsyncFunctionDef | None, ctx: Context) -> str | None:
    """The name of ``self`` when ``method`` is ``forward`` of an nn.Module subclass (or a method it calls)."""
    if method is None:
        return None
    klass = flow.parent(method, ctx)
    if not isinstance(klass, ast.ClassDef):
        return None
    info = modules.classes(ctx).get(klass.name)
    if info is None or info.node is not klass or not modules.is_module_class(info, ctx):
        return None
    if any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in method.decorator_list):
        return None
    arguments = [*method.args.posonlyargs, *method.args.args]
    if not arguments:
        return None
    me = arguments[0].arg
    return me if method.name in _reachable_from_forward(klass) else None


def _reachable_from_forward(klass: ast.ClassDef) -> set[str]:
    methods = {m.name: m for m in klass.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)}
    reached: set[str] = set()
    stack = ["forward"]
    while stack:
        name = stack.pop()
        if name in reached or name not in methods:
            continue
        reached.add(name)
        for node in ast.walk(methods[name]):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in methods:
                stack.append(node.attr)
    return reached


def _mentions_training(node: ast.AST, me: str) -> bool:
    return any(
        isinstance(n, ast.Attribute) and n.attr == "training" and isinstance(n.value, ast.Name) and n.value.id == me
        for n in ast.walk(node)
    )


def _guarded_by_training(node: ast.Call, method: ast.AST, me: str, ctx: Context) -> bool:
    """Inside ``if self.training:`` (or an ``... if self.training else ...``), or after an early
    ``if not self.training: return``."""
    for ancestor in control_flow.ancestors(node, ctx.parents()):
        if ancestor is method:
            break
        if isinstance(ancestor, ast.If | ast.IfExp | ast.While) and _mentions_training(ancestor.test, me):
            return True
    for inner in ast.walk(method):
        if (
            isinstance(inner, ast.If)
            and _mentions_training(inner.test, me)
            and control_flow.position(inner) < control_flow.position(node)
            and any(isinstance(n, ast.Return | ast.Raise) for s in inner.body for n in ast.walk(s))
        ):
            return True
    return False
