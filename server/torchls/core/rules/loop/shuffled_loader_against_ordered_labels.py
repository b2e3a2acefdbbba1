from __future__ import annotations

import ast
from dataclasses import replace
from typing import TYPE_CHECKING

from torchls.core.control_flow import Scope, position, scope_nodes
from torchls.core.findings import Severity
from torchls.core.rules.base import Context, Rule
from torchls.core.rules.loop.flow import (
    bindings,
    bound_value,
    enclosing_loop,
    is_parameter,
    parent,
    scope_of,
    simple_assignment,
)
from torchls.core.rules.loop.modules import classes, literal_argument
from torchls.core.values import InstanceValue

if TYPE_CHECKING:
    from torchls.core.interpreter import ClassInfo

# Metrics that compare ``(y_true, y_pred)`` sample by sample.
_METRICS = frozenset(
    "sklearn.metrics." + n
    for n in "accuracy_score balanced_accuracy_score f1_score precision_score recall_score confusion_matrix "
    "classification_report matthews_corrcoef cohen_kappa_score jaccard_score".split()
)
# Methods that keep the samples in the order they are in (the batch dim stays first): moving, converting,
# flattening, a per-sample argmax.
_ORDER_KEEPING_METHODS = frozenset(
    "cpu cuda to numpy tolist detach clone view reshape flatten squeeze long float int double bool round".split()
)
# ``f(collected)`` calls that join a list of batches, or turn one sequence into an array, keeping the order.
_JOINS = frozenset(
    {
        "torch.cat",
        "torch.concat",
        "torch.concatenate",
        "torch.stack",
        "torch.tensor",
        "torch.as_tensor",
        "torch.hstack",
        "numpy.concatenate",
        "numpy.array",
        "numpy.asarray",
        "numpy.hstack",
        "numpy.stack",
    }
)
_DEPTH = 4


class ShuffledLoaderAgainstOrderedLabels(Rule):
    """遍历 `shuffle=True` 的 DataLoader 收集的预测，与数据集按原顺序存放的标签逐个比较。

    **为什么是问题**：`shuffle=True` 时每个 epoch 都按随机顺序取样本，逐批 `append` 再 `torch.cat` 得到的预测
    是打乱后的顺序；而 `TensorDataset(x_test, y_test)` 里的 `y_test`、torchvision 数据集的 `.targets` 仍是原来的
    顺序。两者逐个比较（`(preds == y_test).float().mean()`、`accuracy_score(y_test, preds)`）是在拿第 i 个预测对
    另一个样本的标签：模型再好，准确率也只在随机水平附近，而且不报错。只在能证明预测来自打乱的 DataLoader、
    标签就是这个 DataLoader 的数据集里按原顺序存放的那个张量时报告；同一个循环里一起收集的 batch 标签不报告。

    **示例**
    ```python
    loader = DataLoader(TensorDataset(x_test, y_test), batch_size=64, shuffle=True)
    preds = []
    for xb, _ in loader:
        preds.append(model(xb).argmax(1))
    acc = (torch.cat(preds) == y_test).float().mean()
    ```

    **改正**：评估用的 DataLoader 用 `shuffle=False`（默认值）；或者在同一个循环里一起收集标签：
    `for xb, yb in loader: preds.append(...); labels.append(yb)`，再拿 `torch.cat(labels)` 比较。

    **自动修复**：不提供：该改 DataLoader 的 `shuffle`，还是改为在循环里收集标签，要由作者决定。
    """

    code = "TL417"
    requires_text = ("shuffle",)
    name = "shuffled-loader-against-ordered-labels"
    severity = Severity.ERROR
    kb_entry = "torch.utils.data.DataLoader"
    node_types = (ast.Compare, ast.Call)

    def visit(self, node: ast.Compare | ast.Call, ctx: Context) -> None:
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(node, ast.Compare):
            if len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq | ast.NotEq):
                pairs = [(node.left, node.comparators[0]), (node.comparators[0], node.left)]
        elif ctx.qualify(node.func) in _METRICS and not any(isinstance(a, ast.Starred) for a in node.args):
            call = ctx.call(node)
            truth, predicted = call.arg_node(0, "y_true"), call.arg_node(1, "y_pred")
            if truth is not None and predicted is not None:
                pairs = [(predicted, truth), (truth, predicted)]
        for predicted, truth in pairs:
            collected = _collected(predicted, node, ctx, _DEPTH)
            if collected is None:
                continue
            loader, loader_node = collected
            labels = _stored_labels(truth, loader, node, ctx)
            if labels is None:
                continue
            ctx.report(
                node,
                f"`{ctx.text(predicted)}` 是按打乱的顺序（`shuffle=True`）遍历 `{ctx.text(loader_node)}` 收集的，"
                f"却与按数据集原顺序存放的 `{labels}` 逐个比较，结果没有意义",
                related=ctx.related(loader.origin),
            )
            return


