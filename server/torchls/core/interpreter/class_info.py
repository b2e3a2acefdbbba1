"""What the interpreter learns about a class the file defines (:class:`ClassInfo`): its torch base, what
``__init__`` assigns to ``self``, what ``forward`` returns, its methods.

Rules read it from the context after the walk, so it is a plain record with no interpreter behind it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from torchls.core.values import ModuleValue, OfClass, TensorValue, Value, merge


@dataclass(slots=True, eq=False)  # identity: one per class statement
class ClassInfo:
    """A class defined in the file: its torch base, what ``__init__`` assigns to ``self``, what ``forward`` returns."""

    node: ast.ClassDef
    torch_base: str | None
    attributes: dict[str, Value] = field(default_factory=dict)
    unstable: set[str] = field(default_factory=set)  # assigned outside __init__ or more than once
    forward_return: Value = None
    bases: tuple[ClassInfo, ...] = ()  # the file's own classes this one derives from, nearest first
    class_attributes: dict[str, Value] = field(default_factory=dict)  # assigned in the class body
    fields: tuple[str, ...] | None = None  # a dataclass's fields, in order (None: not a dataclass)
    # Constructor arguments -> what __init__ (and the bases' __init__ it calls) assigned to self for them.
    instances: dict[tuple, dict[str, Value]] = field(default_factory=dict)
    _moves: bool | None = None
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    # Every value assigned to ``self.name`` (or registered as a buffer) anywhere, in or out of ``__init__``.
    assigned: dict[str, list[Value]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def is_module(self) -> bool:
        return bool(self.torch_base and self.torch_base.startswith("torch.nn."))

    def chain(self) -> list[ClassInfo]:
        """This class, then the file's classes it derives from (depth first, each once)."""
        seen: list[ClassInfo] = []
        stack = [self]
        while stack:
            klass = stack.pop(0)
            if klass not in seen:
                seen.append(klass)
                stack.extend(klass.bases)
        return seen

    @property
    def moves_to_device(self) -> bool:
        """The class's code calls ``.cuda()`` or ``.to(...)``: what it makes may not stay where its input is."""
        if self._moves is None:
            self._moves = _moves_to_device(self.node)
        return self._moves

    def is_unstable(self, name: str) -> bool:
        return any(name in klass.unstable for klass in self.chain())

    def attribute(self, name: str) -> Value:
        """What ``__init__`` (this class's or an inherited one) assigns to ``self.name`` for any arguments."""
        if self.is_unstable(name):
            return None
        for klass in self.chain():
            if name in klass.attributes:
                return klass.attributes[name]
        for klass in self.chain():
            if name in klass.class_attributes:
                return klass.class_attributes[name]
        return None

    def attribute_class(self, name: str) -> Value:
        """The class every value ever assigned to ``self.name`` shares (a tensor, a module): what holds wherever an
        attribute that is assigned more than once is read, though not which of its values it has there."""
        values = [value for klass in self.chain() for value in klass.assigned.get(name, ())]
        if not values:
            return None
        result = _class_only(values[0])
        for value in values[1:]:
            result = merge(result, _class_only(value))
        return result

    def instance_attributes(self, arguments: tuple) -> dict[str, Value] | None:
        """What ``self`` holds in an instance built with ``arguments``, once the interpreter has built one."""
        try:
            return self.instances.get(arguments) if arguments else None
        except TypeError:
            return None

    def method(self, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for klass in self.chain():
            if name in klass.methods:
                return klass.methods[name]
        return None


def _class_only(value: Value) -> Value:
    """Only the class of ``value``: a tensor with nothing else known, a module as :class:`OfClass`."""
    if isinstance(value, TensorValue):
        return TensorValue()
    if isinstance(value, ModuleValue | OfClass):
        return OfClass(value.qualname, value.user_class)
    return None


def _moves_to_device(klass: ast.ClassDef) -> bool:
    """True when a Dataset class's code calls ``.cuda()`` or ``.to(...)``: its samples may not be on the CPU."""
    return any(isinstance(node, ast.Attribute) and node.attr in ("cuda", "to") for node in ast.walk(klass))
