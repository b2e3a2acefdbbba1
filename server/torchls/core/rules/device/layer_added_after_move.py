from __future__ import annotations

import ast
from dataclasses import dataclass, field

from torchls.core import control_flow
from torchls.core.findings import Fix, Related, Severity
from torchls.core.rules.base import Analysis, Context, Rule
from torchls.core.rules.device import common
from torchls.core.statements import assigned_names
from torchls.core.values import DeviceValue, Literal, ModuleValue, parse_device

# Module methods that move a model (or may: ``apply`` runs any function on every submodule, ``type`` may name a
# cuda type). After one of them the rule cannot tell where the new layer is.
_MOVING_METHODS = frozenset({"to", "cuda", "cpu", "xpu", "mps", "ipu", "to_empty", "apply", "type"})
# Module methods that neither move the model nor run it.
_NEUTRAL_METHODS = frozenset(
    """
    parameters named_parameters buffers named_buffers children named_children modules named_modules train eval
    state_dict load_state_dict requires_grad_ zero_grad register_forward_hook register_forward_pre_hook
    register_full_backward_hook half float double bfloat16 get_submodule get_parameter extra_repr
    """.split()
)
_RUNNING_METHODS = frozenset({"forward", "__call__"})
# Builtins that only look at their argument.
_NEUTRAL_BUILTINS = frozenset({"print", "repr", "str", "isinstance", "hasattr", "getattr", "type", "id", "len"})
# The parts torchvision/timm classifiers replace for fine-tuning and always run in ``forward``.
_FACTORY_HEADS = frozenset({"fc", "classifier", "head", "heads", "last_linear", "conv1", "features"})
_FUNCTIONS = ast.FunctionDef | ast.AsyncFunctionDef

USE, MOVE, UNKNOWN, NEUTRAL = "use", "move", "unknown", "neutral"
RETURN = "return"  # ``return model``: what happens next is up to the caller


