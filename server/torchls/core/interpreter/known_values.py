"""What an abstract value is known to be, read as Python: a literal, an int, the sizes of a shape argument,
the items of a sequence the code spells out, the one value several values agree on.

Every part of the interpreter reads its arguments through these, so they live apart from any one job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torchls.core import symbols
from torchls.core.values import DictValue, InstanceValue, Literal, ModuleValue, TupleValue, Value, merge

_LAYER_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList"})


def _literal(value: Value) -> Any:
    """A Python value from a literal abstract value (ints, floats, strings, bools, tuples of them)."""
    if isinstance(value, Literal):
        return value.value
    if isinstance(value, TupleValue):
        items = [_literal(v) for v in value.items]
        return None if any(i is None for i in items) else tuple(items)
    return None


def _int(value: Value) -> int | None:
    literal = _literal(value)
    return literal if isinstance(literal, int) and not isinstance(literal, bool) else None


def _dims(values: Sequence[Value]) -> list[int | None] | None:
    """Sizes from ``view(2, -1)`` or ``view((2, -1))``: ints, ``None`` for unknown ones.

    None when even the number of dims is unknown: a single argument that is not a literal int may be a whole
    shape (``view(shape)``, ``zeros(x.shape)``).
    """
    if len(values) == 1:
        only = values[0]
        if isinstance(only, TupleValue):
            values = only.items
        elif _int(only) is None:
            return None
    if any(isinstance(v, TupleValue) for v in values):
        return None
    return [_int(v) for v in values]


def _size_dims(values: Sequence[Value]) -> list[Any] | None:
    """Like :func:`_dims`, keeping the sizes the code names (``view(b, t, h * dh)``)."""
    if len(values) == 1 and isinstance(values[0], TupleValue):
        values = values[0].items
    if len(values) == 1 and not isinstance(_literal(values[0]), int | symbols.Sym):
        return None
    if any(isinstance(v, TupleValue) for v in values):
        return None
    out = []
    for v in values:
        literal = _literal(v)
        out.append(literal if symbols.is_size(literal) else None)
    return out


def _merged(values: Any) -> Value:
    """The value every one of ``values`` agrees on (see ``values.merge``); None for none."""
    result: Value = None
    for index, value in enumerate(values):
        result = value if index == 0 else merge(result, value)
    return result


def _known_items(iterable: Value) -> tuple[Value, ...] | None:
    """The items a loop over ``iterable`` sees, in order, when the code fixes them (a tuple, a list of layers)."""
    if isinstance(iterable, InstanceValue) and iterable.qualname == "builtins.enumerate":
        inner = _known_items(iterable.arg("of"))
        return tuple(TupleValue((Literal(i), v)) for i, v in enumerate(inner)) if inner is not None else None
    if isinstance(iterable, TupleValue):
        return iterable.items
    if isinstance(iterable, DictValue):
        return tuple(Literal(k) for k, _ in iterable.items)  # iterating a dict gives its keys
    if isinstance(iterable, ModuleValue) and iterable.children and iterable.qualname in _LAYER_CONTAINERS:
        return iterable.children
    if isinstance(iterable, ModuleValue) and iterable.qualname == "torch.nn.ModuleDict":
        keys = iterable.arg("keys")
        return tuple(Literal(k) for k in keys) if isinstance(keys, tuple) else None  # iterating gives the keys
    return None
