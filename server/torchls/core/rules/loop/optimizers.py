"""What the training-loop rules can prove about optimizers: which optimizer a ``step()`` call steps, which
modules' parameters an optimizer was built from, and whether two modules provably hold different parameters.

Everything answers "unknown" (None / False) rather than guess.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from torchls.core import control_flow
from torchls.core.rules.base import Analysis, Context
from torchls.core.rules.loop import flow
from torchls.core.rules.loop.modules import classes
from torchls.core.statements import assigned_names
from torchls.core.values import InstanceValue, ModuleValue, Value

_PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})
# Calls that take an optimizer without touching its gradients (besides scaler.step, which steps it).
_SCALER_METHODS = frozenset({"step", "unscale_", "update"})


def is_optimizer(value: Value) -> bool:
    return (
        isinstance(value, InstanceValue)
        and value.qualname.startswith("torch.optim.")
        and ".lr_scheduler." not in value.qualname
        and value.qualname.rsplit(".", 1)[-1][:1].isupper()
    )


def is_scaler(value: Value) -> bool:
    return isinstance(value, InstanceValue) and value.qualname.endswith("GradScaler")


def chain(expr: ast.AST) -> bool:
    """A plain name or attribute chain: ``optimizer``, ``self.opt_g``."""
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return isinstance(expr, ast.Name)


def stepped(call: ast.Call, ctx: Context) -> tuple[ast.expr, bool] | None:
    """The optimizer expression a ``.step(...)`` call steps, and whether it passes a closure (which computes, and
    may clear, the gradients itself): ``optimizer.step()``, ``scaler.step(optimizer)``, ``optimizer.step(closure)``.
    None when the call is not provably an optimizer step (a scheduler's step, an unknown object's step(x))."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "step" and chain(func.value)):
        return None
    receiver = ctx.value(func.value)
    if not call.args and not call.keywords:
        if receiver is None or is_optimizer(receiver):
            return func.value, False
        return None
    if len(call.args) == 1 and not call.keywords and chain(call.args[0]):
        argument = ctx.value(call.args[0])
        if is_scaler(receiver) or (receiver is None and is_optimizer(argument)):
            return call.args[0], False  # scaler.step(optimizer)
    if is_optimizer(receiver):
        return func.value, True  # optimizer.step(closure)
    return None


def zeroed(call: ast.Call) -> ast.expr | None:
    """The receiver of ``x.zero_grad(...)`` when it is a name or attribute chain."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "zero_grad" and chain(func.value):
        return func.value
    return None


def construction(optimizer: ast.expr, ctx: Context) -> ast.Call | None:
    """The ``torch.optim.X(...)`` call that built the optimizer ``optimizer`` refers to, when known."""
    value = ctx.value(optimizer)
    if not is_optimizer(value) or value.origin is None:  # type: ignore[union-attr]
        return None
    node = value.origin.node  # type: ignore[union-attr]
    return node if isinstance(node, ast.Call) else None


def parameter_sources(optimizer_call: ast.Call, ctx: Context | None = None) -> list[ast.expr] | None:
    """The modules whose parameters an optimizer was built from: ``[model]`` for ``SGD(model.parameters())``,
    ``[model.backbone, model.head]`` for param groups that list them; with ``ctx``, also through a name bound once
    to such a list (``dense = list(m.bottom.parameters()) + list(m.top.parameters())``) and comprehensions over
    modules' parameters (``[p for t in m.tables for p in t.parameters()]``). None when the parameters come from
    anything else (a tensor, a list built up elsewhere)."""
    if ctx is not None and isinstance(optimizer_call.func, ast.Name):
        return _helper_sources(optimizer_call, ctx)
    params: ast.expr | None = None
    for keyword in optimizer_call.keywords:
        if keyword.arg == "params":
            params = keyword.value
        elif keyword.arg is None:
            return None
    if params is None:
        if not optimizer_call.args or isinstance(optimizer_call.args[0], ast.Starred):
            return None
        params = optimizer_call.args[0]
    found: list[ast.expr] = []
    return found if _sources(params, found, ctx) and found else None


def _helper_sources(call: ast.Call, ctx: Context) -> list[ast.expr] | None:
    """``make_optimizer(model, lr)``: the file's function that returns ``torch.optim.X(...)`` built from its
    parameters' parameters; the modules are the call's arguments (only a parameter passed whole, by name)."""
    helper = _single_definition(call.func.id, ctx)  # type: ignore[attr-defined]
    if helper is None or (call.keywords and any(k.arg is None for k in call.keywords)):
        return None
    returns = [n for n in control_flow.scope_nodes(helper) if isinstance(n, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0].value, ast.Call):
        return None
    inner = returns[0].value
    if isinstance(inner.func, ast.Name) or not is_optimizer(ctx.value(inner)):
        return None
    sources = parameter_sources(inner, ctx)
    if sources is None or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    parameters = [a.arg for a in [*helper.args.posonlyargs, *helper.args.args, *helper.args.kwonlyargs]]
    given = dict(zip(parameters, call.args, strict=False))
    given.update((k.arg, k.value) for k in call.keywords if k.arg is not None)
    mapped = []
    for source in sources:
        if not (isinstance(source, ast.Name) and source.id in given):
            return None
        mapped.append(given[source.id])
    return mapped


def _single_definition(name: str, ctx: Context) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The module-level function ``name`` when the file defines that name once and nothing else binds it."""
    found = [
        n
        for n in ctx.tree.body
        if (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name)
        or (isinstance(n, ast.Assign | ast.AnnAssign | ast.Import | ast.ImportFrom) and name in assigned_names(n))
    ]
    return found[0] if len(found) == 1 and isinstance(found[0], ast.FunctionDef | ast.AsyncFunctionDef) else None


