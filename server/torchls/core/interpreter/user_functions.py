"""The file's own functions and methods: their bodies, and calls of them (inter-procedural evaluation).

A body is evaluated once where it is defined, with unknown parameters; a call that knows something about its
arguments evaluates it again with them, so what a helper does to the caller's tensors reaches the rules
(bounded: memoised, a few calls deep, a budget per file). Values found that way are kept apart from the
general pass (:class:`_Overlay`) and, when asked, merged over every call for hover.
"""

from __future__ import annotations

import ast
from typing import Any

from torchls.core import facts, modes, shapes
from torchls.core.interpreter.base import _MAX_DEPTH, Env, InterpreterBase, log
from torchls.core.interpreter.class_info import ClassInfo
from torchls.core.interpreter.statements import _disables_grad
from torchls.core.rules.base import CallInfo
from torchls.core.values import InstanceValue, ModuleValue, OfClass, Origin, TensorValue, TupleValue, Value, merge


class UserFunctionsMixin(InterpreterBase):
    """Evaluates function definitions, and calls of the file's functions for their arguments."""

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, env: Env) -> None:
        for decorator in node.decorator_list:
            self.expr(decorator, env)
        self._evaluate_defaults(node, env)
        env[node.name] = None
        self._generic_returns[node] = self._evaluate_function(node, self.ctx.klass)

    def _evaluate_defaults(self, node: ast.FunctionDef | ast.AsyncFunctionDef, env: Env) -> None:
        """Evaluate default values where the ``def`` stands, and keep them for the calls that leave them out."""
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults: dict[str, Value] = {}
        with_defaults = positional[len(positional) - len(arguments.defaults) :]
        for arg, default in zip(with_defaults, arguments.defaults, strict=True):
            defaults[arg.arg] = self.expr(default, env)
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
            if default is not None:
                defaults[arg.arg] = self.expr(default, env)
        self._defaults[node] = defaults

    def _evaluate_function(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        klass: ClassInfo | None,
        arguments_given: dict[str, Value] | None = None,
        self_value: Value = None,
    ) -> Value:
        """Evaluate a function body in its own scope; returns the value all its returns agree on.

        ``arguments_given`` evaluates it for one call's argument values, ``self_value`` for one instance (see
        :meth:`_call_function`).
        """
        inner: Env = {}
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        for index, arg in enumerate(arguments):
            inner[arg.arg] = self._annotation(arg.annotation) if arg.annotation is not None else None
            if index == 0 and klass is not None and arg.arg == "self" and (self_value is not None or klass.torch_base):
                inner["self"] = self_value or ModuleValue(klass.torch_base or "", user_class=klass.name)
            elif index == 0 and klass is not None and arg.arg == "self" and not _is_static(node):
                inner["self"] = InstanceValue("user", (("class", klass.name),))  # any instance: its class's methods
            elif arguments_given is not None and arg.arg in arguments_given:
                given = arguments_given[arg.arg]
                if given is not None and not (given == OfClass(facts.MODULE) and inner[arg.arg] is not None):
                    inner[arg.arg] = given  # what the call passes, unless the annotation says more than "a module"
        for arg in (node.args.vararg, node.args.kwarg):
            if arg is not None:
                inner[arg.arg] = None
        saved = (self.ctx.function, self.ctx.klass, self._returns, self.ctx.grad_enabled, self.ctx.autocast)
        # A body runs when called, not where it is defined: its own decorators set its grad mode, and a call made
        # under no_grad or autocast runs it so (``for_a_call``); where it is defined says nothing.
        for_a_call = arguments_given is not None or self_value is not None
        callers_grad = self.ctx.grad_enabled if for_a_call else True
        self.ctx.function, self.ctx.klass, self._returns = node, klass, []
        self.ctx.grad_enabled = callers_grad and not any(_disables_grad(d, self.ctx) for d in node.decorator_list)
        self.ctx.autocast = self.ctx.autocast and for_a_call
        try:
            self.block(node.body, inner)
            returns = self._returns
        finally:
            self.ctx.function, self.ctx.klass, self._returns, self.ctx.grad_enabled, self.ctx.autocast = saved
        result = returns[0] if returns else None
        for other in returns[1:]:
            result = merge(result, other)
        if result is None and node.returns is not None:
            return self._annotation(node.returns)  # `-> Tensor` where the returns could not be told
        return result

    def _bind_arguments(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, info: CallInfo, skip_first: bool
    ) -> dict[str, Value] | None:
        """Parameter -> the value this call gives it (or its default); None when the call's shape is not known."""
        if info.starred or info.unknown_keywords:
            return None  # f(*args) or f(**options): which parameter gets what is not known
        arguments = function.args
        positional = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
        if skip_first:
            positional = positional[1:]
        keyword_only = [a.arg for a in arguments.kwonlyargs]
        if len(info.args) > len(positional) and arguments.vararg is None:
            return None  # more arguments than parameters: not a call of this function as we read it
        defaults = self._defaults.get(function, {})
        given: dict[str, Value] = dict(zip(positional, info.args, strict=False))
        for name, value in info.kwargs.items():
            if name in positional or name in keyword_only:
                given[name] = value
            elif arguments.kwarg is None:
                return None
        for name in [*positional, *keyword_only]:
            if name not in given:
                given[name] = defaults.get(name)
        return given

    def _call_function(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        klass: ClassInfo | None,
        info: CallInfo,
        self_value: Value = None,
    ) -> Value:
        """The value a call of the file's own function returns (see :meth:`_function_result`); under no_grad, what it
        computes has no graph, whatever its body was found to return where it is defined."""
        if not all(_keeps_the_function(d, self.ctx.qualify) for d in function.decorator_list):
            return None  # @custom_op(...), @lru_cache-like wrappers of unknown code: the call is not the body's
        returned = self._function_result(function, klass, info, self_value)
        return returned if self.ctx.grad_enabled else _graphless(returned, info.node)

    def _function_result(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        klass: ClassInfo | None,
        info: CallInfo,
        self_value: Value = None,
    ) -> Value:
        """The value a call of the file's own function or method returns, evaluated for the call's arguments.

        The body was evaluated once where it is defined, with unknown parameters; a call that knows something
        about its arguments (or an instance built with known constructor arguments) evaluates it again with
        them, so a helper's softmax, a block's sizes or a CPU tensor passed down reach the rules. Every rule
        runs during that evaluation, and its findings point back at the call (:attr:`Context.call_site`).
        Bounded: memoised per arguments, at most :data:`_MAX_DEPTH` calls deep, no recursion, and a budget of
        evaluations per file; past those, the call returns what the body returns for unknown parameters.
        """
        method = klass is not None and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list
        )
        generic = self._generic_returns.get(function)
        given = self._bind_arguments(function, info, skip_first=method)
        if given is None:
            return generic
        if not any(v is not None for v in given.values()) and not self._instance_arguments(self_value):
            return generic  # the call says nothing the first evaluation did not know
        key = (function, self_value, tuple(given.items()), self.ctx.grad_enabled, self.ctx.autocast)
        try:
            if key in self._specialised:
                return self._specialised[key]
        except TypeError:
            return generic
        returned = self._specialise(function, klass, given, self_value, info.node, self._attribute_sink_for(function))
        self._specialised[key] = returned
        return returned

    def _after_call(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, info: CallInfo, env: Env, skip_first: bool
    ) -> None:
        """What a call of the file's function leaves behind in the caller's models: their train/eval mode.

        ``train_epoch(model, ...)`` that calls ``model.train()`` leaves it in train mode; one that may call
        ``eval()`` or hand the model on to unknown code leaves the mode unknown.
        """
        names = [a.arg for a in [*function.args.posonlyargs, *function.args.args]][1 if skip_first else 0 :]
        passed: list[tuple[str, ast.expr]] = list(zip(names, info.node.args, strict=False))
        passed += [(k.arg, k.value) for k in info.node.keywords if k.arg is not None]
        models = [
            (parameter, argument.id, model)
            for parameter, argument in passed
            if isinstance(argument, ast.Name) and isinstance(model := self._load(argument.id, env), ModuleValue)
        ]
        if not models:
            return  # no model handed over: nothing to summarise (most calls)
        if function not in self._mode_effects:
            self._mode_effects[function] = modes.mode_effects(function, self.functions)
        effects = self._mode_effects[function]
        for parameter, name, model in models:
            if parameter in effects:
                env[name] = model.with_(training=effects[parameter])

    def _collect(self, values: dict) -> None:
        """Merge one specialised evaluation's own values into :attr:`call_values` (what every call agrees on)."""
        collected = self.call_values
        assert collected is not None
        for node, value in dict.items(values):
            collected[node] = merge(collected[node], value) if node in collected else value

    def _attribute_sink_for(self, function: ast.AST) -> dict[str, Value] | None:
        """``super().__init__(...)`` of an instance being built assigns into that instance; nothing else does."""
        return self._attribute_sink if getattr(function, "name", None) == "__init__" else None

    def _specialise(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        klass: ClassInfo | None,
        given: dict[str, Value],
        self_value: Value,
        call: ast.AST | None,
        sink: dict[str, Value] | None,
    ) -> Value:
        generic = self._generic_returns.get(function)
        if self._depth >= _MAX_DEPTH or function in self._active or self._budget <= 0:
            return generic
        self._budget -= 1
        saved = (self.ctx.values, self.ctx.calls, self.ctx.call_site, self._attribute_sink, self.joined_values)
        self.ctx.values, self.ctx.calls = _Overlay(self.ctx.values), _Overlay(self.ctx.calls)
        self.joined_values = {}  # what this call's evaluation proves, over its loops' iterations
        self._attribute_sink = sink
        if self.ctx.call_site is None and call is not None:
            self.ctx.call_site = Origin(call, _call_site_description(given))
        self._depth += 1
        self._active.append(function)
        self.ctx.calls_in_progress.append(call)
        try:
            return self._evaluate_function(function, klass, given, self_value)
        except Exception:  # a modelling gap in a second look must not cost the first
            log.debug("could not evaluate %s for a call", function.name, exc_info=True)
            return generic
        finally:
            self.ctx.calls_in_progress.pop()
            self._active.pop()
            self._depth -= 1
            if self.call_values is not None:
                self._collect(self.joined_values)
            self.ctx.values, self.ctx.calls, self.ctx.call_site, self._attribute_sink, self.joined_values = saved


