from __future__ import annotations

import ast

from torchls.core import control_flow
from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow, optimizers
from torchls.core.statements import assigned_names
from torchls.core.values import ModuleValue


class ZeroGradWrongOptimizer(Rule):
    """循环里有多个优化器，清零的却总是别的优化器（或别的模型）：这个优化器的梯度从未被清零。

    **为什么是问题**：GAN、师生蒸馏这类循环里有两个以上的优化器，每个都要在自己的 `backward()` 之前清零。
    复制粘贴时很容易把 `opt_g.zero_grad()` 写成第二个 `opt_d.zero_grad()`，或者清零了另一个模型
    （`netD.zero_grad()`）：循环里确实有 `zero_grad()`，可 `opt_g` 管的参数从来没被清零，它们的梯度在各次
    迭代之间不断累加，`opt_g.step()` 的更新越来越大、方向越来越旧，训练发散或停滞，且不报错。只在循环里的每个
    `zero_grad()` 都能证明清的是别的参数（另一个优化器或模型由不同的构造调用建出、互不包含），这个优化器由
    `model.parameters()` 之类的调用建出，循环里也没有别的清零方式（`p.grad = None`、会清零的辅助函数）时才报告。
    循环里完全没有 `zero_grad()` 的情形由 TL401 报告。

    **示例**
    ```python
    for real in loader:
        opt_d.zero_grad()
        d_loss(real).backward()
        opt_d.step()
        opt_d.zero_grad()  # 本该是 opt_g
        g_loss().backward()
        opt_g.step()
    ```

    **改正**：在生成器的 `backward()` 之前清零它自己的优化器：
    ```python
    opt_g.zero_grad()
    g_loss().backward()
    opt_g.step()
    ```

    **自动修复**：不提供：哪一次清零写错了要由作者判断。
    """

    code = "TL416"
    requires_text = ("zero_grad",)
    name = "zero-grad-wrong-optimizer"
    severity = Severity.ERROR
    kb_entry = "torch.optim.Optimizer.zero_grad"
    node_types = (ast.For, ast.AsyncFor, ast.While)

    def visit(self, node: ast.For | ast.AsyncFor | ast.While, ctx: Context) -> None:
        if not flow.file_mentions(ctx, "backward"):
            return
        calls = [n for n in optimizers.loop_body_nodes(node) if isinstance(n, ast.Call)]
        if not any(isinstance(c.func, ast.Attribute) and c.func.attr == "backward" for c in calls):
            return
        own_zeroes = [c for c in calls if optimizers.zeroed(c) is not None]
        if not own_zeroes:
            return  # no zero_grad at all: TL401's case
        region = _outermost_loop(node, ctx)
        region_nodes = list(optimizers.loop_body_nodes(region))
        region_calls = [n for n in region_nodes if isinstance(n, ast.Call)]
        if _clears_otherwise(region_nodes, region_calls, ctx):
            return
        zeroes = [c for c in region_calls if _zero_grad_call(c)]
        if any(optimizers.zeroed(c) is None for c in zeroes):
            return  # `models[i].zero_grad()`: not known what it clears
        rebound = assigned_names(node)
        reported: set[str] = set()
        for call in calls:
            if flow.enclosing_loop(call, ctx) is not node:
                continue
            target = optimizers.stepped(call, ctx)
            if target is None or target[1]:
                continue
            optimizer = target[0]
            text = ctx.text(optimizer)
            if text in reported or flow.root_name(optimizer) in rebound:
                continue
            built = optimizers.construction(optimizer, ctx)
            sources = optimizers.parameter_sources(built, ctx) if built is not None else None
            if not sources:
                continue
            if not all(_clears_none_of(c, text, sources, ctx) for c in zeroes):
                continue
            held = {text, *(ctx.text(s) for s in sources)}
            if _handed_away(region_calls, held, ctx):
                continue
            others = sorted({ctx.text(optimizers.zeroed(c)) for c in own_zeroes})  # type: ignore[arg-type]
            listed = "、".join(f"`{o}`" for o in others)
            message = (
                f"这个循环只清零了 {listed}，`{text}` 管的参数从未清零：它们的梯度在各次迭代之间累加，"
                f"`{text}.step()` 用的是累加后的梯度"
            )
            ctx.report(call, message)
            reported.add(text)


def _outermost_loop(loop: ast.AST, ctx: Context) -> ast.For | ast.AsyncFor | ast.While:
    """The outermost loop of the same scope around ``loop`` (``loop`` itself when none)."""
    outer = loop
    for ancestor in control_flow.ancestors(loop, ctx.parents()):
        if isinstance(ancestor, control_flow.SCOPES):
            break
        if isinstance(ancestor, flow.LOOPS):
            outer = ancestor
    return outer  # type: ignore[return-value]


def _zero_grad_call(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "zero_grad"


def _clears_otherwise(nodes: list[ast.AST], calls: list[ast.Call], ctx: Context) -> bool:
    """Gradients cleared some other way: ``p.grad = None``, ``p.grad.zero_()``, ``del p.grad``, or a function of
    this file that clears gradients."""
    for node in nodes:
        if isinstance(node, ast.Attribute) and node.attr == "grad" and isinstance(node.ctx, ast.Store | ast.Del):
            return True
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("zero_", "detach_", "fill_")
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "grad"
        ):
            return True
    _, zeroing = optimizers.stepping_and_zeroing_functions(ctx)
    for call in calls:
        if _zero_grad_call(call):
            continue
        if optimizers.called_name(call) in zeroing:
            return True
    return False


def _clears_none_of(call: ast.Call, optimizer: str, sources: list[ast.expr], ctx: Context) -> bool:
    """``x.zero_grad()`` provably clears none of the parameters the optimizer was built from."""
    receiver = optimizers.zeroed(call)
    if receiver is None or ctx.text(receiver) == optimizer:
        return False
    value = ctx.value(receiver)
    if optimizers.is_optimizer(value):
        built = optimizers.construction(receiver, ctx)
        cleared = optimizers.parameter_sources(built, ctx) if built is not None else None
        if not cleared:
            return False
        return all(optimizers.distinct_modules(a, b, ctx) for a in sources for b in cleared)
    if isinstance(value, ModuleValue):
        return all(optimizers.distinct_modules(a, receiver, ctx) for a in sources)
    return False


_BUILTINS = frozenset({"print", "len", "str", "repr", "isinstance", "type", "id", "getattr", "hasattr", "format"})


def _handed_away(calls: list[ast.Call], held: set[str], ctx: Context) -> bool:
    """The optimizer or one of its models (or a part of one) goes to a function that may clear gradients: one
    whose body is not in this file (those that clear them are already ruled out). Torch functions, builtins and
    scaler calls are fine."""
    defined = ctx.analysis(flow.FileFunctions).names | _BUILTINS
    for call in calls:
        if _zero_grad_call(call) or optimizers.is_scaler_call(call, ctx):
            continue
        if optimizers.stepped(call, ctx) is not None:
            continue
        if (ctx.qualify(call.func) or "").startswith("torch."):
            continue
        arguments = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
        arguments += [k.value for k in call.keywords]
        texts = [ctx.text(a) for a in arguments if optimizers.chain(a)]
        if not any(optimizers.within(a, h) or optimizers.within(h, a) for a in texts for h in held):
            continue
        if optimizers.called_name(call) not in defined:
            return True
    return False