def _sources(expr: ast.expr, found: list[ast.expr], ctx: Context | None = None, depth: int = 0) -> bool:
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _sources(expr.left, found, ctx, depth) and _sources(expr.right, found, ctx, depth)
    if isinstance(expr, ast.ListComp | ast.GeneratorExp) and isinstance(expr.elt, ast.Name):
        return _comprehension_sources(expr, found)
    if isinstance(expr, ast.Name) and ctx is not None and depth < 3:
        stores = flow.bindings(flow.scope_of(expr, ctx), expr.id, ctx)
        value = flow.bound_value(stores[0], ctx) if len(stores) == 1 and isinstance(stores[0], ast.Name) else None
        return value is not None and _sources(value, found, ctx, depth + 1)
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in _PARAMETER_METHODS and chain(func.value):
            found.append(func.value)
            return True
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in ("list", "tuple", "chain") and not expr.keywords:
            return bool(expr.args) and all(_sources(a, found, ctx, depth) for a in expr.args)
        if name == "filter" and len(expr.args) == 2 and not expr.keywords:
            return _sources(expr.args[1], found, ctx, depth)  # a subset of the same parameters
        return False
    if isinstance(expr, ast.List | ast.Tuple):
        return bool(expr.elts) and all(_sources(e, found, ctx, depth) for e in expr.elts)
    if isinstance(expr, ast.Dict):
        for key, value in zip(expr.keys, expr.values, strict=True):
            if key is None:
                return False
            if isinstance(key, ast.Constant) and key.value == "params":
                return _sources(value, found, ctx, depth)
        return False
    return False


def _comprehension_sources(expr: ast.ListComp | ast.GeneratorExp, found: list[ast.expr]) -> bool:
    """``[p for p in m.parameters() if ...]`` gives ``m``; ``[p for t in m.tables for p in t.parameters()]`` gives
    ``m.tables``: the element is the last loop's variable, over an earlier loop's modules or a module chain."""
    last = expr.generators[-1]
    if not isinstance(last.iter, ast.Call):
        return False
    func = last.iter.func
    if not (isinstance(func, ast.Attribute) and func.attr in _PARAMETER_METHODS and not last.iter.args):
        return False
    target = last.target
    if func.attr == "named_parameters" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        target = target.elts[1]  # [p for n, p in m.named_parameters() if ...]
    if not (isinstance(target, ast.Name) and target.id == expr.elt.id):  # type: ignore[union-attr]
        return False
    owner = func.value
    earlier = [g for g in expr.generators[:-1] if isinstance(g.target, ast.Name) and isinstance(owner, ast.Name)]
    for generator in earlier:
        if generator.target.id == owner.id and chain(generator.iter):  # type: ignore[union-attr,attr-defined]
            found.append(generator.iter)
            return True
    if len(expr.generators) == 1 and chain(owner):
        found.append(owner)
        return True
    return False


