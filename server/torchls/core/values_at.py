"""What the checker's analysis knows about the value under the cursor, for hover.

The same interpreter that feeds the diagnostics evaluates the file (without rules). A name inside a function
that the file calls shows what every such call agrees on (``x`` in ``forward`` is ``(64, 196, 768)`` when the
only call passes that); a name in code nothing calls shows what holds for any argument. One analysis, so hover
and the rules never disagree about a tensor.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchls.core.imports import file_imports
from torchls.core.interpreter import Interpreter
from torchls.core.receivers import file_values, torch_class
from torchls.core.rules.base import Context
from torchls.core.text import Position, SourceText, Span
from torchls.core.values import ACCELERATOR, ModuleValue, TensorValue, Value

_DEVICES = {ACCELERATOR: "加速设备（有 GPU 时是 cuda）"}


@dataclass(frozen=True, slots=True)
class ValueAt:
    span: Span
    text: str  # the expression as written: `x`, `self.fc`
    value: Value


class FileValues:
    """The values of a file's names and attributes, by position (built once per document version)."""

    def __init__(self, tree: ast.Module, source: SourceText, every_node: bool = False) -> None:
        """``every_node``: keep the value of every expression, not only of names and attributes."""
        ctx = Context(source, file_imports(tree))
        interpreter = Interpreter(ctx, {})
        interpreter.call_values = {}
        self.failed = False  # the interpreter stopped on this file (a modelling gap): no values then
        try:
            interpreter.run(tree)
        except Exception:  # a modelling gap must not cost the hover
            self.failed = True
            interpreter.joined_values.clear()
        self.source = source
        self.context = ctx  # the file's tree, imports and parents, as the interpreter saw them
        self._by_line: dict[int, list[tuple[Span, ast.AST, Value]]] = {}
        # A function's names have values from the calls the file makes even where its unknown arguments gave none;
        # where the calls disagree, what the body proves for any argument still holds.
        self._values: dict[ast.AST, Value] = file_values(
            interpreter.joined_values, interpreter.call_values, every_node=every_node
        )
        for node, value in self._values.items():
            if not _worth_showing(value):
                continue
            span = source.span_from_ast(node)
            if span is not None:
                self._by_line.setdefault(span.start.line, []).append((span, node, value))

    def value_of(self, node: ast.AST) -> Value:
        """What the analysis knows about the name or attribute ``node`` of this version's tree."""
        return self._values.get(node)

    def items(self) -> list[tuple[ast.AST, Value]]:
        """Every node of the tree with what the analysis claims about it (the execution oracle checks them all)."""
        return list(self._values.items())

    def class_of(self, node: ast.AST) -> tuple[str, str | None] | None:
        """``(torch class, the file's class or None)`` of the value of ``node``: what hover and completion need."""
        return torch_class(self._values.get(node))

    def all(self) -> list[ValueAt]:
        """Every name and attribute whose value the analysis would show, in no particular order."""
        return [
            ValueAt(span, ast.unparse(node), value) for items in self._by_line.values() for span, node, value in items
        ]

    def at(self, position: Position) -> ValueAt | None:
        """The innermost name or attribute at ``position`` whose value the analysis knows."""
        best: tuple[Span, ast.AST, Value] | None = None
        for span, node, value in self._by_line.get(position.line, ()):
            if span.contains(position) and (best is None or _width(span) < _width(best[0])):
                best = (span, node, value)
        if best is None:
            return None
        span, node, value = best
        text = ast.unparse(node)
        return ValueAt(span, text, value)


def _width(span: Span) -> tuple[int, int]:
    return (span.end.line - span.start.line, span.end.column - span.start.column)


def _worth_showing(value: Value) -> bool:
    if isinstance(value, TensorValue):
        return any(x is not None for x in (value.shape, value.tail, value.dtype, value.device, value.provenance))
    return isinstance(value, ModuleValue) and value.user_class is None and bool(value.args or value.children)


def describe(found: ValueAt, source: SourceText) -> str | None:
    """``x``: Tensor (64, ?, 10) · float32 · cuda, and where that value was made: a short Markdown block."""
    value = found.value
    if isinstance(value, TensorValue):
        parts = ["Tensor"]
        if value.dims is not None:  # named sizes keep the code's names: (b, t, 4, 16)
            dims = ", ".join("?" if d is None else str(d) for d in value.dims)
            parts[0] += f" ({dims}{',' if len(value.dims) == 1 else ''})"
        elif value.tail:
            parts[0] += " (..., " + ", ".join("?" if d is None else str(d) for d in value.tail) + ")"
        if value.dtype:
            parts.append(value.dtype.removeprefix("torch."))
        if value.device:
            parts.append(_DEVICES.get(value.device, value.device))
        kind = {
            "softmax": "softmax 的概率",
            "log_softmax": "log_softmax 的对数概率",
            "sigmoid": "sigmoid 的概率",
            "logits": "层的原始输出（logits）",
            "one_hot": "one-hot 编码",
        }.get(value.provenance or "")
        lines = [f"`{found.text}`: " + " · ".join(parts)]
        if kind:
            lines.append(f"- 值的来历：{kind}")
        if value.requires_grad:
            lines.append("- 需要梯度" + ("（叶子张量）" if value.is_leaf else ""))
    elif isinstance(value, ModuleValue):
        name = value.qualname.removeprefix("torch.")
        shown = ", ".join(f"{k}={v}" for k, v in value.args if v is not None and not isinstance(v, ModuleValue))
        lines = [
            f"`{found.text}`: `{name}({shown})`"
            + (f" · {_DEVICES.get(value.device, value.device)}" if value.device else "")
        ]
    else:
        return None
    origin = value.origin
    if origin is not None:
        span = source.span_from_ast(origin.node)
        if span is not None:
            lines.append(f"- 第 {span.start.line + 1} 行：{origin.what}")
    lines.append("\n*torchls 对代码的分析结果：只写出能确定的部分，`?` 表示这一维随调用而变或无法确定。*")
    return "\n".join(lines)