# ---------------------------------------------------------------------------------------------- predictions


def _unwrap(expr: ast.expr, ctx: Context) -> ast.expr:
    """Through order-keeping methods and joins: ``torch.cat(preds).argmax(1).cpu().numpy()`` -> ``preds``."""
    while isinstance(expr, ast.Call):
        func = expr.func
        if any(isinstance(a, ast.Starred) for a in expr.args) or any(k.arg is None for k in expr.keywords):
            return expr
        if isinstance(func, ast.Attribute) and ctx.qualify(func) is None:
            if func.attr in _ORDER_KEEPING_METHODS:
                if func.attr in ("view", "reshape") and not _flat_shape(expr):
                    return expr
                expr = func.value
                continue
            if func.attr == "argmax" and _per_sample_dim(expr):
                expr = func.value
                continue
            return expr
        qualname = ctx.qualify(func)
        if qualname in _JOINS and len(expr.args) == 1 and all(k.arg in ("dim", "axis", "dtype") for k in expr.keywords):
            dim = next((k.value for k in expr.keywords if k.arg in ("dim", "axis")), None)
            if dim is not None and not (isinstance(dim, ast.Constant) and dim.value == 0):
                return expr
            expr = expr.args[0]
            continue
        return expr
    return expr


def _flat_shape(call: ast.Call) -> bool:
    return (
        len(call.args) == 1
        and not call.keywords
        and isinstance(call.args[0], ast.UnaryOp | ast.Constant)
        and (ast.dump(call.args[0]) in (ast.dump(ast.Constant(-1)), ast.dump(ast.UnaryOp(ast.USub(), ast.Constant(1)))))
    )


def _per_sample_dim(call: ast.Call) -> bool:
    """``argmax(1)``, ``argmax(dim=-1)``: one result per sample, in the samples' order."""
    dims = [k.value for k in call.keywords if k.arg == "dim"] + list(call.args[:1])
    if len(dims) != 1 or any(k.arg not in ("dim", "keepdim") for k in call.keywords):
        return False
    try:
        dim = ast.literal_eval(dims[0])
    except ValueError:
        return False
    return isinstance(dim, int) and dim != 0


def _collected(
    expr: ast.expr, use: ast.AST, ctx: Context, depth: int, params: dict[str, InstanceValue] | None = None
) -> tuple[InstanceValue, ast.expr] | None:
    """The shuffled DataLoader (and the expression naming it) whose batches ``expr`` was collected from, in order."""
    if depth <= 0:
        return None
    expr = _unwrap(expr, ctx)
    if isinstance(expr, ast.Call):
        return _returned_by(expr, ctx, depth)
    if isinstance(expr, ast.ListComp):
        return _comprehended(expr, ctx, params)
    if not isinstance(expr, ast.Name):
        return None
    scope = scope_of(use, ctx)
    stores = bindings(scope, expr.id, ctx)
    if not stores or is_parameter(scope, expr.id):
        return None
    list_init = [s for s in stores if isinstance(s, ast.Name) and isinstance(bound_value(s, ctx), ast.List)]
    if len(list_init) == 1:
        # A list filled in a loop (``preds = []``, ``preds, seen = [], []``): every other store rebinds it to a
        # join of itself (``preds = torch.cat(preds)``).
        for store in stores:
            value = bound_value(store, ctx) if isinstance(store, ast.Name) else None
            if store is list_init[0]:
                if value.elts:  # type: ignore[union-attr]
                    return None
                continue
            joined = _unwrap(value, ctx) if value is not None else None
            if not (isinstance(joined, ast.Name) and joined.id == expr.id) or position(store) < position(list_init[0]):
                return None
        # While it holds the list: up to the first rebinding to the joined batches, or up to ``use``.
        rebinds = [position(s) for s in stores if s is not list_init[0]]
        until = min([*rebinds, position(use)])
        return _filled_in_loop(expr.id, scope, list_init[0], until, ctx, params)
    if len(stores) != 1 or position(stores[0]) > position(use):
        return None
    value = simple_assignment(stores[0], ctx)
    if value is None:
        # ``preds, acc = predict(model, loader)``: the matching part of what the function returns.
        part = _unpacked_call(stores[0], ctx)
        return _returned_by(part[0], ctx, depth - 1, part[1]) if part is not None else None
    return _collected(value, stores[0], ctx, depth - 1, params)


