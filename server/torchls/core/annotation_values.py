"""What a type annotation proves about a value, in the interpreter's terms.

``x: Tensor``, ``mask: Optional[torch.Tensor]``, ``-> Tuple[Tensor, Tensor]``, ``model: nn.Module``,
``device: torch.device``: an annotation names a class, not a shape or a device, so the value it gives carries
the class and nothing a rule could act on (a :class:`TensorValue` with every field unknown, an :class:`OfClass`).
The code's own values win where it has them: the interpreter uses an annotation only for a parameter no call
binds and for a function whose returns it cannot tell apart.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from torchls.core import facts
from torchls.core.names import not_optional
from torchls.core.parts import generic_name
from torchls.core.values import DeviceValue, OfClass, SequenceOf, TensorValue, TupleValue, Value

# Tensor classes an annotation may name: all are tensors to the interpreter (their dtype is not checked here).
_TENSOR_CLASSES = frozenset(
    {"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"}
    | {
        f"torch.{kind}Tensor"
        for kind in ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Byte", "Bool")
    }
)
_SEQUENCES = frozenset({"List", "list", "Sequence", "Iterable", "Iterator"})


def annotation_value(
    annotation: ast.expr, qualify: Callable[[ast.expr], str | None], torch_base_of: Callable[[str], str | None]
) -> Value:
    """The value ``annotation`` proves, or None. ``qualify`` reads names through the file's imports;
    ``torch_base_of`` gives the torch base of one of the file's classes (None for other names)."""
    spelled = not_optional(annotation)
    if spelled is None or isinstance(spelled, ast.BinOp):
        return None
    if isinstance(spelled, ast.Subscript):
        head = generic_name(spelled)
        elements = spelled.slice.elts if isinstance(spelled.slice, ast.Tuple) else [spelled.slice]
        if head in ("Tuple", "tuple"):
            if len(elements) == 2 and isinstance(elements[1], ast.Constant) and elements[1].value is Ellipsis:
                return _sequence_of(annotation_value(elements[0], qualify, torch_base_of))
            return TupleValue(tuple(annotation_value(e, qualify, torch_base_of) for e in elements))
        if head in _SEQUENCES and len(elements) == 1:
            return _sequence_of(annotation_value(elements[0], qualify, torch_base_of))
        return None
    qualname = qualify(spelled)
    if qualname is None:
        if isinstance(spelled, ast.Name) and (base := torch_base_of(spelled.id)) is not None:
            return OfClass(base, spelled.id)  # one of the file's own modules
        return None
    if qualname in _TENSOR_CLASSES:
        return TensorValue()
    if qualname == "torch.device":
        return DeviceValue(None)
    if qualname == facts.MODULE or facts.is_module_class(qualname) or qualname.startswith("torch."):
        return OfClass(qualname)
    return None


def _sequence_of(item: Value) -> Value:
    return SequenceOf(item) if item is not None else None
