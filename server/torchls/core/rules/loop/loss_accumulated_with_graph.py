from __future__ import annotations

import ast

from torchls.core import control_flow
from torchls.core.findings import Fix, Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop import flow
from torchls.core.values import TensorValue

# Calls that turn whatever they get into a plain Python value (the accumulator's type no longer matters).
_PLAIN_RESULT = frozenset({"print", "float", "int", "str", "repr", "format", "bool", "len"})
# Logging calls that accept a tensor and a number alike.
_LOGGING_METHODS = frozenset(
    {"info", "debug", "warning", "error", "critical", "log", "add_scalar", "set_postfix", "set_description", "write"}
)
# Reductions of a list of numbers that give a plain number for floats and 0-dim tensors alike.
_LIST_REDUCTIONS = frozenset(
    {
        "numpy.mean",
        "numpy.average",
        "numpy.sum",
        "numpy.std",
        "numpy.median",
        "statistics.mean",
        "statistics.median",
        "statistics.fmean",
    }
)


class LossAccumulatedWithGraph(Rule):
    """训练循环里把带计算图的 loss 张量直接累加（`total += loss`、`losses.append(loss)`），没有 `.item()`。

    **为什么是问题**：`loss` 是需要梯度的张量，`total += loss` 的结果仍是张量，并且通过 `grad_fn`
    引用着这一步的计算图；下一步再加上去，引用链越来越长，每一步的图都释放不掉，显存随迭代持续上涨，
    最终 OOM。`losses.append(loss)` 同理。只有 `loss` 确实在这个循环里做了 `backward()`（也就是确实需要梯度）、
    累加发生在梯度开启时、累加用的变量在各步之间一直保留时才报告。

    **示例**
    ```python
    total_loss = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    ```

    **改正**：`total_loss += loss.item()`（或 `loss.detach()`，保持张量且不留计算图）。

    **自动修复**：安全：累加值之后只被当作数字使用（打印、格式化、算平均等）且 `loss` 是标量时改为
    `loss.item()`；否则改为 `loss.detach()`，累加结果仍是同样的张量，只是不再引用计算图。
    """

    code = "TL402"
    requires_text = ("backward",)
    name = "loss-accumulated-with-graph"
    severity = Severity.WARNING
    kb_entry = "torch.Tensor.item"
    node_types = (ast.AugAssign, ast.Assign, ast.Call)
    fixable = True

    def visit(self, node: ast.AugAssign | ast.Assign | ast.Call, ctx: Context) -> None:
        if not flow.file_mentions(ctx, "backward"):
            return
        found = _accumulation(node, ctx)
        if found is None:
            return
        accumulator, value, kind = found
        loop = flow.enclosing_loop(node, ctx)
        if loop is None or not ctx.grad_enabled or flow.grad_mode(node, ctx) not in (flow.ENABLED, flow.CALLER):
            return
        if kind == "append" and not _is_list(accumulator, node, ctx):
            return
        if kind == "add" and not _starts_as_number(accumulator, node, ctx):
            return
        if _rebound_in(loop, accumulator, ctx):
            return
        for loss in _carried(value):
            if not _may_require_grad(ctx.value(loss)):
                continue
            scalar = _backward_in_loop(loop, loss.id, ctx)
            if scalar is None or not _bindings_keep_graph(loop, loss.id):
                continue
            plain = scalar and _only_used_as_number(accumulator, kind, node, ctx)
            method = "item" if plain else "detach"
            fix = Fix(f"改为 `{loss.id}.{method}()`", (ctx.replace(loss, f"{loss.id}.{method}()"),))
            verb = "收集" if kind == "append" else "累加"
            what = f"`{ctx.text(accumulator)}` {verb}的是带计算图的 `{loss.id}` 张量"
            message = f"{what}：每一步的计算图都被留住，显存会持续增长"
            ctx.report(loss, message, fix=fix)
            return