class LayerAddedAfterMove(Rule):
    """模型已经移到 GPU 之后才给它换上（或加上）新层，新层的参数留在 CPU 上，之后却直接调用了模型。

    **为什么是问题**：`model.to(device)` / `model.cuda()` 只移动**调用那一刻**模型里已有的参数和缓冲区；
    之后再赋值的 `model.fc = nn.Linear(512, 10)` 是新建在 CPU 上的层，不会自动跟过去。微调预训练模型时
    先移设备、再换分类头是很常见的顺序，结果前向传播走到新层时报 `Expected all tensors to be on the same
    device` 或 `mat1 and mat2 must be on the same device`。用 `torch.device("cuda" if torch.cuda.is_available()
    else "cpu")` 的代码在 CPU 机器上一切正常，换到 GPU 机器才出错。

    本规则只在能证明以下几点时报告：`model` 是一个模块（文件里的模型类、`nn.Sequential`，或
    torchvision/timm/transformers 的模型工厂的结果）；在同一个函数（或脚本）里，赋值之前每条路径都经过一次移到
    可能是 GPU 的设备的调用；新值是就地新建、带参数的层（没有 `device=`、`.to(...)`）；换掉的部分确实会被
    `forward` 用到（文件里的模型类的 `forward` 等方法读了 `self.<属性>`、`nn.Sequential` 的层、或者模型工厂
    的 `fc`/`classifier`/`head` 等分类头）；并且赋值之后先调用了模型（或新层本身），中间没有再移动模型，也没有把
    模型交给不认识的函数。模型被传给文件里的函数时，会看那个函数先移动还是先调用它。
    换层写在文件里的辅助函数里（`def replace_head(model, n)`）时，看调用它的那一次：传进来的模型在调用之前已经
    移过设备，函数把模型返回（或就地改好）之后，调用方先调用了模型；文件里的函数建好模型、移好设备、换好层再返回
    时，同样看调用方接下来做什么。

    **示例**
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Backbone().to(device)
    model.fc = nn.Linear(512, 10)     # 新层在 CPU 上
    logits = model(images.to(device))
    ```

    **改正**：先换层再移动模型（`model.fc = ...` 写在 `model.to(device)` 之前），或者之后再调用一次
    `model.to(device)`，或者新建时就移过去：`model.fc = nn.Linear(512, 10).to(device)`。

    **自动修复**：安全：之前移动模型用的是 `.cuda()`、设备字符串，或在此之前无条件赋值过一次的设备变量时，
    给新建的层加上同样的 `.cuda()` / `.to(...)`，让它和模型其他部分在同一个设备上；其他情况不提供修复。
    """

    code = "TL209"
    raises = True
    requires_text = (".to(", ".cuda(")
    name = "layer-added-after-move"
    severity = Severity.ERROR
    kb_entry = "torch.nn.Module.to"
    node_types = (ast.Assign,)
    fixable = True

    def visit(self, node: ast.Assign, ctx: Context) -> None:
        if common.default_device_may_change(ctx):
            return
        layer = ctx.value(node.value)
        if not _new_layer(node.value, layer, ctx):
            return
        scope = _scope_of(node, ctx)
        for target in node.targets:
            path = _path(target)
            if path is None:
                continue
            root = path[0]
            assert isinstance(root, ast.Name)
            if root.id in ("self", "cls"):
                continue
            move = _previous_move(root.id, node, scope, ctx)
            caller = None
            if move is None:
                caller = _moved_by_caller(root.id, node, scope, ctx)
                if caller is None:
                    continue
                move = caller[0]
            if not _replaces_a_running_part(root, path, node, ctx):
                continue
            prefixes = {_norm(ctx.text(part)) for part in path[1:]}
            fate, where = _fate(root.id, scope, node, prefixes, ctx, depth=0)
            if fate in (RETURN, NEUTRAL) and isinstance(scope, _FUNCTIONS):
                # the helper hands the model back (or changed it in place): what its caller does next
                calls = [caller[1]] if caller is not None else _calls_of(scope, ctx)
                fate, where = _after_calls(calls, scope, root.id, prefixes, fate, ctx)
            if fate != USE or where is None:
                continue
            device = caller[2] if caller is not None else common.move_device(ctx.call(move), ctx)[1]
            layer_text = common.short(ctx.text(node.value))
            ctx.report(
                target,
                common.zh(
                    f"`{common.short(ctx.text(root))}` 已经移到了",
                    common.describe(device) if common.accelerated(device) else "设备",
                    f"上，之后才赋值的 `{layer_text}` 的参数还在 CPU 上：调用模型时会报设备不一致",
                ),
                fix=_fix(node.value, move, ctx),
                related=(
                    Related(ctx.span(move), common.zh("模型在这里移到了设备上（只移动了当时已有的参数）")),
                    Related(ctx.span(where), "之后在这里调用了模型，中间没有再移动它"),
                ),
            )
            return


# ---------------------------------------------------------------------------------------------- the new layer


def _new_layer(expr: ast.expr, layer: object, ctx: Context) -> bool:
    """A layer with parameters built right here, on the default device (the CPU)."""
    if not isinstance(expr, ast.Call) or not isinstance(layer, ModuleValue) or layer.device is not None:
        return False
    if layer.origin is None or layer.origin.node is not expr:
        return False  # not this constructor call: an existing layer, maybe moved already
    if not common.has_parameters(layer, ctx):
        return False
    if layer.user_class is not None and common.handles_devices(layer.user_class, ctx):
        return False  # the class places its own parameters
    return not _mentions_device(expr, ctx)


