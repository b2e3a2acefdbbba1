from __future__ import annotations

import ast
from dataclasses import dataclass

from torchls.core import control_flow, modes
from torchls.core.findings import Edit, Fix, Severity
from torchls.core.rules.base import Analysis, Context, Rule
from torchls.core.rules.loop import flow, modules
from torchls.core.statements import assigned_names
from torchls.core.text import Span
from torchls.core.values import Literal, ModuleValue, TensorValue

# Layers that behave the same in train and eval mode (a Sequential made only of these does not care).
_MODE_FREE = frozenset(
    """Linear Bilinear Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d ReLU ReLU6 LeakyReLU GELU
    SiLU ELU SELU Mish Softplus Hardswish Hardsigmoid Tanh Sigmoid Softmax LogSoftmax Identity LayerNorm GroupNorm
    RMSNorm Embedding Flatten Unflatten MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d
    AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveMaxPool2d PReLU Upsample PixelShuffle""".split()
)


class TrainModeNotRestored(Rule):
    """训练循环里验证时调用了 `model.eval()`，之后却从不调回 `model.train()`。

    **为什么是问题**：`eval()` 会一直生效，直到再次调用 `train()`。循环的第一轮在训练模式下训练，验证时
    切到评估模式后，从第二轮起的训练全都在评估模式下进行：Dropout 不再丢弃、BatchNorm 不再更新统计量，
    模型表现会莫名变差，而且不报错。只在同一个循环里先训练（调用模型、`backward()`、`step()`）再
    `model.eval()`（或者调用本文件里一定会 `model.eval()`、之后又不切回训练模式的函数，如
    `validate(model, loader)`），而循环里没有任何 `model.train(...)`、也没有把模型交给可能切回训练模式的
    函数时才报告；能证明模型没有 Dropout/BatchNorm 时不报告。

    **示例**
    ```python
    for epoch in range(10):
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            evaluate(val_loader)
    ```

    **改正**：在每轮训练开始时调用 `model.train()`（循环体的第一行）。

    **自动修复**：安全：模型是在同一个函数（或脚本）里创建的、循环之前没有切换过它的模式时，在循环体的
    第一行插入 `model.train()`；新建的模型本来就处于训练模式，所以第一轮不受影响，之后每轮都回到训练模式。
    """

    code = "TL412"
    requires_text = (".eval(",)
    name = "train-mode-not-restored"
    severity = Severity.WARNING
    kb_entry = "torch.nn.Module.train"
    node_types = (ast.For, ast.While, ast.AsyncFor)
    fixable = True

    def visit(self, node: ast.For | ast.While | ast.AsyncFor, ctx: Context) -> None:
        if not flow.file_mentions(ctx, "backward") or not flow.file_mentions(ctx, ".eval("):
            return
        inner = list(control_flow.walk_scope(node))
        backwards = [n for n in inner if isinstance(n, ast.Call) and _attr(n) in ("backward", "manual_backward")]
        steps = [n for n in inner if isinstance(n, ast.Call) and _attr(n) == "step"]
        if not backwards or not steps:
            return
        for call in sorted((n for n in inner if isinstance(n, ast.Call)), key=control_flow.position):
            model = _put_in_eval(call, ctx)
            if model is None:
                continue
            if flow.enclosing_loop(call, ctx) is not node and any(
                isinstance(a, flow.LOOPS) and flow.is_inside(a, node, ctx) and a is not node
                for a in control_flow.ancestors(call, ctx.parents())
            ):
                continue  # an eval() inside an inner loop: that loop's business
            if self._report(node, call, model, inner, backwards, ctx):
                return

    def _report(
        self,
        loop: ast.AST,
        eval_call: ast.Call,
        model: str,
        inner: list[ast.AST],
        backwards: list[ast.Call],
        ctx: Context,
    ) -> bool:
        calls = [n for n in inner if isinstance(n, ast.Call)]
        trained = any(
            isinstance(c.func, ast.Name)
            and c.func.id == model
            and any(
                control_flow.position(c) < control_flow.end_position(b) <= control_flow.position(eval_call)
                for b in backwards
            )
            for c in calls
        )
        if not trained:
            return False
        if any(isinstance(n, ast.Name) and n.id == model and isinstance(n.ctx, ast.Store) for n in inner):
            return False  # a fresh model every iteration (k-fold, restarts): it starts in training mode
        for c in calls:
            if _attr(c) == "train" and flow.root_name(c.func) == model:  # type: ignore[arg-type]
                return False
            if (
                any(_hands_over(a, model, ctx) for a in _arguments(c))
                and not _harmless(c, ctx)
                and _helper_effect(c, model, ctx) not in (False, modes.UNCHANGED)
            ):
                return False  # the model goes somewhere that may switch it back
            if _calls_train_elsewhere(c, ctx):
                return False
        if any(
            isinstance(n, ast.Break | ast.Return | ast.Raise)
            and control_flow.position(n) > control_flow.position(eval_call)
            for n in inner
        ):
            return False  # leaving the loop after evaluating: no more training follows
        held = next(a for a in [eval_call.func, *_arguments(eval_call)] if flow.root_name(a) == model)
        if _mode_free(ctx.value(held.value if held is eval_call.func else held)):  # type: ignore[attr-defined]
            return False
        if _attr(eval_call) == "eval":
            message = f"循环里调用了 `{model}.eval()` 却从不调回 `{model}.train()`：从第二轮起都在评估模式下训练"
        else:
            message = (
                f"循环里调用的 `{ctx.text(eval_call.func)}(...)` 会把 `{model}` 切到评估模式（其中调用了 `eval()`），"
                f"之后却从不调回 `{model}.train()`：从第二轮起都在评估模式下训练"
            )
        ctx.report(eval_call, message, fix=_fix(loop, model, ctx))
        return True