def _accumulation(node: ast.AST, ctx: Context) -> tuple[ast.expr, ast.expr, str] | None:
    """(accumulator, added value, kind) for ``t += v``, ``t = t + v``, ``t = v + t`` and ``t.append(v)``."""
    if isinstance(node, ast.AugAssign):
        if isinstance(node.op, ast.Add) and _is_target(node.target):
            return node.target, node.value, "add"
        return None
    if isinstance(node, ast.Assign):
        if len(node.targets) != 1 or not _is_target(node.targets[0]):
            return None
        target, value = node.targets[0], node.value
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            if _same(value.left, target):
                return target, value.right, "add"
            if _same(value.right, target):
                return target, value.left, "add"
        return None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "append"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.func.value, ast.Name | ast.Attribute)
        and _is_target(node.func.value)
        and isinstance(flow.parent(node, ctx), ast.Expr)
    ):
        return node.func.value, node.args[0], "append"
    return None


def _is_target(node: ast.expr) -> bool:
    """A plain name, ``self.attr`` or ``d["key"]``: an accumulator that can live on between steps."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name)
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Name | ast.Attribute) and isinstance(node.slice, ast.Constant)
    return False


def _key(node: ast.AST) -> str:
    return ast.dump(node, annotate_fields=False).replace("Store()", "Load()").replace("Del()", "Load()")


def _same(a: ast.AST, b: ast.AST) -> bool:
    return _key(a) == _key(b)


def _carried(value: ast.expr) -> list[ast.Name]:
    """Names whose tensor the value is made of by arithmetic alone (``loss``, ``loss * n``, ``-loss``)."""
    if isinstance(value, ast.Name):
        return [value]
    if isinstance(value, ast.BinOp) and not isinstance(value.op, ast.MatMult):
        return _carried(value.left) + _carried(value.right)
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub | ast.UAdd):
        return _carried(value.operand)
    return []


def _may_require_grad(value: object) -> bool:
    if isinstance(value, TensorValue):
        return value.requires_grad is not False
    return value is None


# ---------------------------------------------------------------------------------------------- backward


def _backward_in_loop(loop: ast.AST, name: str, ctx: Context) -> bool | None:
    """None when the loop never back-propagates through ``name``; else whether that also proves it is a scalar."""
    found: bool | None = None
    for node in control_flow.walk_scope(loop):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func = node.func
        if func.attr == "backward" and name in _backward_names(func.value):
            plain = not node.args and all(k.arg not in ("gradient", None) for k in node.keywords)
            found = bool(found) or (plain and name in _scalar_names(func.value))
        elif (
            func.attr in ("backward", "manual_backward")
            and node.args
            and _takes_the_loss(node, ctx)
            and name in _backward_names(node.args[0])
        ):
            found = bool(found)
    return found


def _takes_the_loss(node: ast.Call, ctx: Context) -> bool:
    """``accelerator.backward(loss)``, ``self.manual_backward(loss)``, ``torch.autograd.backward(loss)``."""
    func = node.func
    assert isinstance(func, ast.Attribute)
    if func.attr == "manual_backward" or ctx.qualify(func) == "torch.autograd.backward":
        return True
    owner = func.value.attr if isinstance(func.value, ast.Attribute) else getattr(func.value, "id", "")
    return owner in ("accelerator", "fabric")


def _backward_names(receiver: ast.expr) -> set[str]:
    """Names whose graph ``receiver.backward()`` goes through: ``loss``, ``loss / k``, ``scaler.scale(loss)``,
    ``loss.mean()``."""
    if isinstance(receiver, ast.Name):
        return {receiver.id}
    if isinstance(receiver, ast.BinOp):
        return _backward_names(receiver.left) | _backward_names(receiver.right)
    if isinstance(receiver, ast.UnaryOp):
        return _backward_names(receiver.operand)
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
        if receiver.func.attr == "scale" and len(receiver.args) == 1 and not receiver.keywords:
            return _backward_names(receiver.args[0])
        if receiver.func.attr in ("mean", "sum") and not receiver.args and not receiver.keywords:
            return _backward_names(receiver.func.value)
    return set()


def _scalar_names(receiver: ast.expr) -> set[str]:
    """Names that must hold one element when ``receiver.backward()`` (no gradient argument) works."""
    if isinstance(receiver, ast.Name):
        return {receiver.id}
    if isinstance(receiver, ast.BinOp) and not isinstance(receiver.op, ast.MatMult):
        return _scalar_names(receiver.left) | _scalar_names(receiver.right)
    if isinstance(receiver, ast.UnaryOp):
        return _scalar_names(receiver.operand)
    if (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr == "scale"
        and len(receiver.args) == 1
    ):
        return _scalar_names(receiver.args[0])
    return set()


def _bindings_keep_graph(loop: ast.AST, name: str) -> bool:
    """The loop computes ``name`` once (any way) and otherwise only rebinds it by arithmetic on itself
    (``loss = loss / k``): every value it holds is the back-propagated one or made from it."""
    origins = 0
    for node in control_flow.walk_scope(loop):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store | ast.Del)):
            continue
        statement = _binding_statement(node, loop)
        if isinstance(statement, ast.AugAssign) and not isinstance(statement.op, ast.MatMult):
            continue
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and statement.targets[0] is node
            and any(n.id == name for n in _carried(statement.value))
        ):
            continue
        origins += 1
    return origins == 1


def _binding_statement(target: ast.Name, loop: ast.AST) -> ast.AST | None:
    for node in control_flow.walk_scope(loop):
        if isinstance(node, ast.Assign) and any(target in ast.walk(t) for t in node.targets):
            return node
        if isinstance(node, ast.AugAssign | ast.AnnAssign) and node.target is target:
            return node
    return None


# ---------------------------------------------------------------------------------------------- the accumulator


def _is_list(accumulator: ast.expr, node: ast.AST, ctx: Context) -> bool:
    """The accumulator is provably a list: every binding of it is ``[]``, a list display or ``list()``."""
    if isinstance(accumulator, ast.Name):
        scope = flow.scope_of(node, ctx)
        stores = flow.bindings(scope, accumulator.id, ctx)
        if not stores or flow.is_parameter(scope, accumulator.id):
            return False
        return all(_is_list_value(flow.simple_assignment(s, ctx)) for s in stores)
    if isinstance(accumulator, ast.Attribute) and isinstance(accumulator.value, ast.Name):
        klass = ctx.klass
        if klass is None or accumulator.value.id != "self":
            return False
        values = []
        for inner in ast.walk(klass.node):
            if isinstance(inner, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                for target in targets:
                    if _same(target, accumulator):
                        values.append(inner.value if not isinstance(inner, ast.AugAssign) else None)
        return bool(values) and all(_is_list_value(v) for v in values)
    return False


def _starts_as_number(accumulator: ast.expr, node: ast.AST, ctx: Context) -> bool:
    """The accumulator provably starts as a number or a tensor (``total = 0.0``, ``self.total = 0``,
    ``logs = {"loss": 0.0}``), not some object with its own ``+=``."""
    if isinstance(accumulator, ast.Name):
        scope = flow.scope_of(node, ctx)
        values = [
            _initial_value(s, ctx)
            for s in flow.bindings(scope, accumulator.id, ctx)
            if not isinstance(flow.parent(s, ctx), ast.AugAssign) and _accumulation(flow.parent(s, ctx), ctx) is None  # type: ignore[arg-type]
        ]
        return bool(values) and all(_numeric_value(v, accumulator.id, ctx) for v in values)
    if isinstance(accumulator, ast.Attribute) and ctx.klass is not None:
        values = []
        for inner in ast.walk(ctx.klass.node):
            if isinstance(inner, ast.Assign) and any(_same(t, accumulator) for t in inner.targets):
                values.append(inner.value if _accumulation(inner, ctx) is None else accumulator)
        return bool(values) and all(v is accumulator or _numeric_value(v, "", ctx) for v in values)
    if isinstance(accumulator, ast.Subscript) and isinstance(accumulator.value, ast.Name):
        scope = flow.scope_of(node, ctx)
        key = accumulator.slice
        values = [flow.simple_assignment(s, ctx) for s in flow.bindings(scope, accumulator.value.id, ctx)]
        if not values:
            return False
        for value in values:
            if not isinstance(value, ast.Dict):
                return False
            entries = [v for k, v in zip(value.keys, value.values, strict=True) if k is not None and _same(k, key)]
            if len(entries) != 1 or not _numeric_value(entries[0], "", ctx):
                return False
        return True
    return False


def _initial_value(store: ast.AST, ctx: Context) -> ast.expr | None:
    """The value a store binds: ``total = 0.0``, or its part of ``d_total, g_total = 0.0, 0.0``."""
    return flow.bound_value(store, ctx) if isinstance(store, ast.Name) else flow.simple_assignment(store, ctx)


def _numeric_value(value: ast.expr | None, name: str, ctx: Context) -> bool:
    """A number literal, a torch call (a tensor), or arithmetic on the accumulator itself (``total / n``)."""
    if value is None:
        return False
    if isinstance(value, ast.Constant):
        return isinstance(value.value, int | float) and not isinstance(value.value, bool)
    if isinstance(value, ast.UnaryOp):
        return _numeric_value(value.operand, name, ctx)
    if isinstance(value, ast.Call):
        qualname = ctx.qualify(value.func) or ""
        return qualname.startswith("torch.") or (isinstance(value.func, ast.Name) and value.func.id in ("float", "int"))
    if isinstance(value, ast.BinOp):
        return any(isinstance(n, ast.Name) and n.id == name for n in (value.left, value.right)) if name else False
    return False


def _is_list_value(value: ast.expr | None) -> bool:
    if isinstance(value, ast.List | ast.ListComp):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "list"
        and not value.args
        and not value.keywords
    )


def _rebound_in(loop: ast.AST, accumulator: ast.expr, ctx: Context) -> bool:
    """True when the loop resets the accumulator (or what holds it), so it does not grow across steps."""
    base = flow.root_name(accumulator)
    for node in control_flow.walk_scope(loop):
        if isinstance(node, ast.Name) and node.id == base and isinstance(node.ctx, ast.Store | ast.Del):
            statement = flow.parent(node, ctx)
            if isinstance(accumulator, ast.Name) and _accumulation(statement, ctx) is not None:  # type: ignore[arg-type]
                continue
            return True
        if (
            isinstance(node, ast.Attribute | ast.Subscript)
            and isinstance(node.ctx, ast.Store | ast.Del)
            and _same(node, accumulator)
            and _accumulation(flow.parent(node, ctx), ctx) is None  # type: ignore[arg-type]
        ):
            return True
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Del) and _same(node.value, accumulator):
            return True  # del losses[:]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("clear", "pop")
            and _same(node.func.value, accumulator)
        ):
            return True
    return False


def _only_used_as_number(accumulator: ast.expr, kind: str, node: ast.AST, ctx: Context) -> bool:
    """True when every other use of the accumulator works the same with Python floats as with 0-dim tensors."""
    if not isinstance(accumulator, ast.Name):
        return False
    scope = flow.scope_of(node, ctx)
    name = accumulator.id
    if flow.is_parameter(scope, name):
        return False
    stores = flow.bindings(scope, name, ctx)
    initialised = False
    for store in stores:
        statement = flow.parent(store, ctx)
        if statement is not None and _accumulation(statement, ctx) is not None:
            continue
        value = _initial_value(store, ctx)
        empty_list = _is_list_value(value) and not (isinstance(value, ast.List) and value.elts)
        if (kind == "append" and empty_list) or (kind == "add" and _is_number(value)):
            initialised = True
        elif isinstance(statement, ast.AugAssign) and kind == "add":
            continue  # total /= len(loader)
        elif (
            kind == "add"
            and isinstance(statement, ast.Assign)
            and isinstance(value, ast.BinOp)
            and any(isinstance(n, ast.Name) and n.id == name for n in (value.left, value.right))
        ):
            continue  # total = total / len(loader)
        else:
            return False
    if not initialised:
        return False
    loads = [
        n
        for shared in flow.scopes_sharing(scope, name, ctx)  # functions that read it as a global or closure variable
        for n in flow.name_loads(shared, ctx).get(name, ())
    ]
    return all(_number_use(n, name, kind, ctx, 0) for n in loads)


def _is_number(value: ast.expr | None) -> bool:
    return (
        isinstance(value, ast.Constant) and isinstance(value.value, int | float) and not isinstance(value.value, bool)
    )


def _number_use(expr: ast.expr, name: str, kind: str, ctx: Context, depth: int) -> bool:
    """Whether the value of ``expr`` is used only where a float and a 0-dim tensor behave alike."""
    if depth > 4:
        return False
    up = flow.parent(expr, ctx)
    if isinstance(up, ast.keyword):
        up = flow.parent(up, ctx)
        if not isinstance(up, ast.Call):
            return False
        return _number_call(up, expr, name, kind, ctx, depth, as_keyword=True)
    if isinstance(up, ast.FormattedValue):
        return True
    if isinstance(up, ast.Call):
        if up.func is expr:
            return False
        return _number_call(up, expr, name, kind, ctx, depth, as_keyword=False)
    if isinstance(up, ast.Attribute) and up.value is expr and kind == "append":
        call = flow.parent(up, ctx)
        return isinstance(call, ast.Call) and call.func is up and up.attr == "append"  # more appends
    if isinstance(up, ast.BinOp | ast.UnaryOp) and kind == "add":
        return _number_use(up, name, kind, ctx, depth + 1)
    if isinstance(up, ast.Subscript) and up.value is expr and kind == "append":
        return _number_use(up, name, "add", ctx, depth + 1)
    if isinstance(up, ast.Compare):
        test_of = flow.parent(up, ctx)
        return isinstance(test_of, ast.If | ast.While | ast.IfExp | ast.Assert) and getattr(test_of, "test", None) is up
    if isinstance(up, ast.Assign) and up.value is expr and len(up.targets) == 1:
        target = up.targets[0]
        if isinstance(target, ast.Name) and target.id == name:
            return True  # total = total / n: its later uses are checked as uses of the same name
        if isinstance(target, ast.Name):
            return _name_used_as_number(target, up, ctx, depth + 1)
    if isinstance(up, ast.AugAssign) and up.value is expr and isinstance(up.target, ast.Name):
        return up.target.id == name
    return False


def _number_call(
    call: ast.Call, expr: ast.expr, name: str, kind: str, ctx: Context, depth: int, *, as_keyword: bool
) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in _PLAIN_RESULT:
            return True
        if func.id == "sum" and kind == "append" and not as_keyword:
            return _number_use(call, name, "add", ctx, depth + 1)
        if func.id in ("round", "abs", "max", "min") and kind == "add":
            return _number_use(call, name, kind, ctx, depth + 1)
    if isinstance(func, ast.Attribute) and func.attr in _LOGGING_METHODS:
        return True
    qualname = ctx.qualify(func) or ""
    return kind == "append" and qualname in _LIST_REDUCTIONS


def _name_used_as_number(target: ast.Name, statement: ast.Assign, ctx: Context, depth: int) -> bool:
    """``avg = total / n``: ``avg`` is bound only here and used only as a number."""
    scope = flow.scope_of(statement, ctx)
    if len(flow.bindings(scope, target.id, ctx)) != 1:
        return False
    loads = [n for n in control_flow.scope_nodes(scope) if isinstance(n, ast.Name) and n.id == target.id]
    return all(_number_use(n, target.id, "add", ctx, depth) for n in loads if isinstance(n.ctx, ast.Load))
