from __future__ import annotations

import ast
from dataclasses import dataclass

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
    循环调用的本文件函数（`d_step(G, D, opt_d)`）里对参数做的 `zero_grad()`、`step()`，按调用时传入的实参计入这个循环；
    本文件的类的实例上调用的方法（`trainer.g_step(n)`）里对 `self.opt_g` 之类做的也一样。
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
        region = _outermost_loop(node, ctx)
        region_nodes = list(optimizers.loop_body_nodes(region))
        region_calls = [n for n in region_nodes if isinstance(n, ast.Call)]
        helpers = _helpers(region_calls, ctx)
        if helpers is None:
            return
        # The loop's own calls, and those of the file's functions it calls (``d_step(G, D, opt_d)``), each with
        # the parameters of the function it runs in bound to the loop's arguments.
        own = {id(n) for n in optimizers.loop_body_nodes(node)}
        calls = [(c, None) for c in region_calls if id(c) in own]
        calls += [(c, h.binding) for h in helpers if id(h.call) in own for c in h.calls]
        if not any(isinstance(c.func, ast.Attribute) and c.func.attr == "backward" for c, _ in calls):
            return
        own_zeroes = [r for r in (_zeroed(c, b) for c, b in calls) if r is not None]
        if not own_zeroes:
            return  # no zero_grad at all: TL401's case
        inlined = {id(h.call) for h in helpers}
        every_node = region_nodes + [n for h in helpers for n in h.nodes]
        every_call = [(c, None) for c in region_calls] + [(c, h.binding) for h in helpers for c in h.calls]
        if _clears_otherwise(every_node, [c for c, _ in every_call if id(c) not in inlined], ctx):
            return
        zeroes = [(c, b) for c, b in every_call if _zero_grad_call(c)]
        if any(_zeroed(c, b) is None for c, b in zeroes):
            return  # `models[i].zero_grad()`: not known what it clears
        cleared = [_zeroed(c, b) for c, b in zeroes]
        rebound = assigned_names(node)
        reported: set[str] = set()
        for call, binding in calls:
            if binding is None and flow.enclosing_loop(call, ctx) is not node:
                continue
            target = optimizers.stepped(call, ctx)
            if target is None or target[1]:
                continue
            optimizer = _bound(target[0], binding)
            if optimizer is None:
                continue
            text = ctx.text(optimizer)
            if text in reported or flow.root_name(optimizer) in rebound:
                continue
            built = optimizers.construction(optimizer, ctx)
            sources = optimizers.parameter_sources(built, ctx) if built is not None else None
            if not sources:
                continue
            if not all(_clears_none_of(r, text, sources, ctx) for r in cleared):  # type: ignore[arg-type]
                continue
            held = {text, *(ctx.text(s) for s in sources)}
            if _handed_away(every_call, held, ctx):
                continue
            others = sorted({ctx.text(r) for r in own_zeroes})
            listed = "、".join(f"`{o}`" for o in others)
            message = (
                f"这个循环只清零了 {listed}，`{text}` 管的参数从未清零：它们的梯度在各次迭代之间累加，"
                f"`{text}.step()` 用的是累加后的梯度"
            )
            ctx.report(call, message)
            reported.add(text)


@dataclass(frozen=True, slots=True)
class _Helper:
    """A module-level function of the file that the loop calls and that steps or clears something."""

    call: ast.Call  # the call in the loop
    binding: dict[str, ast.expr]  # its parameters -> the arguments of that call
    nodes: list[ast.AST]  # the nodes of its body
    calls: list[ast.Call]


def _helpers(calls: list[ast.Call], ctx: Context) -> list[_Helper] | None:
    """The calls of the loop to module-level functions of the file that step or clear gradients, bound to their
    arguments. None when one such function clears gradients in a way not followed here (a receiver that is not
    a parameter); calls to functions that cannot be followed (methods, decorated, ``*args``) are left to the
    checks that give up on any clearing helper."""
    stepping, zeroing = optimizers.stepping_and_zeroing_functions(ctx)
    found = []
    for call in calls:
        if optimizers.called_name(call) not in stepping | zeroing:
            continue
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            continue
        function, receiver = _helper_definition(call, ctx)
        if function is None:
            continue
        arguments = function.args
        if function.decorator_list or arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
            continue
        nodes = list(control_flow.scope_nodes(function))
        if any(
            isinstance(n, (*control_flow.SCOPES, ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom)) for n in nodes
        ):
            continue
        parameters = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
        if receiver is not None:  # a method: ``self`` is the instance it was called on
            if not parameters:
                continue
            self_name, parameters = parameters[0], parameters[1:]
        binding: dict[str, ast.expr] = dict(zip(parameters, call.args, strict=False))
        binding.update({k.arg: k.value for k in call.keywords if k.arg is not None})
        binding = {
            name: argument
            for name, argument in binding.items()
            if optimizers.chain(argument) and not flow.bindings(function, name, ctx)
        }
        if receiver is not None:
            binding[self_name] = receiver
        inner = [n for n in nodes if isinstance(n, ast.Call)]
        if any(_zero_grad_call(c) and _zeroed(c, binding) is None for c in inner):
            return None
        found.append(_Helper(call, binding, nodes, inner))
    return found