def within(inner: str, outer: str) -> bool:
    """``model.head`` is within ``model`` (its parameters are among ``model``'s)."""
    return inner == outer or inner.startswith(outer + ".")


def same_module_within(source: ast.expr, model: ast.expr, ctx: Context) -> bool:
    """``source`` (``model.head`` in ``SGD(model.head.parameters())``) is ``model`` or a path inside it, and
    the two spell the same object: the same text, and the same module construction behind it."""
    text = ctx.text(model)
    if not within(ctx.text(source), text):
        return False
    prefix: ast.expr = source
    while ctx.text(prefix) != text:
        if not isinstance(prefix, ast.Attribute):
            return False
        prefix = prefix.value
    here, there = ctx.value(model), ctx.value(prefix)
    return (
        isinstance(here, ModuleValue)
        and isinstance(there, ModuleValue)
        and here.origin is not None
        and there.origin is not None
        and here.origin.node is there.origin.node
    )


def distinct_modules(a: ast.expr, b: ast.expr, ctx: Context) -> bool:
    """``a`` and ``b`` provably hold no parameter in common: neither is an attribute path inside the other, both
    were built by constructor calls (of torch layers or of the file's own classes) that take no module, and
    none of the layers either one is made of was built by the same call as a layer of the other."""
    text_a, text_b = ctx.text(a), ctx.text(b)
    if within(text_a, text_b) or within(text_b, text_a):
        return False
    if ctx.analysis(ModuleSurgery).found:
        return False  # layers attached after construction: what a module holds is no longer what it was built with
    # Two names each bound once to its own call that builds new layers (``generator = mlp(8, 2)``,
    # ``G, D = mlp(8, 2), mlp(2, 1)``): whatever those calls build, they build it anew. Asked first: two calls of
    # one factory give layers made by the same lines of code, which the parts below cannot tell apart.
    call_a, call_b = _fresh_instance(a, ctx), _fresh_instance(b, ctx)
    if call_a is not None and call_b is not None and call_a is not call_b:
        return True
    parts_a, parts_b = _parts(ctx.value(a), ctx), _parts(ctx.value(b), ctx)
    if parts_a is not None and parts_b is not None:
        return not parts_a & parts_b
    if call_a is not None and call_b is not None:
        return False  # one call bound to both names
    return _distinct_attributes(a, b, ctx)


def _distinct_attributes(a: ast.expr, b: ast.expr, ctx: Context) -> bool:
    """``model.tables`` and ``model.bottom``: two attributes of one instance of the file's class, each set once in
    ``__init__`` to a module built there from its own constructor call (which takes no module)."""
    if not (isinstance(a, ast.Attribute) and isinstance(b, ast.Attribute) and a.attr != b.attr):
        return False
    if not (isinstance(a.value, ast.Name) and isinstance(b.value, ast.Name) and a.value.id == b.value.id):
        return False
    owner = ctx.value(a.value)
    info = classes(ctx).get(owner.user_class) if isinstance(owner, ModuleValue) and owner.user_class else None
    if info is None or any(k.unstable for k in info.chain()):
        return False
    built = []
    for attribute in (a.attr, b.attr):
        layer = info.attribute(attribute)
        node = layer.origin.node if isinstance(layer, ModuleValue) and layer.origin is not None else None
        if not isinstance(node, ast.Call) or not _builds_anew(node, ctx, 0):
            return False
        built.append(node)
    return built[0] is not built[1]


def _fresh_instance(expr: ast.expr, ctx: Context) -> ast.Call | None:
    """The call ``expr`` (a plain name) was bound to, once, when that call builds its modules anew."""
    if not isinstance(expr, ast.Name):
        return None
    stores = flow.bindings(flow.scope_of(expr, ctx), expr.id, ctx)
    if len(stores) != 1 or not isinstance(stores[0], ast.Name):
        return None
    value = flow.bound_value(stores[0], ctx)
    return value if isinstance(value, ast.Call) and _builds_anew(value, ctx, 0) else None