def _mentions_device(expr: ast.expr, ctx: Context) -> bool:
    """``device=...``, ``**factory_kwargs``, a move, or a device value anywhere in the constructor call."""
    for node in ast.walk(expr):
        if isinstance(node, ast.keyword) and (node.arg is None or node.arg == "device"):
            return True
        if isinstance(node, ast.Attribute) and node.attr in _MOVING_METHODS:
            return True
        if isinstance(node, ast.Name | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.attr
            lowered = name.lower()
            if "device" in lowered or "cuda" in lowered or "gpu" in lowered:
                return True
        if isinstance(node, ast.expr):
            value = ctx.value(node)
            if isinstance(value, DeviceValue) or (
                isinstance(value, Literal) and parse_device(value) not in (None, "cpu")
            ):
                return True
    return False


# ---------------------------------------------------------------------------------------------- the model


def _path(target: ast.expr) -> list[ast.expr] | None:
    """``model.classifier[6]`` -> [model, model.classifier, model.classifier[6]]: a chain of attributes and
    subscripts on a plain name, with at least one attribute or subscript."""
    chain: list[ast.expr] = []
    node = target
    while isinstance(node, ast.Attribute | ast.Subscript):
        chain.append(node)
        node = node.value
    if not chain or not isinstance(node, ast.Name):
        return None
    chain.append(node)
    return chain[::-1]


def _norm(text: str) -> str:
    return "".join(text.split())


def _replaces_a_running_part(root: ast.Name, path: list[ast.expr], node: ast.Assign, ctx: Context) -> bool:
    """The model is provably a module, and the part assigned is one its ``forward`` runs."""
    model = ctx.value(root)
    first = path[1]
    if isinstance(model, ModuleValue):
        if model.user_class is not None:
            if not isinstance(first, ast.Attribute):
                return False
            return _class_reads(model.user_class, first.attr, ctx)
        # nn.Sequential runs every submodule it holds, the ones assigned later too
        return model.qualname == "torch.nn.Sequential"
    if model is not None or not _from_factory(root, ctx):
        return False
    if any(isinstance(part, ast.Subscript) for part in path):
        return True  # replacing an item of a container the model already has
    if isinstance(first, ast.Attribute) and first.attr in _FACTORY_HEADS:
        return True
    # model.fc = nn.Linear(model.fc.in_features, 10): the part exists already
    first_text = _norm(ctx.text(first))
    return any(
        isinstance(inner, ast.Attribute) and _norm(ctx.text(inner)) == first_text for inner in ast.walk(node.value)
    )


def _class_reads(class_name: str, attribute: str, ctx: Context) -> bool:
    """``self.<attribute>`` is read by a method of the class (other than ``__init__``)."""
    for klass in common.class_chain(class_name, ctx):
        for statement in klass.node.body:
            if not isinstance(statement, _FUNCTIONS) or statement.name == "__init__":
                continue
            for inner in ast.walk(statement):
                if (
                    isinstance(inner, ast.Attribute)
                    and inner.attr == attribute
                    and isinstance(inner.ctx, ast.Load)
                    and isinstance(inner.value, ast.Name)
                    and inner.value.id == "self"
                ):
                    return True
    return False


def _from_factory(root: ast.Name, ctx: Context) -> bool:
    """``model = resnet18(...)`` (maybe followed by ``.to(...)``/``.eval()``): a pretrained-model factory."""
    value: ast.expr | None = common.reaching_value(root, ctx)
    for _ in range(4):
        while (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in (_MOVING_METHODS | _NEUTRAL_METHODS)
        ):
            value = value.func.value
        if not isinstance(value, ast.Name):
            break
        value = common.reaching_value(value, ctx)  # model = model.to(device)
    if not isinstance(value, ast.Call):
        return False
    qualname = ctx.qualify(value.func) or ""
    if qualname.startswith("torchvision.models."):
        return qualname.rsplit(".", 1)[-1][:1].islower()
    if qualname in ("timm.create_model", "timm.models.create_model"):
        return True
    if qualname.startswith("transformers.") and qualname.endswith(".from_pretrained"):
        return "Model" in qualname.split(".")[-2]
    return False


# ---------------------------------------------------------------------------------------------- events


def _scope_of(node: ast.AST, ctx: Context) -> ast.AST:
    function = control_flow.enclosing_function(node, ctx.parents())
    return function if function is not None else ctx.tree


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _end(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


def _previous_move(name: str, node: ast.Assign, scope: ast.AST, ctx: Context) -> ast.Call | None:
    """The move of ``name`` to a possibly-GPU device that the assignment follows on every path.

    Walking back from the assignment, the first thing that happens to the model must be that move: a model
    rebound, handed to a function, or moved somewhere else first proves nothing. Before the move, back to where
    the name is bound, the model must not have been aliased or handed to anything that could keep it.
    """
    start = _position(node)
    found: ast.Call | None = None
    for event in reversed(_events(name, scope, ctx)):
        if _position(event) >= start:
            continue
        if isinstance(event, ast.Call):
            return None  # a function of the file that reads the model itself
        kind, where = _classify(event, ctx, prefixes=set(), depth=0, backwards=True)
        if found is not None:
            if not isinstance(event.ctx, ast.Load):
                return found  # where the name is bound
            if kind == UNKNOWN:
                return None
            continue
        if kind in (NEUTRAL, USE):
            if not isinstance(event.ctx, ast.Load):
                return None
            continue
        if kind != MOVE or not isinstance(where, ast.Call):
            return None
        is_move, device, named = common.move_device(ctx.call(where), ctx)
        if not is_move or not (common.accelerated(device) or (device is None and named)):
            return None
        statement = control_flow.statement_of(where, ctx.parents())
        if statement is None or not control_flow.dominates_in_block(statement, node, ctx.parents()):
            return None
        found = where
        if not isinstance(event.ctx, ast.Load):
            return found  # model = Net().to(device)
    return found


def _fate(
    name: str, scope: ast.AST, after: ast.AST, prefixes: set[str], ctx: Context, depth: int
) -> tuple[str, ast.AST | None]:
    """What happens first to the model ``name`` after ``after``: used (run), moved, something unknown, or nothing."""
    end = _end(after) if after is not scope else (0, 0)
    for event in _events(name, scope, ctx):
        if _position(event) < end:
            continue
        if isinstance(event, ast.Call):
            return UNKNOWN, None
        kind, where = _classify(event, ctx, prefixes, depth, backwards=False)
        if kind != NEUTRAL:
            return kind, where
    return NEUTRAL, None


def _events(name: str, scope: ast.AST, ctx: Context) -> list[ast.Name | ast.Call]:
    """The mentions of ``name`` in ``scope`` and the calls of the file's functions that read a global ``name``
    themselves, in source order (nested functions and classes left out: defining them runs nothing)."""
    users = _global_users(name, ctx)
    found: list[ast.Name | ast.Call] = []
    for inner in control_flow.walk_pruned(scope):
        if isinstance(inner, ast.Name) and inner.id == name:
            found.append(inner)
        elif isinstance(inner, ast.Call) and (users[0] or users[1]):
            func = inner.func
            if (isinstance(func, ast.Name) and func.id in users[0]) or (
                isinstance(func, ast.Attribute) and func.attr in users[1]
            ):
                found.append(inner)
    return sorted(found, key=_position)


@dataclass(slots=True)
class GlobalUsers(Analysis):
    """For a global name: the file's functions and methods that read it themselves (``_global_users``), found the
    first time a rule asks about the name."""

    by_name: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)


def _global_users(name: str, ctx: Context) -> tuple[set[str], set[str]]:
    """The file's functions and methods that read a global ``name`` themselves (not a parameter or a local)."""
    cache = ctx.analysis(GlobalUsers).by_name
    if name not in cache:
        functions: set[str] = set()
        methods: set[str] = set()
        table = ctx.parents()
        for function in ast.walk(ctx.tree):
            if not isinstance(function, _FUNCTIONS) or name in common.bound_names(function):
                continue
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(function)):
                (methods if isinstance(table.get(function), ast.ClassDef) else functions).add(function.name)
        cache[name] = (functions, methods)
    return cache[name]