def _helper_definition(call: ast.Call, ctx: Context) -> tuple[ast.FunctionDef | None, ast.expr | None]:
    """The ``def`` a loop's call runs, and the instance it runs on for a method: a module-level function of the
    file bound once (``d_step(G, D, opt_d)``), or a method of a class of the file called on one of its instances
    (``trainer.d_step(real)``, through the interpreter's class table)."""
    func = call.func
    if isinstance(func, ast.Name):
        definitions = flow.bindings(ctx.tree, func.id, ctx)
        if len(definitions) == 1 and isinstance(definitions[0], ast.FunctionDef):
            return definitions[0], None
        return None, None
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None, None
    info = ctx.user_class_of(ctx.value(func.value))
    method = info.method(func.attr) if info is not None else None
    if not isinstance(method, ast.FunctionDef) or func.attr in info.assigned:  # type: ignore[union-attr]
        return None, None
    return method, func.value


def _bound(expr: ast.expr, binding: dict[str, ast.expr] | None) -> ast.expr | None:
    """``expr`` as the loop names it: itself in the loop's own code; in a helper, the argument its parameter was
    bound to (only a plain parameter name is followed); in a method, ``self.opt_d`` stays itself: what the
    instance holds is known in the method too."""
    if binding is None:
        return expr
    if isinstance(expr, ast.Name):
        return binding.get(expr.id)
    root = flow.root_name(expr)
    if root is not None and root in binding and isinstance(expr, ast.Attribute) and _is_self(root, binding):
        return expr
    return None


def _is_self(name: str, binding: dict[str, ast.expr]) -> bool:
    return name == "self" and isinstance(binding.get(name), ast.Name)


def _zeroed(call: ast.Call, binding: dict[str, ast.expr] | None) -> ast.expr | None:
    receiver = optimizers.zeroed(call)
    return _bound(receiver, binding) if receiver is not None else None


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


def _clears_none_of(receiver: ast.expr, optimizer: str, sources: list[ast.expr], ctx: Context) -> bool:
    """``receiver.zero_grad()`` provably clears none of the parameters the optimizer was built from."""
    if ctx.text(receiver) == optimizer:
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


def _handed_away(calls: list[tuple[ast.Call, dict[str, ast.expr] | None]], held: set[str], ctx: Context) -> bool:
    """The optimizer or one of its models (or a part of one) goes to a function that may clear gradients: one
    whose body is not in this file (those that clear them are already ruled out). Torch functions, builtins and
    scaler calls are fine. In a helper's code a parameter stands for the argument it was bound to."""
    defined = ctx.analysis(flow.FileFunctions).names | _BUILTINS
    for call, binding in calls:
        if _zero_grad_call(call) or optimizers.is_scaler_call(call, ctx):
            continue
        if optimizers.stepped(call, ctx) is not None:
            continue
        if (ctx.qualify(call.func) or "").startswith("torch."):
            continue
        arguments = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
        arguments += [k.value for k in call.keywords]
        texts = [_loop_text(a, binding, ctx) for a in arguments if optimizers.chain(a)]
        if not any(optimizers.within(a, h) or optimizers.within(h, a) for a in texts for h in held):
            continue
        if optimizers.called_name(call) not in defined:
            return True
    return False


def _loop_text(expr: ast.expr, binding: dict[str, ast.expr] | None, ctx: Context) -> str:
    """How the loop spells ``expr`` (a chain): a helper's parameter replaced by the argument bound to it."""
    text = ctx.text(expr)
    root = flow.root_name(expr)
    if binding and root in binding:
        return ctx.text(binding[root]) + text[len(root) :]
    return text
