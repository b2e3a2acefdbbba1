"""The classes the interpreter proves for a file's names and attributes: what hover and completion need of it.

``x`` in ``x.view``, ``self.fc`` in ``self.fc.weight``: the editor asks what class such a receiver is. The
checking process runs the interpreter anyway for the diagnostics, so it also hands back this table, keyed by
each node's place in the source (a syntax tree cannot cross the process boundary, its positions can); the
server attaches it to that version's index (``ModuleIndex.use_analysis``). One analysis per version, for every
feature.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from torchls.core import facts
from torchls.core.values import DeviceValue, InstanceValue, ModuleValue, OfClass, TensorValue, Value

NodeKey = tuple[int, int, int, int]  # lineno, col_offset, end_lineno, end_col_offset (ast's own units)
ClassOf = tuple[str, str | None]  # (torch class, the file's class or None)


def node_key(node: ast.AST) -> NodeKey:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


def torch_class(value: Value) -> ClassOf | None:
    """The torch class an abstract value is an instance of, and the file's class where it is one of those."""
    if isinstance(value, TensorValue):
        if value.registered and value.requires_grad is True and value.is_leaf is True:
            return "torch.nn.Parameter", None  # nn.Parameter(...), fc.weight: the card says what a parameter is
        return facts.TENSOR, None
    if isinstance(value, ModuleValue | OfClass):
        return value.qualname or facts.MODULE, value.user_class
    if isinstance(value, DeviceValue):
        return "torch.device", None
    if (
        isinstance(value, InstanceValue)
        and value.qualname.startswith("torch.")
        and value.qualname.rsplit(".", 1)[-1][:1].isupper()  # a class, not the iterator `parameters()` gives
    ):
        return value.qualname, None
    return None


def file_values(
    values: Mapping[ast.AST, Value], called: Mapping[ast.AST, Value] | None, every_node: bool = False
) -> dict[ast.AST, Value]:
    """Each name and attribute's value (``every_node``: each expression's) after an interpreter run: what every
    call of its function agrees on (``called``), else what its body proves for any argument (``values``)."""
    found: dict[ast.AST, Value] = {}
    called = called or {}
    for node in dict.fromkeys([*values, *called]):
        if not every_node and not isinstance(node, ast.Name | ast.Attribute):
            continue
        value = called.get(node)
        if value is None:
            value = values.get(node)
        if value is not None:
            found[node] = value
    return found


def receiver_table(values: Mapping[ast.AST, Value]) -> dict[NodeKey, ClassOf]:
    """The class of each node whose value names one, by the node's place (see :func:`file_values`)."""
    table: dict[NodeKey, ClassOf] = {}
    for node, value in values.items():
        known = torch_class(value)
        if known is not None:
            table[node_key(node)] = known
    return table
