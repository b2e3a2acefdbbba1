"""The file's own classes: class statements, instances, their attributes, their methods.

``__init__`` is evaluated first, so the other methods see what it assigns to ``self``; an instance built with
known constructor arguments gets ``__init__`` evaluated again for them (once per arguments). Dataclass fields,
buffers registered with ``register_buffer``, and attributes assigned more than once (which are not what
``__init__`` made) are tracked here.
"""

from __future__ import annotations

import ast
from typing import Any

from torchls.core.interpreter.base import Env, InterpreterBase
from torchls.core.interpreter.class_info import ClassInfo
from torchls.core.interpreter.known_values import _literal
from torchls.core.rules.base import CallInfo, Context
from torchls.core.statements import assigned_names, self_attributes_assigned
from torchls.core.values import DictValue, InstanceValue, ModuleValue, Origin, TensorValue, TupleValue, Value


class UserClassesMixin(InterpreterBase):
    """Evaluates the file's classes: their definitions, instances, attributes and methods."""

    def _class(self, node: ast.ClassDef, env: Env) -> None:
        for expr in [*node.bases, *node.decorator_list, *(k.value for k in node.keywords)]:
            self.expr(expr, env)
        info = ClassInfo(node, self._torch_base(node))
        info.bases = tuple(
            self.classes[base.id] for base in node.bases if isinstance(base, ast.Name) and base.id in self.classes
        )
        self.classes[node.name] = info
        env[node.name] = None
        methods = [s for s in node.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
        info.methods = {method.name: method for method in methods}
        for method in methods:
            if method.name != "__init__":
                info.unstable.update(self_attributes_assigned(method))
                if self._mentions(method, "register_buffer"):  # a text test first: walking every method costs
                    info.unstable.update(_buffers_registered(method))  # registered again: not what __init__ made
        class_env: Env = {}
        for statement in node.body:
            if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                self.stmt(statement, class_env)
        assigned = [target for statement in node.body for target in assigned_names(statement)]
        info.class_attributes = {
            name: value for name, value in class_env.items() if assigned.count(name) == 1 and value is not None
        }
        if any(_is_dataclass_decorator(d, self.ctx) for d in node.decorator_list):
            info.fields = tuple(
                s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            )
        # __init__ first: the other methods read what it assigns to self.
        ordered = sorted(methods, key=lambda m: m.name != "__init__")
        for method in ordered:
            for decorator in method.decorator_list:
                self.expr(decorator, env)
            self._evaluate_defaults(method, env)
            returned = self._evaluate_function(method, info)
            self._generic_returns[method] = returned
            if method.name == "forward":
                info.forward_return = returned
            self._visit_rules(method)

    def _mentions(self, node: ast.AST, word: str) -> bool:
        """True when the source lines of ``node`` contain ``word``."""
        lines = self.ctx.source.lines[node.lineno - 1 : node.end_lineno]  # type: ignore[attr-defined]
        return any(word in line for line in lines)

    def _torch_base(self, node: ast.ClassDef) -> str | None:
        for base in node.bases:
            qualname = self.ctx.qualify(base)
            if qualname and qualname.startswith("torch."):
                return qualname
            if isinstance(base, ast.Name) and base.id in self.classes:
                inherited = self.classes[base.id].torch_base
                if inherited:
                    return inherited
        return None

    @staticmethod
    def _instance_arguments(value: Value) -> tuple[tuple[str, Value], ...]:
        """The constructor arguments an instance of the file's class was made with (those known)."""
        if isinstance(value, ModuleValue) and value.user_class is not None:
            return value.args
        if isinstance(value, InstanceValue):
            return value.arg("init", ())
        return ()

    def _member(self, klass: ClassInfo, owner: Value, name: str) -> Value:
        """``owner.name`` for an instance of the file's class: what its ``__init__`` made of its arguments.

        On a module moved to a device, its submodules, parameters and buffers are there too; a plain tensor
        attribute is not (``.to()`` does not move it).
        """
        value = self._member_as_built(klass, owner, name)
        device = owner.device if isinstance(owner, ModuleValue) else None
        if device is None:
            return value
        if isinstance(value, ModuleValue) and value.device is None:
            return _moved(value, device)
        if isinstance(value, TensorValue) and value.registered:
            return value.with_(device=device)
        return value

    def _member_as_built(self, klass: ClassInfo, owner: Value, name: str) -> Value:
        if klass.is_unstable(name):
            if self._reading is not None:
                self._unstable_reads.append((self._reading, klass, name))
            return None
        getter = klass.method(name)
        if getter is not None and any(isinstance(d, ast.Name) and d.id == "property" for d in getter.decorator_list):
            # cfg.d_model where d_model is a @property: its body, for this instance
            call = ast.copy_location(ast.Call(func=ast.Name(id=name), args=[], keywords=[]), getter)
            return self._call_function(getter, self._defining_class(klass, name), CallInfo(call), owner)
        arguments = self._instance_arguments(owner)
        if arguments and klass.fields is not None:
            fields = dict(arguments)
            if name in fields:
                return fields[name]
        elif arguments:
            attributes = self._instance_attributes(klass, owner, arguments)
            if attributes is not None and name in attributes:
                return attributes[name]
        return klass.attribute(name)

    def _instance_attributes(
        self, klass: ClassInfo, owner: Value, arguments: tuple[tuple[str, Value], ...]
    ) -> dict[str, Value] | None:
        """What ``__init__`` assigns to ``self`` for these constructor arguments (evaluated once per arguments)."""
        try:
            cached = klass.instances.get(arguments)
        except TypeError:  # a value that cannot be a key: evaluate nothing rather than guess
            return None
        if cached is not None:
            return cached
        init = klass.method("__init__")
        if init is None:
            return None
        attributes: dict[str, Value] = {}
        klass.instances[arguments] = attributes  # a class that builds another of itself sees what is there so far
        if isinstance(owner, ModuleValue):
            owner = owner.with_(device=None, training=None)
        self._specialise(init, self._defining_class(klass, "__init__"), dict(arguments), owner, None, attributes)
        return attributes

    def _defining_class(self, klass: ClassInfo, method: str) -> ClassInfo:
        return next((k for k in klass.chain() if method in k.methods), klass)

    def _init_attribute_sink(self, target: ast.expr | None = None) -> dict[str, Value] | None:
        """Where ``self.<name> = ...`` stores the instance's attributes, while an ``__init__`` is evaluated (and
        ``target``, when given, is such a ``self.<name>``)."""
        klass = self.ctx.klass
        if klass is None or self.ctx.function is None or self.ctx.function.name != "__init__":
            return None
        if target is not None and not (
            isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
        ):
            return None
        return self._attribute_sink if self._attribute_sink is not None else klass.attributes

    @staticmethod
    def _bind_fields(klass: ClassInfo, info: CallInfo) -> dict[str, Value] | None:
        """A dataclass's generated ``__init__``: fields in order, each given or its class-body default."""
        fields = klass.fields or ()
        if info.starred or len(info.args) > len(fields) or info.unknown_keywords:
            return None
        bound = dict(zip(fields, info.args, strict=False))
        bound.update((k, v) for k, v in info.kwargs.items() if k in fields)
        for name in fields:
            bound.setdefault(name, klass.class_attributes.get(name))
        return bound

    def _registers_buffer(self, info: CallInfo) -> bool:
        """``self.register_buffer(name, tensor)`` in a method of the file's class: note what ``self.name`` holds."""
        func = info.node.func
        klass = self.ctx.klass
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return False
        if klass is None or self.ctx.function is None:
            return False
        if self.ctx.function.name == "__init__":
            self._register_buffer(info)
        name, tensor = _literal(info.arg(0, "name")), info.arg(1, "tensor")
        if isinstance(name, str):
            # a buffer is a tensor, or None when registered as None
            registered = TensorValue() if tensor is None else tensor
            klass.assigned.setdefault(name, []).append(registered)
        return True

    def _register_buffer(self, info: CallInfo) -> None:
        """``self.register_buffer("mask", t)`` in ``__init__``: ``self.mask`` is ``t``, moving with the module."""
        name, tensor = _literal(info.arg(0, "name")), info.arg(1, "tensor")
        if not isinstance(name, str) or self.ctx.klass is None:
            return
        sink = self._attribute_sink if self._attribute_sink is not None else self.ctx.klass.attributes
        if name in sink:
            self.ctx.klass.unstable.add(name)
        sink[name] = tensor.with_(registered=True, device=None) if isinstance(tensor, TensorValue) else None

    def _field_default(self, info: CallInfo, env: Env) -> Value:
        """``field(default=...)`` or ``field(default_factory=lambda: [...])``: the value a new instance gets."""
        if "default" in info.kwargs:
            return info.kwargs["default"]
        factory = info.arg_node(0, "default_factory") if info.has_keyword("default_factory") else None
        if isinstance(factory, ast.Lambda) and not factory.args.args:
            return self.expr(factory.body, env)
        if isinstance(factory, ast.Name) and factory.id in ("list", "tuple") and self._is_global(factory.id, env):
            return TupleValue(())
        if isinstance(factory, ast.Name) and factory.id == "dict" and self._is_global(factory.id, env):
            return DictValue(())
        return None

    def _construct(self, klass: ClassInfo, info: CallInfo) -> Value:
        """An instance of the file's class, carrying the constructor arguments the call gives (those known)."""
        init = klass.method("__init__")
        if klass.fields is not None and init is None:
            bound = self._bind_fields(klass, info)
        else:
            bound = self._bind_arguments(init, info, skip_first=True) if init is not None else None
        arguments = tuple(bound.items()) if bound and any(v is not None for v in bound.values()) else ()
        origin = Origin(info.node, f"在这里创建了 `{klass.name}`")
        if klass.is_module:
            return ModuleValue(
                klass.torch_base or "torch.nn.Module", arguments, user_class=klass.name, origin=origin, training=True
            )
        facts: list[tuple[str, Any]] = [("class", klass.name), ("init", arguments)]
        if klass.torch_base and klass.torch_base.startswith("torch.utils.data."):
            return InstanceValue("dataset", (("on_cpu", not klass.moves_to_device), *facts), origin)
        return InstanceValue("user", tuple(facts), origin)

    def _user_method(self, receiver: Value, info: CallInfo, env: Env | None = None) -> Value:
        """``obj.method(...)`` where ``obj`` is an instance of the file's class: the method, for this call."""
        klass = self._user_class_of(receiver)
        function = klass.method(info.method) if klass is not None and info.method else None
        if function is None:
            return None
        returned = self._call_function(function, self._defining_class(klass, info.method), info, receiver)
        if env is not None:
            self._after_call(function, info, env, skip_first=True)
        return returned


def _buffers_registered(function: ast.AST) -> set[str]:
    """The names ``self.register_buffer("name", ...)`` registers in ``function``."""
    return {
        node.args[0].value
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "register_buffer"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def _is_dataclass_decorator(decorator: ast.expr, ctx: Context) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    qualname = ctx.qualify(target) or (target.id if isinstance(target, ast.Name) else "")
    return qualname in ("dataclasses.dataclass", "dataclass")


def _moved(module: ModuleValue, device: str) -> ModuleValue:
    """``module`` after ``.to(device)`` of a module holding it: the layers it contains moved too."""
    children = tuple(_moved(c, device) if c is not None and c.device is None else c for c in module.children)
    return module.with_(children=children, device=device)
