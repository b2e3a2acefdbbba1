"""What an unannotated parameter holds, read from the calls of its function in the same file.

jedi guesses a parameter from the calls it can see; the fast path does the same within the file, for functions
(``train(model, loader)`` called as ``train(Net().to(device), DataLoader(ds))``), methods (``self.split(x)``) and a
module's ``forward``, which its instances run when called (``self.attn(x)``, ``block(x)`` for each block of a
ModuleList, ``model(x)``). At least one call must exist and every call must agree, and the function must not
escape (passed as a callback or stored), or other callers could pass anything. A parameter a call leaves out holds
its default. ``None``, passed or defaulted, is left out of the agreement: where the parameter's members are used,
it was not None. :class:`CallSiteInference` is mixed into :class:`torchls.core.names.ModuleIndex`.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from torchls.core.parts import MAX_DEPTH, Parts, common_parts

if TYPE_CHECKING:
    from torchls.core.names import _Identifier

_Function = ast.FunctionDef | ast.AsyncFunctionDef
_UNKNOWN = object()  # the argument a call passes cannot be told (``*args``, ``**kwargs``)
_MISSING = object()  # the call does not pass it: the default applies


class CallSiteInference:
    """Parameters' values from the calls of their functions, for :class:`~torchls.core.names.ModuleIndex`."""

    steps: int
    partial: bool
    # Provided by ModuleIndex.
    parts: Any
    infer: Any
    imports: Any
    classes: Any
    _name_uses: Any
    _calls: Any
    _all_calls: Any
    _attribute_loads: Any
    _method_class: Any
    _bindings_of: Any
    _method: Any
    _where: Any
    _is_builtin: Any
    _keeps_result: Any

    def _init_call_sites(self) -> None:
        self._passing: set[tuple[int, str]] = set()  # parameters being worked out now (a cycle gives up)
        self._passed: dict[tuple[int, str], Parts | None] = {}
        self._instance_calls: dict[str, list[tuple[ast.Call, _Identifier]]] | None = None
        self._finding_instance_calls = False

    def _passed_parts(self, function: _Function, parameter: str, depth: int) -> Parts | None:
        """The parts every call of ``function`` in the file passes for ``parameter``; None when unknown."""
        if self.partial:
            return None  # the calls of this function may be in the lines a partial index left out
        key = (id(function), parameter)
        if key in self._passed:
            return self._passed[key]
        if key in self._passing or depth > MAX_DEPTH:
            return None
        self._passing.add(key)
        try:
            result = self._agreed_argument(function, parameter, depth)
        finally:
            self._passing.discard(key)
        if not self._passing and not self._finding_instance_calls and depth <= 2:
            self._passed[key] = result  # not cut short by a cycle or the depth limit: true for this version
        return result

    def _agreed_argument(self, function: _Function, parameter: str, depth: int) -> Parts | None:
        sites = self._call_sites(function, depth + 1)
        if not sites:
            return None
        bound = self._is_bound_method(function)
        arguments = function.args
        positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)][1 if bound else 0 :]
        if bound and parameter not in positional and parameter not in [a.arg for a in arguments.kwonlyargs]:
            return None  # ``self`` itself
        options: list[Parts | None] = []
        for call, where in sites:
            argument = _argument(call, parameter, positional)
            if argument is _UNKNOWN:
                return None
            if argument is _MISSING:
                argument = _default(function, parameter)
                if argument is None:
                    return None  # the call would fail, or the parameter is ``*args``: nothing to learn
                where = self._where(function.lineno - 1)
            if isinstance(argument, ast.Constant) and argument.value is None:
                continue
            options.append(self.parts(argument, where, argument.lineno - 1, depth + 1))  # type: ignore[union-attr]
        return common_parts(options) if options else None

    def _is_bound_method(self, function: _Function) -> bool:
        """A method called through an instance (its first parameter is the instance): not a staticmethod."""
        if function not in self._method_class:
            return False
        return not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)

    def _call_sites(self, function: _Function, depth: int) -> list[tuple[ast.Call, _Identifier]] | None:
        """Every call of ``function`` in the file and where it is, or None when the function escapes or is not a
        kind whose calls the file can show."""
        owner = self._method_class.get(function)
        if owner is None:
            return self._function_calls(function)
        if not all(self._keeps_result(d) for d in function.decorator_list):
            return None  # a property, or a decorator that may call it in other ways
        if function.name == "__init__":
            return self._constructor_calls(function, owner)
        sites = self._method_calls(function, depth)
        if sites is None:
            return None
        if function.name == "forward":
            sites = sites + self._forward_calls(function)
        return sites

    def _function_calls(self, function: _Function) -> list[tuple[ast.Call, _Identifier]] | None:
        uses = self._name_uses.get(function.name, [])
        if not uses or function.name in self.imports or len(self._bindings_of(function.name)) != 1:
            return None
        calls = {id(call.func): call for call in self._calls.get(function.name, [])}
        if any(id(use) not in calls for use in uses):
            return None  # passed around, decorated, stored: its other callers are unknown
        return [(call, self._where(call.lineno - 1)) for call in calls.values()]

    def _method_calls(self, function: _Function, depth: int) -> list[tuple[ast.Call, _Identifier]] | None:
        """``self.name(...)`` and ``obj.name(...)`` calls that run this ``def`` (the receiver an instance of its
        class or of a subclass that inherits it); None when ``.name`` is used in another way anywhere
        (``self.apply(self._init_weights)``) or on a receiver the file cannot type."""
        calls = []
        for use in self._attribute_loads.get(function.name, []):
            call = self._call_of(use)
            if call is None:
                if function.name == "forward":
                    continue  # ``super().forward``, a bound ``self.forward`` stored: other instances' forwards
                return None
            where = self._where(call.lineno - 1)
            receiver = self.infer(use.value, where, call.lineno - 1, depth + 1)
            if receiver is None or receiver.user_class is None:
                if function.name == "forward":
                    continue  # ``self.layer.forward(x)``: a torch layer's forward, or one the file cannot tell
                return None
            found = self._method(receiver.user_class, function.name)
            if found is not None and found[0] is function:
                calls.append((call, where))
        return calls

    def _constructor_calls(self, init: _Function, owner: ast.ClassDef) -> list[tuple[ast.Call, _Identifier]] | None:
        """The calls that run this ``__init__``: ``Owner(...)`` (or a subclass that inherits it), and
        ``super().__init__(...)`` in a subclass. None when a class is used in another way than being called,
        subclassed or passed to ``isinstance`` (a factory passed around: its calls are elsewhere)."""
        classes = [name for name in self.classes if (found := self._method(name, "__init__")) and found[0] is init]
        allowed = {id(base) for info in self.classes.values() for base in info.node.bases}
        for checker in ("isinstance", "issubclass"):
            for call in self._calls.get(checker, []):
                allowed.update(id(node) for argument in call.args[1:] for node in ast.walk(argument))
        calls = []
        for name in classes:
            by_func = {id(call.func): call for call in self._calls.get(name, [])}
            for use in self._name_uses.get(name, []):
                if id(use) in by_func:
                    call = by_func[id(use)]
                    calls.append((call, self._where(call.lineno - 1)))
                elif id(use) not in allowed:
                    return None
        for call, _scope, klass in self._all_calls:
            func = call.func
            if (
                klass is not None
                and klass is not owner
                and isinstance(func, ast.Attribute)
                and func.attr == "__init__"
                and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name)
                and func.value.func.id == "super"
                and self._inherits(klass.name, owner.name)
            ):
                calls.append((call, self._where(call.lineno - 1)))
        return calls

    def _inherits(self, class_name: str, base: str) -> bool:
        """True when the file's class ``class_name`` derives from its class ``base`` through local bases."""
        seen: set[str] = set()
        pending = [class_name]
        while pending:
            name = pending.pop()
            if name in seen or name not in self.classes:
                continue
            seen.add(name)
            for node in self.classes[name].node.bases:
                if isinstance(node, ast.Name):
                    if node.id == base:
                        return True
                    pending.append(node.id)
        return False

    def _call_of(self, func: ast.Attribute) -> ast.Call | None:
        return self._call_by_func.get(id(func))

    def _forward_calls(self, forward: _Function) -> list[tuple[ast.Call, _Identifier]]:
        """Calls of instances of the classes whose ``forward`` is this ``def``."""
        found = []
        for class_name, calls in self._instance_call_map().items():
            method = self._method(class_name, "forward")
            if method is not None and method[0] is forward and self._method(class_name, "__call__") is None:
                found.extend(calls)
        return found

    def _instance_call_map(self) -> dict[str, list[tuple[ast.Call, _Identifier]]]:
        """Calls of instances of the file's classes, by class: found once per index by inferring the callee of
        every call that may be one."""
        if self._instance_calls is not None:
            return self._instance_calls
        if self._finding_instance_calls:
            return {}  # asked again while looking: nothing is known yet
        from torchls.core.names import _Identifier

        self._finding_instance_calls = True
        found: dict[str, list[tuple[ast.Call, _Identifier]]] = defaultdict(list)
        try:
            for call, scope, klass in self._all_calls:
                if not self._may_call_an_instance(call.func):
                    continue
                where = _Identifier(0, 0, call, scope, klass)
                spent, self.steps = self.steps, 0  # each callee gets a budget of its own
                value = self.infer(call.func, where, call.lineno - 1)
                self.steps = spent
                if value is not None and value.user_class is not None:
                    found[value.user_class].append((call, where))
        finally:
            self._finding_instance_calls = False
        self._instance_calls = dict(found)
        return self._instance_calls

    def _may_call_an_instance(self, func: ast.expr) -> bool:
        """A callee that may hold an instance of a class: ``self(...)``, a name bound by an assignment, a loop or a
        parameter, or an attribute that some ``__init__`` assigns (``self.attn``, ``model.encoder``). Function
        names, classes, imports and method calls are left out: inferring every callee of a long file costs."""
        if isinstance(func, ast.Name):
            if func.id == "self":
                return True
            bindings = self._bindings_of(func.id)
            return bool(bindings) and func.id not in self.classes and all(b.defines is None for b in bindings)
        if isinstance(func, ast.Attribute):
            return any(func.attr in info.self_bindings for info in self.classes.values())
        # ``Block(4)(x)``: an instance made and called at once
        return isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id in self.classes


def _argument(call: ast.Call, parameter: str, positional: list[str]) -> object:
    """The expression a call passes for ``parameter``, :data:`_MISSING` when it passes none, :data:`_UNKNOWN`
    when it cannot be told (``*args``, ``**kwargs`` before it is found)."""
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return keyword.value
    if parameter in positional:
        index = positional.index(parameter)
        for number, argument in enumerate(call.args):
            if isinstance(argument, ast.Starred):
                return _UNKNOWN
            if number == index:
                return argument
    if any(k.arg is None for k in call.keywords):
        return _UNKNOWN
    return _MISSING


def _default(function: _Function, parameter: str) -> ast.expr | None:
    """The default value of ``parameter``; None when it has none."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    offset = len(positional) - len(arguments.defaults)
    for index, argument in enumerate(positional):
        if argument.arg == parameter:
            return arguments.defaults[index - offset] if index >= offset else None
    for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        if argument.arg == parameter:
            return default
    return None