def _builds_anew(call: ast.Call, ctx: Context, depth: int) -> bool:
    """Calling ``call`` makes new modules only: a torch layer, a class or a function of the file (no decorator)
    whose code takes no module as an argument and reads no module kept in a global."""
    arguments = [*call.args, *(k.value for k in call.keywords)]
    if depth > 3 or any(
        isinstance(ctx.value(a), ModuleValue) and not (isinstance(a, ast.Call) and _builds_anew(a, ctx, depth + 1))
        for a in arguments
    ):
        return False  # built around a module that exists elsewhere (nn.Sequential(shared, head)): may share it
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    qualname = ctx.qualify(call.func) or ""
    if qualname.startswith("torch.nn.") and not qualname.endswith(("DataParallel", "DistributedDataParallel")):
        return True
    if not isinstance(call.func, ast.Name):
        return False
    definitions = [n for n in ctx.tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == call.func.id]
    if len(definitions) != 1 or definitions[0].decorator_list:
        return False
    definition = definitions[0]
    if isinstance(definition, ast.ClassDef) and definition.name not in classes(ctx):
        return False
    held = ctx.analysis(GlobalModules).names
    for node in ast.walk(definition):
        if isinstance(node, ast.Global | ast.Nonlocal | ast.Yield | ast.YieldFrom):
            return False
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in held:
            return False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id != definition.name:
            inner = [n for n in ctx.tree.body if isinstance(n, ast.FunctionDef) and n.name == node.func.id]
            if inner and (inner[0].decorator_list or not _builds_anew_body(inner[0], held)):
                return False
    return True


def _builds_anew_body(function: ast.FunctionDef, held: set[str]) -> bool:
    """A helper a constructor calls (``block(cin, cout)``) reads no module kept in a global."""
    return not any(
        isinstance(n, ast.Global | ast.Nonlocal)
        or (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in held)
        for n in ast.walk(function)
    )


def _may_hold_module(value: ast.expr, ctx: Context) -> bool:
    """A module-level value that is or may be a module: a module value, or any call but the few known to make
    something else (``torch.device(...)``, ``math.sqrt(...)``)."""
    if isinstance(ctx.value(value), ModuleValue):
        return True
    for call in (n for n in ast.walk(value) if isinstance(n, ast.Call)):
        qualname = ctx.qualify(call.func) or ""
        if qualname != "torch.device" and qualname.split(".")[0] not in _NO_MODULES:
            return True
    return False


_NO_MODULES = frozenset({"math", "os", "random", "numpy", "argparse", "pathlib"})  # libraries that make no nn.Module


@dataclass(frozen=True, slots=True)
class GlobalModules(Analysis):
    """Module-level names that hold a module (``shared = nn.Linear(4, 4)``): code that reads them may share it.
    It reads the values evaluated when it is first asked."""

    names: frozenset[str]

    @classmethod
    def compute(cls, ctx: Context) -> GlobalModules:
        names: set[str] = set()
        for statement in ctx.tree.body:
            if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                if _may_hold_module(statement.value, ctx):
                    names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        return cls(frozenset(names))


