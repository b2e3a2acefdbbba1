"""What unpacking, indexing and iterating a value gives, as far as the file proves it.

``h, _ = self.lstm(x)``, ``for x, y in loader``, ``for block in self.blocks``, ``for name, p in
model.named_parameters()``, ``torch.max(x, 1)[0]``: each binds a name to a *part* of a value. :data:`Parts`
describes a value's structure: a :class:`Value`; a tuple of parts by position (``LSTM`` returns
``(output, (h_n, c_n))``); or an :class:`Each` whose every element is one part (``chunk``'s result, a loader's
batches, a ModuleList's layers). A part the file does not prove is None. :class:`PartsInference` is the fast
path's reading of them, mixed into :class:`torchls.core.names.ModuleIndex`, whose bindings it follows.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torchls.core import facts

if TYPE_CHECKING:
    from torchls.core.names import _Identifier

MAX_DEPTH = 30  # how deep one inference may go through names, calls and parts before giving up
# Steps one question to the index may take (inferring a value, its parts): bounds the time a hover or a completion
# spends on code whose values branch at every step. Results are memoised, so most questions take far fewer.
STEP_BUDGET = 20_000


@dataclass(frozen=True, slots=True)
class Value:
    """An inferred value: an instance of ``qualname`` (a torch class), maybe through a user subclass."""

    qualname: str
    user_class: str | None = None


@dataclass(frozen=True, slots=True)
class Each:
    """A sequence or iterator whose every element is ``element``; ``value`` is the container itself where it is a
    torch value (the DataLoader, the ModuleList), for its own members."""

    element: Parts | None
    value: Value | None = None


@dataclass(frozen=True, slots=True)
class Keyed:
    """A dict: what its keys and its values are (``{name: p for name, p in model.named_parameters()}``)."""

    keys: Parts | None
    values: Parts | None


Parts = Value | tuple | Each | Keyed

# A Python number in a dataset's sample: only a loader's collation makes it a tensor. Never leaves this module's
# callers as an answer (see :func:`as_value`).
NUMBER = Value("builtins.number")
# The element of an empty display or ``nn.ModuleList()``: what is appended later is all it holds.
NOTHING = Value("builtins.nothing")
TENSOR = Value(facts.TENSOR)
_NUMBER_BUILTINS = frozenset({"int", "float", "len", "round", "abs", "sum", "min", "max"})


def is_tensor(value: Any) -> bool:
    """True for a tensor, a ``Parameter`` included (not a user subclass: it may change iteration)."""
    return (
        isinstance(value, Value)
        and value.user_class is None
        and facts.ATTRIBUTE_BASES.get(value.qualname, value.qualname) == facts.TENSOR
    )


def is_module(value: Value) -> bool:
    """True for a torch layer or a module class of the file (whose ``qualname`` is its torch base)."""
    return value.qualname == facts.MODULE or facts.is_module_class(value.qualname)


def common(values: list[Value | None]) -> Value | None:
    """What several possible values of one name have in common: the same value, or, when all are modules (torch
    layers or the file's own), an ``nn.Module``; otherwise nothing is proven."""
    if not values or any(v is None for v in values):
        return None
    first = values[0]
    if all(v == first for v in values):
        return first
    if all(is_module(v) for v in values):  # type: ignore[arg-type]
        return Value(facts.MODULE)
    return None


def common_parts(options: list[Parts | None]) -> Parts | None:
    """The parts every option agrees on, position by position (an empty container's :data:`NOTHING` agrees with
    anything)."""
    options = [o for o in options if o != NOTHING] or options[:1]
    if not options or any(o is None for o in options):
        return None
    first = options[0]
    if all(isinstance(o, Value) for o in options):
        return common(options)  # type: ignore[arg-type]
    if all(isinstance(o, tuple) and len(o) == len(first) for o in options):  # type: ignore[arg-type]
        return tuple(common_parts([o[i] for o in options]) for i in range(len(first)))  # type: ignore[index,arg-type]
    if all(isinstance(o, Keyed) for o in options):
        keys = common_parts([o.keys for o in options])  # type: ignore[union-attr]
        return Keyed(keys, common_parts([o.values for o in options]))  # type: ignore[union-attr]
    if all(isinstance(o, Each) for o in options):
        containers = [o.value for o in options]  # type: ignore[union-attr]
        return Each(common_parts([o.element for o in options]), common(containers))  # type: ignore[union-attr,arg-type]
    return None


def pick(parts: Parts | None, position: int | None) -> Parts | None:
    """The part at ``position`` of ``parts`` (None: an element, whichever a ``for`` loop takes)."""
    if parts is None or parts == NOTHING:
        return None
    if isinstance(parts, Each):
        return parts.element if parts.element != NOTHING else None
    if isinstance(parts, Keyed):
        return parts.keys if position is None else None
    if isinstance(parts, tuple):
        if position is None:
            return common_parts(list(parts))
        return parts[position] if -len(parts) <= position < len(parts) else None
    if is_tensor(parts):
        return TENSOR  # unpacking or iterating a tensor yields its rows
    return None


def as_value(parts: Parts | None) -> Value | None:
    """``parts`` as an answer about one value: a Value (never the internal :data:`NUMBER`), the container of an
    :class:`Each`, else None."""
    if isinstance(parts, Each):
        return parts.value
    return parts if isinstance(parts, Value) and parts not in (NUMBER, NOTHING) else None


def collate(sample: Parts | None) -> Parts | None:
    """What a DataLoader's default collation makes of a dataset's sample: tensors and numbers become one batched
    tensor, tuples stay tuples of collated parts; anything else (dicts, strings) is not followed."""
    if sample == NUMBER or is_tensor(sample):
        return TENSOR
    if isinstance(sample, tuple):
        return tuple(collate(part) for part in sample)
    return None


def from_fact(fact: str | tuple | None) -> Parts | None:
    """A structure written in :mod:`facts` (class names, tuples of them, None) as parts."""
    if fact is None:
        return None
    if isinstance(fact, tuple):
        return tuple(from_fact(part) for part in fact)
    return Value(fact)


def is_none_literal(expr: ast.expr) -> bool:
    """``None`` written out: a branch (``layer if flag else None``) or an annotation member that holds no value."""
    return isinstance(expr, ast.Constant) and expr.value is None


def is_int_literal(index: ast.expr) -> bool:
    """``0``, ``-1``: an index that picks one element of a tuple (not a slice, not a name)."""
    return int_literal(index) is not None


def int_literal(index: ast.expr) -> int | None:
    sign = 1
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        index, sign = index.operand, -1
    if isinstance(index, ast.Constant) and type(index.value) is int:
        return sign * index.value
    return None


class PartsInference:
    """The parts of values, for :class:`~torchls.core.names.ModuleIndex` (whose methods it calls)."""

    memo: dict[tuple, Any]  # what was proven, by question (see ModuleIndex)
    steps: int  # of the current question
    # Provided by ModuleIndex.
    infer: Any
    qualify: Any
    classes: Any
    _latest_binding: Any
    _is_builtin: Any
    _called_function: Any
    _passed_parts: Any
    _torch_base: Any
    _method: Any
    _user_defines: Any
    _appended: Any
    _where: Any
    qualify_annotation: Any

    def parts(self, expr: ast.expr, where: _Identifier, line: int, depth: int = 0) -> Parts | None:
        """The structure of the value of ``expr`` at ``line``."""
        return self.memoised("parts", self._parts, expr, where, line, depth)

    def memoised(self, kind: str, compute: Any, expr: ast.expr, where: _Identifier, line: int, depth: int) -> Any:
        """``compute(expr, where, line, depth)``, remembered by question. Only what was proven is kept: a None may
        come from a cycle or a limit met on the way, and is asked again next time (a proof never rests on one:
        every combination needs all its parts)."""
        if depth > MAX_DEPTH or not self.step():
            return None
        key = (kind, expr, line, where.scope, where.klass)
        if key in self.memo:
            return self.memo[key]
        found = compute(expr, where, line, depth)
        if found is not None:
            self.memo[key] = found
        return found

    def step(self) -> bool:
        """Count one step of the current question; False once its budget is spent."""
        self.steps += 1
        return self.steps <= STEP_BUDGET

    def _parts(self, expr: ast.expr, where: _Identifier, line: int, depth: int) -> Parts | None:
        if isinstance(expr, ast.Name):
            return self._name_parts(expr, where, line, depth)
        if isinstance(expr, ast.Attribute) and _is_self(expr.value) and where.klass is not None:
            return self._self_attribute_parts(where.klass.name, expr.attr, where, depth)
        if isinstance(expr, ast.Attribute):  # a ModuleDict's member: its own parts (``self.transformer.blocks``)
            receiver = self.infer(expr.value, where, line, depth + 1)
            if receiver is not None and receiver.qualname == facts.MODULE_DICT and receiver.user_class is None:
                entry = self._module_dict_entry(expr.value, expr.attr, where, line)
                if entry is not None:
                    return self.parts(entry, self._where(entry.lineno - 1), entry.lineno - 1, depth + 1)
        if isinstance(expr, ast.Tuple):
            if any(isinstance(e, ast.Starred) for e in expr.elts):
                return None
            return tuple(self.parts(e, where, line, depth + 1) for e in expr.elts)
        if isinstance(expr, ast.List | ast.Set):
            return Each(self._elements(expr.elts, where, line, depth))
        if isinstance(expr, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return Each(self.parts(expr.elt, where, expr.elt.lineno - 1, depth + 1))
        if isinstance(expr, ast.DictComp):
            at = expr.key.lineno - 1
            return Keyed(self.parts(expr.key, where, at, depth + 1), self.parts(expr.value, where, at, depth + 1))
        if isinstance(expr, ast.Dict):
            if any(key is None for key in expr.keys):  # ``{**other}``
                return None
            keys = self._elements(expr.keys, where, line, depth)  # type: ignore[arg-type]
            return Keyed(keys, self._elements(expr.values, where, line, depth))
        if (
            isinstance(expr, ast.Subscript)
            and isinstance(expr.slice, ast.Constant)
            and isinstance(expr.slice.value, str)
        ):
            found = self.parts(expr.value, where, line, depth + 1)  # ``batch["image"]`` of a dict display
            return found.values if isinstance(found, Keyed) else self.infer(expr, where, line, depth + 1)
        if isinstance(expr, ast.Call):
            return self._call_parts(expr, where, line, depth)
        if isinstance(expr, ast.IfExp):
            return common_parts([self.parts(b, where, line, depth + 1) for b in (expr.body, expr.orelse)])
        if isinstance(expr, ast.Subscript) and (index := int_literal(expr.slice)) is not None:
            return pick(self.parts(expr.value, where, line, depth + 1), index)
        if isinstance(expr, ast.Constant) and type(expr.value) in (int, float):
            return NUMBER
        return self.infer(expr, where, line, depth + 1)

    def element_of(self, expr: ast.expr, where: _Identifier, line: int, depth: int = 0) -> Parts | None:
        """What iterating the value of ``expr`` yields."""
        return pick(self.parts(expr, where, line, depth), None)

    # ------------------------------------------------------------------------------------------ names

    def _name_parts(self, name: ast.Name, where: _Identifier, line: int, depth: int) -> Parts | None:
        binding = self._latest_binding(name.id, where, line)
        if binding is None or name.id == "self":
            return self.infer(name, where, line, depth + 1)
        if binding.annotation is not None:
            return self.annotation_parts(binding.annotation)
        if binding.parameter_of is not None:
            return self._passed_parts(binding.parameter_of, name.id, depth + 1)
        if binding.iterated is not None:
            if binding.last_line is not None and not binding.visible_at(line):
                return None
            parts = self.parts(binding.iterated, where, binding.line, depth + 1)
            for position in binding.path:
                parts = pick(parts, position)
            return parts
        if binding.value is None:
            return None
        parts = self.parts(binding.value, where, binding.line, depth + 1)
        if isinstance(parts, Each) and isinstance(binding.value, ast.List | ast.ListComp | ast.Set | ast.SetComp):
            # A list bound to a name may grow: what ``xs.append(...)`` adds counts too.
            added = self._appended(("name", id(where.scope), name.id))
            if added is None:
                return Each(None, parts.value)
            if added:
                parts = Each(common_parts([parts.element, self._elements(added, where, line, depth)]), parts.value)
        return parts

    def _self_attribute_parts(self, class_name: str, attr: str, where: _Identifier, depth: int) -> Parts | None:
        info = self.classes.get(class_name)
        bound = info.self_bindings.get(attr) if info is not None else None
        if not bound or any(b is None for b in bound):
            return None
        # ``self.x`` bound in ``__init__`` is evaluated where it is bound, not at the cursor.
        options = [
            b if isinstance(b, Value) else self.parts(b, self._where(b.lineno - 1), b.lineno - 1, depth + 1)
            for b in bound
        ]
        parts = common_parts(options)
        if isinstance(parts, Each):  # ``self.layers.append(...)`` adds layers to a ModuleList
            added = self._appended(("self", attr))
            if added is None:
                return Each(None, parts.value)
            if added:
                parts = Each(common_parts([parts.element, self._elements(added, where, 0, depth)]), parts.value)
        return parts

    def _elements(self, elements: list[ast.expr], where: _Identifier, line: int, depth: int) -> Parts | None:
        """The common part of the elements of a display (or of the values appended to a list)."""
        options: list[Parts | None] = []
        for element in elements:
            at = getattr(element, "lineno", line + 1) - 1
            here = self._where(at)  # appended values may come from another method than the cursor's
            if isinstance(element, ast.Starred):
                options.append(self.element_of(element.value, here, at, depth + 1))
            else:
                options.append(self.parts(element, here, at, depth + 1))
        return common_parts(options) if options else NOTHING

    # ------------------------------------------------------------------------------------------ calls

    def _call_parts(self, call: ast.Call, where: _Identifier, line: int, depth: int) -> Parts | None:
        func = call.func
        plain_arguments = not any(isinstance(a, ast.Starred) for a in call.args)
        callee = self.qualify(func)
        if callee is not None:
            return self._torch_call_parts(callee, call, where, line, depth)
        if isinstance(func, ast.Name) and func.id in _ITERATION_BUILTINS and self._is_builtin(func.id):
            return self._builtin_parts(func.id, call, where, line, depth) if plain_arguments else None
        if isinstance(func, ast.Name) and func.id in _NUMBER_BUILTINS and self._is_builtin(func.id):
            return NUMBER
        if isinstance(func, ast.Name) and func.id in self.classes:
            instance = self.infer(call, where, line, depth + 1)
            sample = self._dataset_sample(func.id, depth + 1)
            return Each(sample, instance) if sample is not None else instance
        called = self._called_function(func, where, line, depth + 1)
        if called is not None:
            return self.function_parts(*called, depth + 1)
        if isinstance(func, ast.Attribute):
            if func.attr in _DICT_VIEWS and not call.args:
                mapping = self.parts(func.value, where, line, depth + 1)
                if isinstance(mapping, Keyed):
                    return Each(_DICT_VIEWS[func.attr](mapping))
            receiver = self.infer(func.value, where, line, depth + 1)
            if receiver is not None:
                member = self._member_call_parts(receiver, func.attr)
                if member is not None:
                    return member
        layer = self.layer_call_parts(func, where, line, depth + 1)
        return layer if layer is not None else self.infer(call, where, line, depth + 1)

    def _torch_call_parts(self, callee: str, call: ast.Call, where: _Identifier, line: int, depth: int) -> Parts | None:
        if callee == facts.DATA_LOADER:
            return Each(self._batch_parts(call, where, line, depth + 1), Value(callee))
        if callee == facts.TENSOR_DATASET and call.args and not call.keywords:
            if any(isinstance(a, ast.Starred) for a in call.args):
                return Each(None, Value(callee))
            return Each(tuple(self.element_of(a, where, line, depth + 1) for a in call.args), Value(callee))
        if callee in facts.LAYER_CONTAINERS:
            return self._container_parts(callee, call, where, line, depth)
        if facts.call_yields_tensors(callee):
            return Each(TENSOR)
        return self.infer(call, where, line, depth + 1)

    def _container_parts(self, callee: str, call: ast.Call, where: _Identifier, line: int, depth: int) -> Parts | None:
        """``nn.ModuleList([...])`` / ``nn.Sequential(a, b)``: its layers (appended ones are added by the caller)."""
        container = Value(callee)
        if call.keywords:
            return Each(None, container)
        if callee == facts.SEQUENTIAL:
            if len(call.args) == 1 and isinstance(call.args[0], ast.Starred):
                return Each(self.element_of(call.args[0].value, where, line, depth + 1), container)
            return Each(self._elements(call.args, where, line, depth), container)
        if not call.args:
            return Each(NOTHING, container)  # empty until ``append``: the caller merges what is appended
        if len(call.args) == 1:
            return Each(self.element_of(call.args[0], where, line, depth + 1), container)
        return Each(None, container)

    def _builtin_parts(self, name: str, call: ast.Call, where: _Identifier, line: int, depth: int) -> Parts | None:
        args = call.args
        if name == "enumerate" and args and not call.keywords:
            return Each((None, self.element_of(args[0], where, line, depth + 1)))
        if name == "zip":
            return Each(tuple(self.element_of(a, where, line, depth + 1) for a in args)) if args else None
        if not args or (call.keywords and name != "sorted"):
            return None
        if name == "next":
            return self.element_of(args[0], where, line, depth + 1)
        # iter, reversed, list, tuple, sorted: the same elements
        return Each(self.element_of(args[0], where, line, depth + 1))

    def _member_call_parts(self, receiver: Value, method: str) -> Parts | None:
        """``model.named_parameters()``, ``x.chunk(2)``: calls whose result the tables describe."""
        if is_module(receiver) and method in (*facts.MODULE_ITERATORS, "state_dict"):
            if receiver.user_class is not None and self._user_defines(receiver.user_class, method):
                return None
            if method == "state_dict":
                return Keyed(None, TENSOR)  # parameter and buffer names to their tensors
            return Each(from_fact(facts.MODULE_ITERATORS[method]))
        if receiver.user_class is None and facts.method_yields_tensors(receiver.qualname, method):
            return Each(TENSOR)
        return None

    def layer_call_parts(self, func: ast.expr, where: _Identifier, line: int, depth: int) -> Parts | None:
        """What calling the layer ``func`` names returns (``self.lstm(x)``, ``block(x)``), when every layer it may
        hold agrees. A ``None`` it may hold instead does not count: where the call returns at all, it held a layer."""
        if isinstance(func, ast.Attribute) and _is_self(func.value) and where.klass is not None:
            info = self.classes.get(where.klass.name)
            bound = info.self_bindings.get(func.attr) if info is not None else None
            if bound and all(isinstance(b, ast.expr) for b in bound):
                options = [
                    self._instance_call_parts(branch, self._where(branch.lineno - 1), branch.lineno - 1, depth + 1)
                    for b in bound
                    for branch in _branches(b)  # type: ignore[arg-type]
                    if not is_none_literal(branch)
                ]
                return common_parts(options)
        return self._instance_call_parts(func, where, line, depth)

    def _instance_call_parts(self, layer: ast.expr, where: _Identifier, line: int, depth: int) -> Parts | None:
        """What calling the value of ``layer`` returns."""
        if depth > MAX_DEPTH:
            return None
        constructor = layer if isinstance(layer, ast.Call) else None
        if constructor is not None and self.qualify(constructor.func) == facts.SEQUENTIAL:
            if not constructor.args or constructor.keywords or isinstance(constructor.args[-1], ast.Starred):
                return None
            return self._instance_call_parts(constructor.args[-1], where, line, depth + 1)
        value = self.infer(layer, where, line, depth + 1)
        if value is None:
            return None
        if value.qualname == facts.SEQUENTIAL and constructor is None:
            built = self._constructor_of(layer, where, line)
            if built is None:
                return None
            return self._instance_call_parts(built, self._where(built.lineno - 1), built.lineno - 1, depth + 1)
        return self.call_result_parts(value, depth)

    def call_result_parts(self, instance: Value, depth: int = 0) -> Parts | None:
        """What calling ``instance`` returns: the tables' tuple for LSTM-like layers, a tensor for layers that
        always return one, the parts of its ``forward`` for a module class of this file."""
        if instance.user_class is None:
            if instance.qualname in facts.MODULE_CALL_PARTS:
                return from_fact(facts.MODULE_CALL_PARTS[instance.qualname])
            result = facts.instance_call_result(instance.qualname)
            return Value(result) if result else None
        base = self._torch_base(instance.user_class)
        if base is None or not (base == facts.MODULE or facts.is_module_class(base)):
            return None
        found = self._method(instance.user_class, "forward")
        if found is None or self._method(instance.user_class, "__call__") is not None:
            return None
        forward, owner = found
        return self.function_parts(forward, owner, depth + 1) if isinstance(forward, ast.FunctionDef) else None

    def _constructor_of(self, expr: ast.expr, where: _Identifier, line: int) -> ast.Call | None:
        """The call that built the value of a name or ``self`` attribute bound exactly once (for the layers of a
        Sequential, the members of a ModuleDict)."""
        for _ in range(MAX_DEPTH):
            if isinstance(expr, ast.Call):
                return expr
            if isinstance(expr, ast.Name):
                binding = self._latest_binding(expr.id, where, line)
                if binding is None or binding.value is None or binding.annotation is not None:
                    return None
                expr, line = binding.value, binding.line
            elif isinstance(expr, ast.Attribute) and _is_self(expr.value) and where.klass is not None:
                info = self.classes.get(where.klass.name)
                bound = info.self_bindings.get(expr.attr) if info is not None else None
                if not bound or len(bound) != 1 or not isinstance(bound[0], ast.expr):
                    return None
                expr, line = bound[0], bound[0].lineno - 1
                where = self._where(line)
            else:
                return None
        return None

    def module_dict_member(
        self, receiver: ast.expr, key: str, where: _Identifier, line: int, depth: int
    ) -> Value | None:
        """``self.transformer.wte`` where ``self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(...)))`` (or a
        ``{"wte": ...}`` display): the value of that member."""
        found = self._module_dict_entry(receiver, key, where, line)
        if found is None:
            return None
        at = found.lineno - 1
        return as_value(self.infer(found, self._where(at), at, depth + 1))

    def _module_dict_entry(self, receiver: ast.expr, key: str, where: _Identifier, line: int) -> ast.expr | None:
        """The expression a ModuleDict the file builds holds under ``key``."""
        built = self._constructor_of(receiver, where, line)
        if built is None or self.qualify(built.func) != facts.MODULE_DICT or len(built.args) != 1:
            return None
        members = built.args[0]
        if isinstance(members, ast.Call) and isinstance(members.func, ast.Name) and members.func.id == "dict":
            return next((k.value for k in members.keywords if k.arg == key), None)
        if isinstance(members, ast.Dict):
            for name, member in zip(members.keys, members.values, strict=True):
                if isinstance(name, ast.Constant) and name.value == key:
                    return member
        return None

    # ------------------------------------------------------------------------------------- functions

    def function_parts(self, function: ast.FunctionDef, klass: ast.ClassDef | None, depth: int) -> Parts | None:
        """What calling a function of this file returns: its return annotation, or, without one, what every
        ``return`` agrees on when the function always returns a value."""
        if depth > MAX_DEPTH:
            return None
        if function.returns is not None:
            return self.annotation_parts(function.returns)
        values = returned_values(function)
        if not values:
            return None
        from torchls.core.names import _Identifier  # the index's own place marker

        options = []
        for value in values:
            where = _Identifier(0, 0, value, function, klass)
            options.append(self.parts(value, where, value.lineno - 1, depth + 1))
        return common_parts(options)

    def annotation_parts(self, annotation: ast.expr) -> Parts | None:
        """``Tuple[Tensor, Tensor]``, ``tuple[Tensor, ...]``, ``List[Tensor]``, ``Optional[Tensor]``, ``Tensor``."""
        annotation = unquoted(annotation) or annotation
        if isinstance(annotation, ast.Subscript):
            head = generic_name(annotation)
            elements = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
            if head in ("Tuple", "tuple"):
                if len(elements) == 2 and isinstance(elements[1], ast.Constant) and elements[1].value is Ellipsis:
                    return Each(self.annotation_parts(elements[0]))
                return tuple(self.annotation_parts(e) for e in elements)
            if head in _SEQUENCE_GENERICS and len(elements) == 1:
                return Each(self.annotation_parts(elements[0]))
        qualname = self.qualify_annotation(annotation)
        return Value(qualname) if qualname and qualname.startswith("torch.") else None

    # ----------------------------------------------------------------------------------- data pipelines

    def _batch_parts(self, loader: ast.Call, where: _Identifier, line: int, depth: int) -> Parts | None:
        """What one batch of ``DataLoader(dataset, ...)`` is: the dataset's sample, collated (no ``collate_fn``)."""
        if any(k.arg in ("collate_fn", None) for k in loader.keywords):
            return None
        dataset = (
            loader.args[0] if loader.args else next((k.value for k in loader.keywords if k.arg == "dataset"), None)
        )
        if dataset is None or isinstance(dataset, ast.Starred):
            return None
        sample = self.element_of(dataset, where, line, depth + 1)
        batch_size = next((k.value for k in loader.keywords if k.arg == "batch_size"), None)
        if isinstance(batch_size, ast.Constant) and batch_size.value is None:
            return sample if is_tensor(sample) else None  # no batching: samples as they are
        return collate(sample)

    def _dataset_sample(self, class_name: str, depth: int) -> Parts | None:
        """One sample of a ``Dataset`` subclass of this file: what its ``__getitem__`` returns."""
        base = self._torch_base(class_name)
        if base is None or base not in facts.DATASET_BASES:
            return None
        found = self._method(class_name, "__getitem__")
        if found is None or not isinstance(found[0], ast.FunctionDef):
            return None
        return self.function_parts(found[0], found[1], depth + 1)


def _is_self(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id == "self"


def _branches(expr: ast.expr) -> list[ast.expr]:
    """The values an expression may have: both sides of each ``a if c else b``."""
    if isinstance(expr, ast.IfExp):
        return [*_branches(expr.body), *_branches(expr.orelse)]
    return [expr]


def returned_values(function: ast.FunctionDef) -> list[ast.expr] | None:
    """The values of a function's ``return`` statements when it returns one on every path (at least one
    ``return``, each with a value, no ``yield``, no way to fall off the end); else None."""
    if not function.body or not always_returns(function.body):
        return None
    values = []
    for node in own_nodes(function):
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return None
        if isinstance(node, ast.Return):
            if node.value is None:
                return None
            values.append(node.value)
    return values or None


def own_nodes(function: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of a function's body, not those of functions, lambdas or classes defined inside it."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        found.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))
    return found


def always_returns(body: list[ast.stmt]) -> bool:
    """True when running ``body`` always ends in ``return`` or ``raise`` (never falls off its end): its last
    statement does, or is an ``if`` whose branches both do. Loops, ``try`` and ``with`` are not followed."""
    last = body[-1]
    if isinstance(last, ast.Return | ast.Raise):
        return True
    if isinstance(last, ast.If):
        return bool(last.orelse) and always_returns(last.body) and always_returns(last.orelse)
    return False


def unquoted(annotation: ast.expr) -> ast.expr | None:
    """A string annotation (``"torch.Tensor"``) as the expression it spells; other annotations as they are."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    return annotation


def generic_name(annotation: ast.Subscript) -> str:
    """``Optional`` for ``Optional[...]`` and ``typing.Optional[...]``."""
    head = annotation.value
    return head.attr if isinstance(head, ast.Attribute) else head.id if isinstance(head, ast.Name) else ""


# ``d.items()``, ``d.values()``, ``d.keys()`` of a dict the file builds.
_DICT_VIEWS = {
    "items": lambda mapping: (mapping.keys, mapping.values),
    "values": lambda mapping: mapping.values,
    "keys": lambda mapping: mapping.keys,
}
_SEQUENCE_GENERICS = frozenset({"List", "list", "Sequence", "Iterable", "Iterator", "Generator"})
_ITERATION_BUILTINS = frozenset({"enumerate", "zip", "iter", "next", "reversed", "list", "tuple", "sorted"})