def _unpacked_call(store: ast.AST, ctx: Context) -> tuple[ast.Call, int] | None:
    """(the call, the index) for a name unpacked from a call's result: ``preds, acc = predict(...)``."""
    target = parent(store, ctx)
    statement = parent(target, ctx) if isinstance(target, ast.Tuple) else None
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and statement.targets[0] is target
        and isinstance(statement.value, ast.Call)
        and not any(isinstance(e, ast.Starred) for e in target.elts)  # type: ignore[union-attr]
    ):
        return None
    return statement.value, target.elts.index(store)  # type: ignore[union-attr]


def _comprehended(
    comprehension: ast.ListComp, ctx: Context, params: dict[str, InstanceValue] | None
) -> tuple[InstanceValue, ast.expr] | None:
    """``[model(x).argmax(1) for x, _ in loader]``: one value per batch of one shuffled DataLoader, in its order."""
    if len(comprehension.generators) != 1:
        return None
    generator = comprehension.generators[0]
    if generator.ifs or generator.is_async:
        return None
    loader = _shuffled_loader(generator.iter, ctx, params)
    if loader is None:
        return None
    bound = {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
    return loader if _names(comprehension.elt) & bound else None


def _filled_in_loop(
    name: str,
    scope: Scope,
    init: ast.AST,
    until: tuple[int, int],
    ctx: Context,
    params: dict[str, InstanceValue] | None,
) -> tuple[InstanceValue, ast.expr] | None:
    """``name`` (a list made empty at ``init``) is, until ``until``, only ``append``-ed/``extend``-ed to, inside loops
    over one shuffled DataLoader, with values computed from each batch."""
    found: tuple[InstanceValue, ast.expr] | None = None
    for node in scope_nodes(scope):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        if position(node) >= until or position(node) < position(init):
            continue  # read while the name holds something else: the joined batches, or an earlier value
        holder = parent(node, ctx)
        if isinstance(holder, ast.Attribute) and holder.value is node:
            call = parent(holder, ctx)
            if not (isinstance(call, ast.Call) and call.func is holder):
                return None
            if holder.attr not in ("append", "extend") or len(call.args) != 1 or call.keywords:
                return None
            loop = enclosing_loop(call, ctx)
            if not isinstance(loop, ast.For | ast.AsyncFor):
                return None
            loader = _shuffled_loader(loop.iter, ctx, params)
            if loader is None or not _from_batch(call.args[0], loop):
                return None
            if found is not None and found[0] is not loader[0]:
                return None
            found = loader
        elif not _is_join_of(node, name, ctx):
            return None  # passed somewhere else while being filled (sorted, shuffled, extended by a helper...)
    return found


def _is_join_of(node: ast.Name, name: str, ctx: Context) -> bool:
    """``node`` is read only to be joined: ``torch.cat(preds)``, ``np.concatenate(preds)``."""
    holder = parent(node, ctx)
    return isinstance(holder, ast.Call) and _unwrap(holder, ctx) is node


def _from_batch(value: ast.expr, loop: ast.For | ast.AsyncFor) -> bool:
    """``value`` is computed from the names the loop binds for each batch (directly or through assignments in
    the loop body)."""
    tainted = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    assignments = [
        s
        for s in ast.walk(ast.Module(body=loop.body, type_ignores=[]))
        if isinstance(s, ast.Assign | ast.AugAssign | ast.AnnAssign) and s.value is not None
    ]
    changed = True
    while changed:
        changed = False
        for statement in assignments:
            if _names(statement.value) & tainted:  # type: ignore[arg-type]
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                new = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)} - tainted
                if new:
                    tainted |= new
                    changed = True
    return bool(_names(value) & tainted)