def _classify(
    occurrence: ast.Name, ctx: Context, prefixes: set[str], depth: int, backwards: bool
) -> tuple[str, ast.AST | None]:
    """What this mention of the model does to it: USE (runs it), MOVE (the move call), UNKNOWN or NEUTRAL."""
    if not isinstance(occurrence.ctx, ast.Load):
        if backwards:
            statement = control_flow.statement_of(occurrence, ctx.parents())
            if isinstance(statement, ast.Assign) and _is_move_call(statement.value):
                return MOVE, statement.value  # model = Net().to(device)
        return UNKNOWN, None
    table = ctx.parents()
    parent = table.get(occurrence)
    if isinstance(parent, ast.Call) and parent.func is occurrence:
        return USE, parent
    if isinstance(parent, ast.Return) and not backwards:
        return RETURN, parent
    if isinstance(parent, ast.Call | ast.keyword):
        call = parent if isinstance(parent, ast.Call) else table.get(parent)
        if not isinstance(call, ast.Call):
            return UNKNOWN, None
        return _passed(occurrence, call, ctx, depth)
    if not (isinstance(parent, ast.Attribute | ast.Subscript) and parent.value is occurrence):
        return UNKNOWN, None  # aliased, returned, stored, put in a container
    # climb the chain model.a[0].b
    top: ast.expr = parent
    while True:
        above = table.get(top)
        if isinstance(above, ast.Attribute | ast.Subscript) and above.value is top:
            top = above
            continue
        break
    above = table.get(top)
    if isinstance(top, ast.Attribute | ast.Subscript) and not isinstance(top.ctx, ast.Load):
        return (UNKNOWN, None) if _norm(ctx.text(top)) in prefixes else (NEUTRAL, None)
    if not (isinstance(above, ast.Call) and above.func is top):
        if isinstance(above, ast.Call) and not backwards and _norm(ctx.text(top)) in prefixes:
            return UNKNOWN, None  # the new layer itself handed to something
        return NEUTRAL, None  # model.fc.in_features, model.fc.weight
    if _norm(ctx.text(top)) in prefixes:
        return USE, above  # model.fc(x), model.classifier(x)
    method = top.attr if isinstance(top, ast.Attribute) else None
    if method in _MOVING_METHODS:
        if top.value is occurrence:
            return (MOVE, above) if method in ("to", "cuda", "cpu") or not backwards else (UNKNOWN, None)
        return UNKNOWN, None  # a part of the model moved
    if top.value is not occurrence:
        return NEUTRAL, None  # model.fc.weight.data.normal_(), model.features(x)
    if method in _RUNNING_METHODS:
        return USE, above
    if method in _NEUTRAL_METHODS:
        return NEUTRAL, None
    return UNKNOWN, None  # a method of the model we do not know