# Decorators after which calling the name still runs the body as written, with the same arguments.
_TRANSPARENT_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "property",
        "functools.cached_property",
        "torch.no_grad",
        "torch.enable_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.set_grad_enabled",
        "torch.compile",
        "torch.jit.script",
        "torch.jit.ignore",
        "torch.jit.unused",
        "torch.jit.export",
        "torch.compiler.disable",
        "functools.cache",
        "functools.lru_cache",
        "functools.wraps",
        "abstractmethod",
        "abc.abstractmethod",
        "override",
        "typing.override",
    }
)


def _keeps_the_function(decorator: ast.expr, qualify) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = qualify(target) or (target.id if isinstance(target, ast.Name) else None)
    return name in _TRANSPARENT_DECORATORS


def _graphless(value: Value, call: ast.AST) -> Value:
    """A function's result computed under no_grad: its tensors have no graph, except a leaf that requires grad
    (a parameter the function hands back as it is)."""
    if isinstance(value, TensorValue):
        if value.requires_grad is False or value.is_leaf is True:
            return value
        return value.with_(requires_grad=False, is_leaf=True, no_graph=Origin(call, "在无梯度模式下算出"))
    if isinstance(value, TupleValue):
        return TupleValue(tuple(_graphless(item, call) for item in value.items))
    return value


class _Overlay(dict):
    """The values of one specialised evaluation: written here, read through to the evaluation around it."""

    __slots__ = ("below",)

    def __init__(self, below: dict) -> None:
        super().__init__()
        self.below = below

    def __missing__(self, key: Any) -> Any:
        return self.below[key]

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.below

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        return self.below.get(key, default)


def _is_static(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in function.decorator_list)


def _call_site_description(given: dict[str, Value]) -> str:
    shapes_given = "、".join(
        f"`{name}` 的形状是 {shapes.fmt(value.shape)}"
        for name, value in given.items()
        if isinstance(value, TensorValue) and value.shape is not None
    )
    return f"以这次调用的输入推算：{shapes_given}" if shapes_given else "以这次调用传入的参数推算"