def _names(expr: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


def _shuffled_loader(
    iterable: ast.expr, ctx: Context, params: dict[str, InstanceValue] | None
) -> tuple[InstanceValue, ast.expr] | None:
    """The DataLoader with ``shuffle=True`` that ``for ... in iterable`` walks (also through enumerate/tqdm)."""
    node = iterable
    while isinstance(node, ast.Call) and len(node.args) >= 1:
        qualname = ctx.qualify(node.func) or ""
        is_enumerate = isinstance(node.func, ast.Name) and node.func.id == "enumerate"
        if not is_enumerate and not qualname.startswith("tqdm"):
            break
        node = node.args[0]
    value = params.get(node.id) if params is not None and isinstance(node, ast.Name) else None
    if value is None and isinstance(node, ast.Call):
        value = _built_loader(node, ctx, params)
    if value is None:
        value = ctx.value(node)
    if isinstance(value, InstanceValue) and value.qualname in ("builtins.enumerate", "progress"):
        value = value.arg("of")
    if not isinstance(value, InstanceValue) or value.qualname != "torch.utils.data.DataLoader":
        return None
    constructor = value.origin.node if value.origin is not None else None
    if not isinstance(constructor, ast.Call) or any(k.arg is None for k in constructor.keywords):
        return None
    if any(isinstance(a, ast.Starred) for a in constructor.args):
        return None
    given, shuffle = literal_argument(constructor, 2, "shuffle")
    if not given or shuffle is not True:
        return None
    if any(literal_argument(constructor, i, n)[0] for i, n in ((3, "sampler"), (4, "batch_sampler"))):
        return None
    return value, node


def _built_loader(call: ast.Call, ctx: Context, params: dict[str, InstanceValue] | None) -> InstanceValue | None:
    """``make_loader(ds, train=False)``: a module-level function of the file whose one ``return`` is a
    ``DataLoader(dataset, ...)`` built around one of its parameters (not rebound): that DataLoader, reading the
    dataset the call passes (as the caller knows it, through ``params`` inside a function being followed)."""
    if not isinstance(call.func, ast.Name) or any(k.arg is None for k in call.keywords):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    definitions = bindings(ctx.tree, call.func.id, ctx)
    if len(definitions) != 1 or not isinstance(definitions[0], ast.FunctionDef) or definitions[0].decorator_list:
        return None
    function = definitions[0]
    returns = [n for n in scope_nodes(function) if isinstance(n, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0].value, ast.Call):
        return None
    made = returns[0].value
    loader = ctx.value(made)
    if not isinstance(loader, InstanceValue) or loader.qualname != "torch.utils.data.DataLoader":
        return None
    if loader.origin is None or loader.origin.node is not made:
        return None
    dataset = made.args[0] if made.args else next((k.value for k in made.keywords if k.arg == "dataset"), None)
    if (
        not isinstance(dataset, ast.Name)
        or not is_parameter(function, dataset.id)
        or bindings(function, dataset.id, ctx)
    ):
        return None
    parameters = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    passed: dict[str, ast.expr] = dict(zip(parameters, call.args, strict=False))
    passed.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    argument = passed.get(dataset.id)
    if argument is None:
        return None
    value = params.get(argument.id) if params is not None and isinstance(argument, ast.Name) else None
    if value is None:
        value = ctx.value(argument)
    if not isinstance(value, InstanceValue):
        return None
    return replace(loader, args=tuple((k, value if k == "dataset" else v) for k, v in loader.args))


def _returned_by(
    call: ast.Call, ctx: Context, depth: int, part: int | None = None
) -> tuple[InstanceValue, ast.expr] | None:
    """``predict(model, test_loader)``: a function of the file's module level that returns what it collected
    from the shuffled DataLoader passed to it (or from one it builds around the dataset passed to it); with
    ``part``, that part of the tuple it returns (``return torch.cat(preds), hits / n``)."""
    if not isinstance(call.func, ast.Name) or any(k.arg is None for k in call.keywords):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    definitions = bindings(ctx.tree, call.func.id, ctx)
    if len(definitions) != 1 or not isinstance(definitions[0], ast.FunctionDef):
        return None
    function = definitions[0]
    parameters = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    passed: dict[str, ast.expr] = dict(zip(parameters, call.args, strict=False))
    passed.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    params = {}
    for name, argument in passed.items():
        value = ctx.value(argument)
        if isinstance(value, InstanceValue):  # a DataLoader, or a dataset a loader may be built around
            if bindings(function, name, ctx):
                return None  # the parameter is rebound inside
            params[name] = value
    if not params:
        return None
    returns = [n for n in scope_nodes(function) if isinstance(n, ast.Return)]
    if len(returns) != 1 or returns[0].value is None:
        return None
    returned = returns[0].value
    if part is not None:
        if not isinstance(returned, ast.Tuple) or any(isinstance(e, ast.Starred) for e in returned.elts):
            return None
        if part >= len(returned.elts):
            return None
        returned = returned.elts[part]
    found = _collected(returned, returns[0], ctx, depth - 1, params)
    if found is None:
        return None
    loader, inside = found
    # Name the loader as the caller passed it.
    for name, argument in passed.items():
        if isinstance(inside, ast.Name) and inside.id == name:
            return loader, argument
    if isinstance(inside, ast.Call):
        return loader, inside  # built inside the function: named as the function builds it
    return None


# ---------------------------------------------------------------------------------------------- labels


def _stored_labels(expr: ast.expr, loader: InstanceValue, use: ast.AST, ctx: Context) -> str | None:
    """How the message names ``expr`` when it provably is a label tensor of ``loader``'s dataset in stored order:
    a later argument of the ``TensorDataset(...)`` the loader reads, ``dataset.tensors[1]``, or the ``targets`` of a
    torchvision dataset."""
    dataset = loader.arg("dataset")
    if not isinstance(dataset, InstanceValue) or dataset.origin is None:
        return None
    made = dataset.origin.node
    if not isinstance(made, ast.Call):
        return None
    kind = ctx.qualify(made.func) or ""
    unwrapped = _unwrap(expr, ctx)
    if kind == "torch.utils.data.TensorDataset":
        if any(isinstance(a, ast.Starred) for a in made.args) or made.keywords:
            return None
        if isinstance(unwrapped, ast.Name):
            for argument in made.args[1:]:
                if (
                    isinstance(argument, ast.Name)
                    and argument.id == unwrapped.id
                    and _same_variable(argument, unwrapped, ctx)
                ):
                    return ctx.text(expr)
        if (
            isinstance(unwrapped, ast.Subscript)
            and isinstance(unwrapped.value, ast.Attribute)
            and unwrapped.value.attr == "tensors"
            and isinstance(unwrapped.slice, ast.Constant)
            and unwrapped.slice.value in range(1, len(made.args))
            and _names_dataset(unwrapped.value.value, made, ctx)
        ):
            return ctx.text(expr)
        return None
    if kind.startswith("torchvision.datasets.") and (
        isinstance(unwrapped, ast.Attribute)
        and unwrapped.attr == "targets"
        and _names_dataset(unwrapped.value, made, ctx)
    ):
        return ctx.text(expr)
    if (
        isinstance(unwrapped, ast.Attribute)
        and isinstance(made.func, ast.Name)
        and _names_dataset(unwrapped.value, made, ctx)
        and _served_by_index(made.func.id, unwrapped.attr, ctx)
    ):
        return ctx.text(expr)  # test_set.labels of the file's Dataset, whose __getitem__ returns self.labels[i]
    return None


def _served_by_index(class_name: str, attribute: str, ctx: Context) -> bool:
    """The file's Dataset class returns ``self.<attribute>[i]`` as a label part of every sample (not the first
    part, the input), ``i`` being ``__getitem__``'s index unchanged, and sets ``<attribute>`` only in ``__init__``:
    the attribute holds the labels in the dataset's own order."""
    klass = classes(ctx).get(class_name)
    getitem = klass.method("__getitem__") if klass is not None else None
    if getitem is None or klass.is_unstable(attribute) or attribute not in klass.attributes:  # type: ignore[union-attr]
        return False
    parameters = [a.arg for a in getitem.args.args]
    if len(parameters) != 2:
        return False
    returns = [n.value for n in ast.walk(getitem) if isinstance(n, ast.Return)]
    if len(returns) != 1 or returns[0] is None:
        return False
    served = returns[0].elts if isinstance(returns[0], ast.Tuple) else [returns[0]]
    if isinstance(returns[0], ast.Dict) and None not in returns[0].keys:  # {"x": self.x[i], "y": self.labels[i]}
        served = returns[0].values
    if (
        _counted_by(klass, attribute)  # type: ignore[arg-type]
        and not bindings(getitem, parameters[1])
        and all(_self_item(part, parameters[0], parameters[1]) for part in served)
    ):
        return True  # one entry per sample, and sample i is read at i (``return self.features[i]``)
    if not isinstance(returns[0], ast.Tuple):
        return False
    return any(
        isinstance(part, ast.Subscript)
        and isinstance(part.value, ast.Attribute)
        and isinstance(part.value.value, ast.Name)
        and part.value.value.id == parameters[0]
        and part.value.attr == attribute
        and isinstance(part.slice, ast.Name)
        and part.slice.id == parameters[1]
        for part in returns[0].elts[1:]
    )


def _counted_by(klass: ClassInfo, attribute: str) -> bool:
    """The class's ``__len__`` is ``return len(self.<attribute>)``: the attribute has one entry per sample."""
    length = klass.method("__len__")
    if length is None or len(length.args.args) != 1:
        return False
    returns = [n.value for n in ast.walk(length) if isinstance(n, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0], ast.Call):
        return False
    call = returns[0]
    return (
        isinstance(call.func, ast.Name)
        and call.func.id == "len"
        and len(call.args) == 1
        and not call.keywords
        and _is_self_attribute(call.args[0], length.args.args[0].arg, attribute)
    )


def _self_item(node: ast.AST, self_name: str, index: str) -> bool:
    """``self.<anything>[index]``."""
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == self_name
        and isinstance(node.slice, ast.Name)
        and node.slice.id == index
    )