def _is_move_call(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in ("to", "cuda")


def _passed(occurrence: ast.Name, call: ast.Call, ctx: Context, depth: int) -> tuple[str, ast.AST | None]:
    """The model handed to a call: a builtin that only looks, or a function of the file that we read in turn."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in _NEUTRAL_BUILTINS and func.id not in ctx.imports:
        return NEUTRAL, None
    if not isinstance(func, ast.Name) or depth >= 2:
        return UNKNOWN, None
    function = _file_function(func.id, ctx)
    if function is None:
        return UNKNOWN, None
    parameter = _parameter_for(occurrence, call, function)
    if parameter is None:
        return UNKNOWN, None
    fate, _where = _fate(parameter, function, function, set(), ctx, depth + 1)
    if fate == USE:
        return USE, call
    return (NEUTRAL, None) if fate == NEUTRAL else (UNKNOWN, None)


def _file_function(name: str, ctx: Context) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The one module-level function of the file called ``name`` (nothing else binds that name)."""
    found = [s for s in ctx.tree.body if isinstance(s, _FUNCTIONS) and s.name == name]
    if len(found) != 1 or name in ctx.imports:
        return None
    return found[0]


def _parameter_for(
    occurrence: ast.Name, call: ast.Call, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> str | None:
    arguments = function.args
    if arguments.vararg is not None or arguments.kwarg is not None:
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    positional = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
    for index, arg in enumerate(call.args):
        if arg is occurrence:
            return positional[index] if index < len(positional) else None
    for keyword in call.keywords:
        if keyword.value is occurrence:
            names = positional[len(arguments.posonlyargs) :] + [a.arg for a in arguments.kwonlyargs]
            return keyword.arg if keyword.arg in names else None
    return None


# ---------------------------------------------------------------------------------------------- helpers


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    arguments = function.args
    return [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]


def _never_rebound(name: str, function: ast.AST) -> bool:
    return not any(
        isinstance(inner, ast.Name) and inner.id == name and not isinstance(inner.ctx, ast.Load)
        for inner in control_flow.walk_pruned(function)
    )


def _helper(scope: ast.AST, ctx: Context) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """``scope`` when it is a module-level function of the file that nothing else binds (so its calls are known)."""
    if not isinstance(scope, _FUNCTIONS):
        return None
    return scope if _file_function(scope.name, ctx) is scope else None


def _moved_by_caller(
    name: str, node: ast.Assign, scope: ast.AST, ctx: Context
) -> tuple[ast.AST, ast.Call, str | None] | None:
    """For ``model.fc = nn.Linear(...)`` in a helper ``def replace_head(model, ...)`` evaluated for one call: the
    model that call passes was moved to a possibly-GPU device before it, and the helper did nothing else to it
    first. Returns (the move, or the call when the move is not at hand; the call; the device)."""
    function = _helper(scope, ctx)
    if function is None or name not in _parameters(function) or not _never_rebound(name, function):
        return None
    call = ctx.calls_in_progress[-1] if ctx.calls_in_progress else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == function.name):
        return None
    start = _position(node)
    for event in _events(name, scope, ctx):
        if _position(event) >= start:
            break
        if isinstance(event, ast.Call) or _classify(event, ctx, set(), 0, backwards=True)[0] not in (NEUTRAL, USE):
            return None
    argument = _argument_for(name, call, function)
    if argument is None:
        return None
    model = ctx.value(_root_load(name, node))
    if isinstance(model, ModuleValue) and common.accelerated(model.device):
        move = common.module_device(model, call, ctx)[1]
        return (move if isinstance(move, ast.Call) else call), call, model.device
    if isinstance(argument, ast.Name):
        statement = control_flow.statement_of(call, ctx.parents())
        caller_scope = _scope_of(call, ctx)
        if isinstance(statement, ast.stmt):
            move = _previous_move(argument.id, statement, caller_scope, ctx)
            if move is not None:
                return move, call, common.move_device(ctx.call(move), ctx)[1]
    return None


def _root_load(name: str, node: ast.Assign) -> ast.Name | None:
    for target in node.targets:
        path = _path(target)
        if path is not None and isinstance(path[0], ast.Name) and path[0].id == name:
            return path[0]
    return None


def _argument_for(parameter: str, call: ast.Call, function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    """The expression ``call`` passes for ``parameter`` (None when it is left to a default or not known)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return keyword.value
    positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    if parameter in positional and positional.index(parameter) < len(call.args):
        return call.args[positional.index(parameter)]
    return None


def _calls_of(function: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context) -> list[ast.Call]:
    """The calls of the module-level ``function`` in the file, in source order (none when its name is shared)."""
    if _helper(function, ctx) is None:
        return []
    return [
        inner
        for inner in ast.walk(ctx.tree)
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == function.name
    ]


def _after_calls(
    calls: list[ast.Call],
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    name: str,
    prefixes: set[str],
    fate: str,
    ctx: Context,
) -> tuple[str, ast.AST | None]:
    """What happens first to the model after a call of ``function`` that returned it (``fate`` RETURN) or changed
    the one passed in place (NEUTRAL, ``name`` a parameter): USE at the first call whose caller runs it next."""
    passed_in = name in _parameters(function) and _never_rebound(name, function)
    if fate == NEUTRAL and not passed_in:
        return fate, None
    for call in calls:
        statement = control_flow.statement_of(call, ctx.parents())
        scope = _scope_of(call, ctx)
        argument = _argument_for(name, call, function) if passed_in else None
        kept = argument.id if isinstance(argument, ast.Name) else None  # the caller's own name for the model
        if (
            fate == RETURN
            and isinstance(statement, ast.Assign)
            and statement.value is call
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            follower = statement.targets[0].id
            if kept is not None and kept != follower and _fate(kept, scope, statement, set(), ctx, 1)[0] != NEUTRAL:
                continue  # two names for the model afterwards: not followed
        elif (
            kept is not None
            and isinstance(statement, ast.Expr | ast.Assign)
            and statement.value is call
            and kept not in assigned_names(statement)
        ):
            follower = kept  # changed in place (the result dropped or something else)
        else:
            continue
        renamed = {follower + p[len(name) :] for p in prefixes if p.startswith(name)}
        after, where = _fate(follower, scope, statement, renamed, ctx, depth=1)
        if after == USE and where is not None:
            return USE, where
    return fate, None


# ---------------------------------------------------------------------------------------------- the fix


def _fix(layer: ast.expr, move: ast.Call, ctx: Context) -> Fix | None:
    """Move the new layer the way the model was moved, when that way can be spelled here."""
    suffix = common.move_suffix(move, layer, ctx)
    if suffix is None:
        return None
    shown = common.short(ctx.text(layer) + suffix)
    return Fix(f"把新层移到模型所在的设备：`{shown}`", (ctx.insert_after(layer, suffix),))