def _put_in_eval(call: ast.Call, ctx: Context) -> str | None:
    """The model the call surely leaves in eval mode: ``model.eval()``, or ``validate(model, ...)`` where the
    file's ``validate`` calls ``model.eval()`` and never switches it back."""
    func = call.func
    if _attr(call) == "eval" and not call.args and not call.keywords and isinstance(func.value, ast.Name):  # type: ignore[union-attr]
        return func.value.id  # type: ignore[union-attr]
    if not isinstance(func, ast.Name):
        return None
    given = [a.id for a in _arguments(call) if isinstance(a, ast.Name)]
    return next((m for m in given if _helper_effect(call, m, ctx) is False), None)


def _helper_effect(call: ast.Call, model: str, ctx: Context) -> bool | str | None:
    """What a call of the file's function does to the mode of ``model`` it is given (see :mod:`core.modes`)."""
    functions = ctx.analysis(TopLevelFunctions).by_name
    if not (isinstance(call.func, ast.Name) and call.func.id in functions):
        return None
    return modes.call_effect(call, model, functions)


@dataclass(frozen=True, slots=True)
class TopLevelFunctions(Analysis):
    """The file's module-level functions by name (a name defined once): the helpers a call by name reaches."""

    by_name: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]

    @classmethod
    def compute(cls, ctx: Context) -> TopLevelFunctions:
        found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        counts: dict[str, int] = {}
        for statement in ctx.tree.body:
            for name in assigned_names(statement):
                counts[name] = counts.get(name, 0) + 1
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                found[statement.name] = statement
        return cls({name: f for name, f in found.items() if counts.get(name) == 1})


def _attr(call: ast.Call) -> str | None:
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [a.value if isinstance(a, ast.Starred) else a for a in call.args] + [k.value for k in call.keywords]


def _hands_over(argument: ast.expr, model: str, ctx: Context) -> bool:
    """The argument is the model or may be a part of it (``model``, ``model.encoder``), not a flag or a tensor
    read from it (``model.training``, ``model.fc.weight``)."""
    if flow.root_name(argument) != model:
        return False
    if isinstance(argument, ast.Attribute) and argument.attr == "training":
        return False
    return not isinstance(ctx.value(argument), TensorValue | Literal)


def _harmless(call: ast.Call, ctx: Context) -> bool:
    if isinstance(call.func, ast.Name) and call.func.id in ("print", "len", "str", "repr", "isinstance"):
        return True
    qualname = ctx.qualify(call.func) or ""
    return qualname.startswith("torch.") and not qualname.startswith("torch.nn.parallel")


def _calls_train_elsewhere(call: ast.Call, ctx: Context) -> bool:
    """A call of a function or method of this file whose body calls some ``.train(...)``."""
    func = call.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return called is not None and called in ctx.analysis(TrainingFunctions).names


@dataclass(frozen=True, slots=True)
class TrainingFunctions(Analysis):
    """Names of the file's functions and methods whose body calls some ``.train(...)``."""

    names: frozenset[str]

    @classmethod
    def compute(cls, ctx: Context) -> TrainingFunctions:
        return cls(
            frozenset(
                function.name
                for function in ctx.analysis(flow.FileFunctions).definitions
                if any(isinstance(n, ast.Attribute) and n.attr == "train" for n in ast.walk(function))
            )
        )


def _mode_free(value: object) -> bool:
    """The model provably has no layer that behaves differently in train and eval mode."""
    if not isinstance(value, ModuleValue) or value.user_class is not None:
        return False
    name = modules.short(value)
    if name == "Sequential":
        return bool(value.children) and all(_mode_free(child) for child in value.children)
    return value.qualname.startswith("torch.nn.") and name in _MODE_FREE


def _fix(loop: ast.AST, model: str, ctx: Context) -> Fix | None:
    """Insert ``model.train()`` as the first statement of the loop body, when the model is built in this scope
    (so it starts in training mode) and nothing else in the scope switches its mode or takes it."""
    scope = flow.scope_of(loop, ctx)
    stores = flow.bindings(scope, model, ctx)
    if not stores or flow.is_parameter(scope, model):
        return None
    for store in stores:
        value = flow.simple_assignment(store, ctx)
        if (
            value is None
            or not isinstance(ctx.value(value), ModuleValue)
            or control_flow.position(store) > control_flow.position(loop)
        ):
            return None
    for node in control_flow.scope_nodes(scope):
        if flow.is_inside(node, loop, ctx):
            continue
        if isinstance(node, ast.Attribute) and flow.root_name(node) == model and node.attr in ("eval", "train"):
            return None
        if (
            isinstance(node, ast.Call)
            and any(_hands_over(a, model, ctx) for a in _arguments(node))
            and not _harmless(node, ctx)
        ):
            return None
    body = loop.body  # type: ignore[attr-defined]
    first = body[0]
    if first.lineno == loop.lineno:  # type: ignore[attr-defined]
        return None  # for ...: stmt on one line
    line = ctx.source.line(first.lineno - 1)
    start = ctx.source.position_from_ast(first.lineno, first.col_offset)
    indent = line[: start.column]
    if indent.strip():
        return None
    return Fix(f"在循环开头加上 `{model}.train()`", (Edit(Span(start, start), f"{model}.train()\n{indent}"),))