def _is_self_attribute(node: ast.AST, self_name: str, attribute: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == attribute
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    )


def _names_dataset(expr: ast.expr, made: ast.Call, ctx: Context) -> bool:
    """``expr`` is a name bound exactly once, to the dataset constructor ``made``."""
    if not isinstance(expr, ast.Name):
        return False
    origin = _single_binding(expr, ctx)
    return isinstance(origin, ast.Name) and bound_value(origin, ctx) is made


def _same_variable(a: ast.Name, b: ast.Name, ctx: Context) -> bool:
    """Both names read the same variable, bound once (in their common scope, or at module level and not bound in
    the function that reads it)."""
    first, second = _single_binding(a, ctx), _single_binding(b, ctx)
    return first is not None and first is second


def _single_binding(name: ast.Name, ctx: Context) -> ast.AST | None:
    """The one store of ``name``'s variable, as seen from where it is read; None when there are several, or when
    it is a parameter or a global declared elsewhere."""
    scope = scope_of(name, ctx)
    while True:
        if is_parameter(scope, name.id):
            return None
        stores = bindings(scope, name.id, ctx)
        if stores:
            if len(stores) != 1 or not isinstance(stores[0], ast.Name):
                return None
            holder = parent(stores[0], ctx)
            unpacked = isinstance(holder, ast.Tuple) and isinstance(parent(holder, ctx), ast.Assign)
            if simple_assignment(stores[0], ctx) is None and not unpacked:
                return None
            return stores[0]
        if isinstance(scope, ast.Module):
            return None
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) or scope_of(scope, ctx) is not ctx.tree:
            return None
        scope = ctx.tree