def _parts(value: Value, ctx: Context, depth: int = 0) -> set[int] | None:
    """The construction calls (by id) of a module and of every layer inside it; None when some part is not known
    (built around a module passed in, a layer the interpreter could not follow, a wrapper)."""
    if depth > 6 or not isinstance(value, ModuleValue) or value.origin is None:
        return None
    node = value.origin.node
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    qualname = ctx.qualify(func) or ""
    info = classes(ctx).get(value.user_class) if value.user_class is not None else None
    if info is None and not qualname.startswith("torch.nn."):
        return None
    if qualname.endswith(("DataParallel", "DistributedDataParallel")):
        return None
    if info is None and short_name(value) in _CONTAINERS:
        elements = node.args[0].elts if len(node.args) == 1 and isinstance(node.args[0], ast.List) else node.args
        if node.keywords or any(isinstance(e, ast.Starred) for e in elements) or len(elements) != len(value.children):
            return None  # layers the interpreter did not list one by one
        arguments: list[ast.expr] = []  # the layers are the children, followed below
    else:
        arguments = [*node.args, *(k.value for k in node.keywords)]
    for argument in arguments:
        for inner in ast.walk(argument):
            if isinstance(inner, ast.Starred) or (
                isinstance(inner, ast.Name | ast.Attribute | ast.Call) and isinstance(ctx.value(inner), ModuleValue)
            ):
                return None  # built around another module: it may share that module's parameters
    found = {id(node)}
    inner_parts: list[Value] = list(value.children)
    if info is not None:
        family = info.chain()
        table = info.instance_attributes(value.args)
        tables = [table] if table is not None else [k.attributes for k in family]
        if any(k.unstable for k in family):
            return None  # attributes set outside __init__ (or more than once): the layers may change
        called = {n for n in _called_self_attributes(family) if info.method(n) is None}
        for attributes in tables:
            for name, part in attributes.items():
                if isinstance(part, ModuleValue):
                    inner_parts.append(part)
                elif name in called:
                    return None  # a layer the interpreter does not know
        if any(name in called and not any(name in t for t in tables) for name in called):
            return None
    for part in inner_parts:
        parts = _parts(part, ctx, depth + 1) if part is not None else None
        if parts is None:
            return None
        found |= parts
    return found


_ATTACHING = frozenset({"add_module", "register_module", "append", "extend", "insert"})


@dataclass(frozen=True, slots=True)
class ModuleSurgery(Analysis):
    """Whether the file attaches layers to modules after building them: ``model.head = nn.Linear(...)`` outside
    the class, ``seq.append(layer)``, ``add_module``, ``setattr`` (see ``_attaches``)."""

    found: bool

    @classmethod
    def compute(cls, ctx: Context) -> ModuleSurgery:
        return cls(any(_attaches(node, ctx) for node in ast.walk(ctx.tree)))


def _attaches(node: ast.AST, ctx: Context) -> bool:
    """Read from the syntax alone (the whole file, whatever has been evaluated so far)."""
    if isinstance(node, ast.Assign):
        return _builds_module(node.value, ctx) and any(
            isinstance(t, ast.Attribute | ast.Subscript) and flow.root_name(t) not in ("self", None)
            for t in node.targets
        )
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == "setattr"
    if not (isinstance(func, ast.Attribute) and func.attr in _ATTACHING):
        return False
    if func.attr in ("append", "extend", "insert") and _plain_list(func.value, node, ctx):
        return False  # `layers.append(act)` while building a list for nn.Sequential(*layers)
    return func.attr in ("add_module", "register_module") or any(_builds_module(a, ctx) for a in node.args)


def _plain_list(receiver: ast.expr, at: ast.AST, ctx: Context) -> bool:
    """``receiver`` is a name its scope binds only to list displays or ``list(...)`` calls."""
    if not isinstance(receiver, ast.Name):
        return False
    stores = flow.bindings(flow.scope_of(at, ctx), receiver.id, ctx)
    values = [flow.simple_assignment(s, ctx) if isinstance(s, ast.Name) else None for s in stores]
    return bool(values) and all(
        isinstance(v, ast.List | ast.ListComp)
        or (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "list")
        for v in values
    )


def _builds_module(expr: ast.expr, ctx: Context) -> bool:
    """A constructor call of a torch layer or of one of the file's classes, or a name holding a module."""
    if isinstance(expr, ast.Name | ast.Attribute):
        return True  # `model.head = head`: may well be a module
    if not isinstance(expr, ast.Call):
        return False
    qualname = ctx.qualify(expr.func) or ""
    if qualname.startswith("torch.nn.") or qualname.startswith("torchvision."):
        return True
    return isinstance(expr.func, ast.Name) and expr.func.id in classes(ctx)


_CONTAINERS = frozenset({"Sequential", "ModuleList"})


def short_name(module: ModuleValue) -> str:
    return module.qualname.rsplit(".", 1)[-1]


def _called_self_attributes(family: list) -> set[str]:
    """Attributes a class calls as ``self.x(...)`` (its layers), in any of its methods."""
    found = set()
    for klass in family:
        for node in ast.walk(klass.node):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"
            ):
                found.add(node.func.attr)
    return found


