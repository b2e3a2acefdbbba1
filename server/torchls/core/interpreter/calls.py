"""Calls: what a call's arguments are, and which job evaluates it, by what is called.

A torch function (by its qualified name), a tensor's or a module's method, a layer or model being applied, the
file's own classes and functions, a few Python builtins whose result follows from literal arguments, and
``argparse`` parsers (whose defaults give the sizes a script runs with). What is not modelled falls back on the
facts tables (:mod:`torchls.core.facts`): a tensor, some tensors, or unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from torchls.core import facts
from torchls.core.facts import CREATION_FUNCTIONS, DTYPE_METHODS
from torchls.core.interpreter.base import _UNROLL_ITEMS, Env, InterpreterBase, log
from torchls.core.interpreter.class_info import ClassInfo
from torchls.core.interpreter.known_values import _int, _known_items, _literal
from torchls.core.interpreter.numpy_arrays import array_shape, is_array
from torchls.core.interpreter.torch_tables import (
    PROVENANCE_METHODS,
    SHAPE_METHODS,
    TENSOR_ONLY_CONVERSIONS,
)
from torchls.core.rules.base import CallInfo
from torchls.core.values import (
    DictValue,
    InstanceValue,
    Literal,
    ModuleValue,
    Number,
    OfClass,
    Origin,
    SequenceOf,
    TensorValue,
    TupleValue,
    Value,
)

# Methods that change a dict in place: afterwards its keys and values are not what the code spelled out.
_DICT_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear"})
# Methods that change a list's items or length in ways the interpreter does not follow (append and extend of a
# list whose items are known are followed: _grow_list).
_LIST_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"})

# max(x) is one tensor, max(x, 1) a (values, indices) pair: neither a tensor nor a sequence for certain.
_ONE_OR_PAIR = frozenset({"max", "min", "median", "nanmedian"})


class CallsMixin(InterpreterBase):
    """Evaluates calls: builds :class:`CallInfo` and dispatches on the callee."""

    def _call(self, node: ast.Call, env: Env) -> Value:
        info = CallInfo(node)
        func = node.func
        info.qualname = self.ctx.qualify(func)
        if info.qualname is None:
            if isinstance(func, ast.Attribute):
                callee = self.expr(func, env)  # evaluates the receiver too
                if isinstance(callee, ModuleValue):
                    info.module = callee  # self.fc(x): calling a layer held in an attribute
                else:
                    info.receiver = self.ctx.values.get(func.value)
                    info.method = func.attr
                    if func.attr == "size" and isinstance(info.receiver, TensorValue):
                        info.receiver = self._named_tensor(func.value, node, info.receiver, env)
            else:
                callee = self.expr(func, env)
                if isinstance(callee, ModuleValue):
                    info.module = callee
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                spliced = self.expr(arg.value, env)
                if isinstance(spliced, TupleValue) and not info.starred:
                    info.args.extend(spliced.items)  # f(*layers) with a known sequence: its parts, in order
                    info.spliced = True
                else:
                    info.starred = True
                    info.args.append(None)
            else:
                info.args.append(self.expr(arg, env))
        for keyword in node.keywords:
            value = self.expr(keyword.value, env)
            if keyword.arg is not None:
                info.kwargs[keyword.arg] = value
            elif isinstance(value, DictValue) and all(isinstance(k, str) for k, _ in value.items):
                info.kwargs.update(value.items)  # f(**BACKBONE_DEFAULTS): a dict the code spells out
            else:
                info.unknown_keywords = True
        self.ctx.calls[node] = info
        try:
            return self._call_result(info, env)
        except Exception:  # a modelling gap must never stop the walk
            log.debug("could not evaluate call at line %s", node.lineno, exc_info=True)
            return None

    def _call_result(self, info: CallInfo, env: Env) -> Value:
        node = info.node
        if info.starred and (info.method in SHAPE_METHODS or info.qualname in CREATION_FUNCTIONS):
            return None  # x.view(*shape): the number of dims is not known
        if info.qualname is not None:
            result = self._torch_call(info.qualname, info, env)
            return result if result is not None else _torch_result(info.qualname, info)
        if info.method == "register_buffer" and self._registers_buffer(info):
            return None
        if info.method is not None:
            receiver = info.receiver
            if (
                receiver is None
                and info.method in PROVENANCE_METHODS
                and isinstance(node.func, ast.Attribute)
                and self.ctx.qualify(node.func.value) is None
            ):
                receiver = TensorValue()  # only tensors have .softmax()/.sigmoid() in torch code
            if (receiver is None and info.method == "astype") or (
                isinstance(receiver, InstanceValue) and receiver.qualname.startswith("numpy.")
            ):
                return self._numpy_method(receiver, info, env)  # x.astype(np.int32): only arrays have astype
            if (
                receiver is None
                and info.method in TENSOR_ONLY_CONVERSIONS
                and isinstance(node.func, ast.Attribute)
                and self.ctx.qualify(node.func.value) is None
            ):
                return TensorValue(dtype=DTYPE_METHODS[info.method])  # y.long(): whatever y was, now an int64 tensor
            if isinstance(receiver, TensorValue):
                result = self._tensor_method(receiver, info.method, info)
                if result is None:
                    result = _tensor_method_result(receiver, info.method)
                if info.method.endswith("_") and isinstance(node.func, ast.Attribute):
                    target = node.func.value
                    if isinstance(target, ast.Name):
                        # In place: the name now holds what the method made of it (unknown if not modelled).
                        env[target.id] = result if isinstance(result, TensorValue) else None
                return result
            if isinstance(receiver, ModuleValue):
                return self._module_method(receiver, info, env)
            if isinstance(receiver, OfClass):
                return self._class_method(receiver, info, env)
            if isinstance(receiver, InstanceValue) and receiver.qualname == "argparse":
                return self._parser_method(receiver, info, env)
            if isinstance(receiver, InstanceValue):
                return self._user_method(receiver, info, env)
            if isinstance(receiver, TupleValue) and info.method in ("append", "extend"):
                self._grow_list(receiver, info, env)
            elif isinstance(receiver, TupleValue | SequenceOf) and info.method in _LIST_MUTATORS:
                self._forget_list(info, env)  # out.insert(0, g), xs.pop(): its items or length are no longer known
                return None
            if isinstance(receiver, DictValue) and info.method in _DICT_MUTATORS:
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                    env[node.func.value.id] = None  # cfg.update(...): its keys and values are no longer known
                return None
            if (
                isinstance(receiver, DictValue)
                and info.method == "get"
                and 1 <= len(info.args) <= 2
                and not info.kwargs
            ):
                # cfg.get("pos_weight"): the value of a key the dict spells out (a key it lacks may have been
                # added by code the interpreter does not follow, so then the default is not proved).
                key = info.args[0]
                if isinstance(key, Literal) and any(k == key.value for k, _ in receiver.items):
                    return receiver.get(key.value)
                return None
            if isinstance(receiver, Literal) and isinstance(receiver.value, str) and info.method in _STR_TO_INT:
                return Number("int")  # vocab.index(ch): a position, the id a character-level model embeds
            if isinstance(receiver, DictValue) and not info.args:
                if info.method == "items":
                    return TupleValue(tuple(TupleValue((Literal(k), v)) for k, v in receiver.items))
                if info.method in ("keys", "values"):
                    index = 0 if info.method == "keys" else 1
                    return TupleValue(tuple((Literal(k), v)[index] for k, v in receiver.items))
            return None
        if info.module is not None:
            return self._apply_module(info.module, info)
        if isinstance(node.func, ast.Name) and node.func.id == "enumerate" and "enumerate" not in env and info.args:
            return InstanceValue("builtins.enumerate", (("of", info.args[0]),), Origin(node.args[0], "enumerate"))
        if isinstance(node.func, ast.Name) and self._is_global(node.func.id, env):
            name = node.func.id
            if name in self.classes:
                return self._construct(self.classes[name], info)
            if name in self.functions:
                returned = self._call_function(self.functions[name], None, info)
                self._after_call(self.functions[name], info, env, skip_first=False)
                return returned
            if name == "zip" and name not in self.module_env and _star_of_name(node):
                # zip(*batch) in a collate_fn: the samples' parts side by side, as many of each as samples
                samples = self.expr(node.args[0].value, env)  # type: ignore[attr-defined]
                if isinstance(samples, SequenceOf) and isinstance(samples.item, TupleValue):
                    return TupleValue(tuple(SequenceOf(part, samples.length) for part in samples.item.items))
            if name in _BUILTINS and name not in self.module_env:
                return _BUILTINS[name](info.args)
            if name == "dict" and name not in self.module_env and not info.unknown_keywords:
                if not info.args:
                    return DictValue(tuple(info.kwargs.items()))
                if len(info.args) == 1 and isinstance(info.args[0], DictValue):
                    return DictValue(info.args[0].items + tuple(info.kwargs.items()))
            if name == "reversed" and name not in self.module_env and len(info.args) == 1:
                items = _known_items(info.args[0])
                return TupleValue(tuple(reversed(items))) if items is not None else None
            if name in ("list", "tuple") and name not in self.module_env and len(info.args) == 1:
                items = _known_items(info.args[0])
                return TupleValue(items) if items is not None else None
            if name == "map" and name not in self.module_env and len(info.args) == 2:
                return self._mapped(node.args[0], info.args[1], info, env)
            if name in ("iter", "next") and name not in self.module_env and len(info.args) == 1:
                # next(iter(loader)): one item of what iterating gives (iter() alone changes nothing we track)
                only = info.args[0]
                return only if name == "iter" else self._iteration(only, node.args[0])
        if _is_super_init(node.func) and self.ctx.klass is not None and self._attribute_sink is not None:
            # super().__init__(...) while an instance is built: the base's __init__ assigns into the same instance
            base = next((k for k in self.ctx.klass.chain()[1:] if "__init__" in k.methods), None)
            if base is not None:
                return self._call_function(base.methods["__init__"], base, info, env.get("self"))
        return None

    def _mapped(self, func: ast.expr, sequence: Value, info: CallInfo, env: Env) -> Value:
        """``map(self._split_heads, (q, k, v))`` over a sequence the code spells out: the file's function (or a
        method of an instance it knows) called on each item, as a tuple that unpacks like the items do."""
        items = _known_items(sequence)
        if items is None or isinstance(func, ast.Starred):
            return None
        receiver: Value = None
        function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        klass: ClassInfo | None = None
        if isinstance(func, ast.Name) and self._is_global(func.id, env):
            function = self.functions.get(func.id)
        elif isinstance(func, ast.Attribute):
            receiver = self.expr(func.value, env)
            owner = self._user_class_of(receiver)
            if owner is not None and (function := owner.method(func.attr)) is not None:
                klass = self._defining_class(owner, func.attr)
        if function is None:
            return None
        results = []
        for item in items:
            one = CallInfo(info.node, method=func.attr if receiver is not None else None, args=[item], spliced=True)
            results.append(self._call_function(function, klass, one, receiver))
        return TupleValue(tuple(results))

    def _parser_method(self, parser: InstanceValue, info: CallInfo, env: Env) -> Value:
        """An ``argparse`` parser: ``add_argument`` records each option's default, ``parse_args`` gives the
        namespace a run without options gets (the sizes the script is written for)."""
        defaults = parser.arg("defaults")
        if not isinstance(defaults, DictValue):
            return None
        if info.method in ("parse_args", "parse_known_args"):
            namespace = InstanceValue("namespace", (("fields", defaults),), Origin(info.node, "命令行参数的默认值"))
            return namespace if info.method == "parse_args" else TupleValue((namespace, None))
        func = info.node.func
        if info.method != "add_argument" or not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return None
        flags = [_literal(a) for a in info.args]
        long = next((f for f in flags if isinstance(f, str) and f.startswith("--")), None)
        short = next((f for f in flags if isinstance(f, str)), None)
        dest = _literal(info.kwargs.get("dest")) or (long or short or "").lstrip("-").replace("-", "_")
        if not isinstance(dest, str) or not dest:
            return None
        action = _literal(info.kwargs.get("action"))
        default: Value = info.kwargs.get("default", Literal(None))
        if action in ("store_true", "store_false") and "default" not in info.kwargs:
            default = Literal(action == "store_false")
        kind = info.arg_node(99, "type")
        if isinstance(kind, ast.Name) and kind.id in ("int", "float") and isinstance(default, Literal):
            if isinstance(default.value, str):  # argparse converts a string default with `type`
                try:
                    default = Literal((int if kind.id == "int" else float)(default.value))
                except ValueError:
                    default = None
        elif kind is not None and not isinstance(kind, ast.Name):
            default = None  # a converter we do not run
        env[func.value.id] = InstanceValue(
            "argparse", (("defaults", defaults.with_item(dest, default)),), parser.origin
        )
        return None

    def _forget_list(self, info: CallInfo, env: Env) -> None:
        func = info.node.func
        if not isinstance(func, ast.Attribute):
            return
        if isinstance(func.value, ast.Name):
            env[func.value.id] = None
        elif (sink := self._init_attribute_sink(func.value)) is not None:
            sink[func.value.attr] = None  # type: ignore[attr-defined]

    def _grow_list(self, items: TupleValue, info: CallInfo, env: Env) -> None:
        """``layers.append(block)``: the name now holds one more known item (unknown when the argument is)."""
        func = info.node.func
        if not isinstance(func, ast.Attribute) or len(info.args) != 1:
            return
        added = info.args[0]
        if info.method == "append":
            grown: Value = TupleValue((*items.items, added))
        else:
            grown = TupleValue(items.items + added.items) if isinstance(added, TupleValue) else None
        if isinstance(func.value, ast.Name):
            env[func.value.id] = grown
        elif (sink := self._init_attribute_sink(func.value)) is not None:
            sink[func.value.attr] = grown  # type: ignore[attr-defined]  # self.samples.append(...) in __init__


def _torch_result(qualname: str, info: CallInfo) -> Value:
    """What a torch function the interpreter does not model returns, from the facts tables: a tensor, tensors.

    A tensor computed from a tensor (``torch.multinomial(probs, n)``, ``torch.bincount(labels)``) is on that
    tensor's device, the first argument's, when nothing in the call names a device.
    """
    if facts.call_result(qualname) == facts.TENSOR:
        first = info.args[0] if info.args and not info.starred else None
        follows = (
            isinstance(first, TensorValue)
            and qualname not in facts.CREATION_FUNCTIONS
            and qualname != "torch.where"
            and not info.has_keyword("device")
            and not info.unknown_keywords
        )
        return TensorValue(device=first.device) if follows else TensorValue()  # type: ignore[union-attr]
    if facts.call_yields_tensors(qualname) and qualname.rsplit(".", 1)[-1] not in _ONE_OR_PAIR:
        return SequenceOf(TensorValue())
    return None


def _tensor_method_result(tensor: TensorValue, method: str) -> Value:
    """What a tensor method the interpreter does not model returns: a tensor on the same device, tensors."""
    if method in facts.TENSOR_RETURNING_METHODS and method not in ("to", "cuda", "cpu", "type", "type_as"):
        return TensorValue(device=tensor.device)  # (type_as may move it: x.type_as(cuda_tensor))
    if method in facts.TENSOR_SEQUENCE_METHODS and method not in _ONE_OR_PAIR:
        return SequenceOf(TensorValue(device=tensor.device))
    return None


def _is_super_init(func: ast.expr) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "__init__"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    )


def _star_of_name(node: ast.Call) -> bool:
    """``f(*name)``: one starred name and nothing else."""
    return (
        len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Starred)
        and isinstance(node.args[0].value, ast.Name)
    )


_STR_TO_INT = frozenset({"index", "find", "rfind", "rindex", "count"})


def _length(args: list[Value]) -> Value:
    if len(args) != 1:
        return None
    only = args[0]
    if isinstance(only, TupleValue):
        return Literal(len(only.items))
    if isinstance(only, SequenceOf) and only.length is not None:
        return Literal(only.length)
    if isinstance(only, TensorValue) and only.shape and isinstance(only.shape[0], int):
        return Literal(only.shape[0])
    if isinstance(only, Literal) and isinstance(only.value, str):
        return Literal(len(only.value))
    if isinstance(only, DictValue):
        return Literal(len(only.items))
    if is_array(only) and (shape := array_shape(only)) and isinstance(shape[0], int):  # type: ignore[arg-type]
        return Literal(shape[0])
    return None


def _number(kind: type) -> Callable[[list[Value]], Value]:
    def convert(args: list[Value]) -> Value:
        if len(args) == 1 and isinstance(args[0], Literal) and isinstance(args[0].value, int | float):
            try:
                return Literal(kind(args[0].value))
            except (OverflowError, ValueError):
                return None
        if len(args) <= 1:
            return Number("int" if kind is int else "float")  # float(v) of anything is a Python float
        return None

    return convert


def _extreme(pick: Callable[..., Any]) -> Callable[[list[Value]], Value]:
    def choose(args: list[Value]) -> Value:
        items = args[0].items if len(args) == 1 and isinstance(args[0], TupleValue) else args
        numbers = [_literal(v) for v in items]
        if len(numbers) >= 1 and all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
            return Literal(pick(numbers))
        return None

    return choose


def _range(args: list[Value]) -> Value:
    """A short range, item by item; any other range still yields ints (``tgt[:, t]`` drops a dim)."""
    numbers = [_int(v) for v in args]
    if not 1 <= len(args) <= 3:
        return None
    if any(n is None for n in numbers):
        return SequenceOf(Number("int"))
    span = range(*numbers)  # type: ignore[arg-type]
    if len(span) <= _UNROLL_ITEMS:
        return TupleValue(tuple(Literal(i) for i in span))
    # each item within its ends, and as many as the range has
    return SequenceOf(Number("int", min(span[0], span[-1]), max(span[0], span[-1])), len(span))


def _zip(args: list[Value]) -> Value:
    """Known sequences zipped item by item; otherwise a zip whose items iterating works out (loaders too)."""
    sequences = [_known_items(v) for v in args]
    if not sequences:
        return None
    if any(s is None for s in sequences):
        return InstanceValue("builtins.zip", (("of", TupleValue(tuple(args))),))
    return TupleValue(tuple(TupleValue(parts) for parts in zip(*sequences, strict=False)))  # type: ignore[misc]


# Builtins whose result follows from literal arguments: sizes computed as `len(CLASSES)`, `int(d * 1.5)`.
_BUILTINS: dict[str, Callable[[list[Value]], Value]] = {
    "len": _length,
    "ord": lambda args: Number("int") if len(args) == 1 else None,
    "int": _number(int),
    "float": _number(float),
    "max": _extreme(max),
    "min": _extreme(min),
    "range": _range,
    "zip": _zip,
}