def loop_body_nodes(loop: ast.For | ast.AsyncFor | ast.While) -> Iterator[ast.AST]:
    """Every node of the loop body (not its ``else``, iterable or target), in its own scope."""
    for statement in loop.body:
        yield statement
        yield from control_flow.walk_scope(statement)


def stepping_and_zeroing_functions(ctx: Context) -> tuple[frozenset[str], frozenset[str]]:
    """Names of the file's functions and methods whose body steps something (any ``.step(...)``) and of those that
    clear gradients (``zero_grad``, ``.grad = ...``, ``.grad.zero_()``), directly or through each other."""
    helpers = ctx.analysis(TrainingHelpers)
    return helpers.stepping, helpers.zeroing


@dataclass(frozen=True, slots=True)
class TrainingHelpers(Analysis):
    """The file's functions and methods that step something and those that clear gradients, by name."""

    stepping: frozenset[str]
    zeroing: frozenset[str]

    @classmethod
    def compute(cls, ctx: Context) -> TrainingHelpers:
        steps: set[str] = set()
        zeroes: set[str] = set()
        calls: dict[str, set[str]] = {}
        for node in ctx.analysis(flow.FileFunctions).definitions:
            called = calls.setdefault(node.name, set())
            for inner in ast.walk(node):
                if isinstance(inner, ast.Attribute):
                    if inner.attr == "step":
                        steps.add(node.name)
                    elif _clears_gradients(inner) and not _clears_a_local_copy(inner, ctx):
                        zeroes.add(node.name)
                if isinstance(inner, ast.Call):
                    func = inner.func
                    name = (
                        func.id
                        if isinstance(func, ast.Name)
                        else func.attr
                        if isinstance(func, ast.Attribute)
                        else None
                    )
                    if name:
                        called.add(name)
        for found in (steps, zeroes):
            changed = True
            while changed:
                changed = False
                for name, called in calls.items():
                    if name not in found and called & found:
                        found.add(name)
                        changed = True
        return cls(frozenset(steps), frozenset(zeroes))


def _clears_a_local_copy(node: ast.Attribute, ctx: Context) -> bool:
    """``ref.zero_grad`` where ``ref`` is a local variable of a function, bound once to a copy made there
    (``ref = copy.deepcopy(model)``) or to modules built anew: it clears no gradient that lives outside the call."""
    if node.attr != "zero_grad" or not isinstance(node.value, ast.Name):
        return False
    name = node.value.id
    scope = flow.scope_of(node, ctx)
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) or flow.is_parameter(scope, name):
        return False
    stores = flow.bindings(scope, name, ctx)
    if len(stores) != 1 or not isinstance(stores[0], ast.Name):
        return False
    value = flow.bound_value(stores[0], ctx)
    if not isinstance(value, ast.Call):
        return False
    return ctx.qualify(value.func) == "copy.deepcopy" or _builds_anew(value, ctx, 0)


def _clears_gradients(node: ast.Attribute) -> bool:
    """``x.zero_grad``, ``p.grad = ...`` / ``del p.grad``, ``p.grad.zero_()``."""
    if node.attr == "zero_grad":
        return True
    if node.attr == "grad" and isinstance(node.ctx, ast.Store | ast.Del):
        return True
    return node.attr == "zero_" and isinstance(node.value, ast.Attribute) and node.value.attr == "grad"


def called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def passes(call: ast.Call, names: set[str]) -> bool:
    """Whether the call hands an object rooted at one of ``names`` to its callee (as an argument)."""
    arguments = [a.value if isinstance(a, ast.Starred) else a for a in call.args] + [k.value for k in call.keywords]
    return any(flow.root_name(a) in names for a in arguments if isinstance(a, ast.Name | ast.Attribute))


def is_scaler_call(call: ast.Call, ctx: Context) -> bool:
    """``scaler.step(opt)``, ``scaler.unscale_(opt)``, ``scaler.update()`` on a GradScaler (or a receiver
    named like one when its value is unknown)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in _SCALER_METHODS):
        return False
    value = ctx.value(func.value)
    if value is not None:
        return is_scaler(value)
    return isinstance(func.value, ast.Name | ast.Attribute) and "scaler" in ctx.text(func.value).lower()
