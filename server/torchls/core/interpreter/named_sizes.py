"""Named sizes: the names code gives the dims it reads (``b, t, d = x.shape``, ``t = x.size(1)``), and what
``view``/``reshape`` make of shapes written with them.

A dim the analysis cannot tell is named after the code (``t``) or the expression (``x.shape[1]``), so later
shapes written with the same names can still be checked: element counts, strides a ``view`` cannot address,
a loader's shorter last batch.
"""

from __future__ import annotations

import ast
from typing import Any

from torchls.core import shapes, symbols
from torchls.core.interpreter.base import Env, InterpreterBase
from torchls.core.values import TensorValue


class NamedSizesMixin(InterpreterBase):
    """Gives unknown dims the names the code reads them with, and checks views written with them."""

    def _note_dim_names(self, target: ast.expr, value: ast.expr) -> None:
        """``b, t, d = x.shape`` / ``t = x.size(1)``: the names the code gives the dims it reads."""
        if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            if _reads_shape(value) and not (isinstance(value, ast.Call) and value.args):
                self._dim_names[value] = {i: e.id for i, e in enumerate(target.elts)}  # type: ignore[attr-defined]
                self._unpacked_shapes.add(value)
        elif isinstance(target, ast.Name):
            if isinstance(value, ast.Subscript) and _reads_shape(value.value) and isinstance(value.slice, ast.Constant):
                if isinstance(value.slice.value, int):
                    self._dim_names[value.value] = {value.slice.value: target.id}
            elif _reads_shape(value) and isinstance(value, ast.Call) and len(value.args) == 1:
                index = value.args[0]
                if isinstance(index, ast.Constant) and isinstance(index.value, int):
                    self._dim_names[value] = {index.value: target.id}

    def _forward_input(self, holder: ast.expr, reader: ast.AST) -> bool:
        """``holder`` is a parameter of a module's ``forward`` that no call gave a value, its shape unpacked."""
        function, klass = self.ctx.function, self.ctx.klass
        if not isinstance(holder, ast.Name) or function is None or function.name != "forward" or klass is None:
            return False
        parameters = [a.arg for a in (*function.args.posonlyargs, *function.args.args)][1:]
        return reader in self._unpacked_shapes and holder.id in parameters and klass.is_module

    def _named_tensor(self, holder: ast.expr, reader: ast.AST, tensor: TensorValue, env: Env) -> TensorValue:
        """``tensor`` with a name for each dim it leaves unknown, where the code reads its shape (``x.shape``,
        ``x.size(1)``). The name is the code's (``t`` in ``b, t, d = x.shape``) or the expression itself; a
        plain variable is refined in place, so later uses of ``x`` share the names."""
        names = self._dim_names.get(reader, {})
        dims = tensor.dims
        if dims is None:
            if reader not in self._unpacked_shapes:
                return tensor
            count = len(names)
            tail = tensor.tail or ()
            if count < len(tail):
                return tensor
            dims = (None,) * (count - len(tail)) + tuple(tail)  # b, t, d = x.shape: x has 3 dims
        if all(d is not None for d in dims):
            return tensor
        rank = len(dims)
        text = self.ctx.text(holder)
        named = []
        for index, d in enumerate(dims):
            if d is None:
                name = names.get(index) or names.get(index - rank) or f"{text}.shape[{index}]"
                # The same line reading the same abstract tensor names the same size (a memoised call and a
                # fresh evaluation of it agree); another tensor, or another line, names another one.
                key = hash((getattr(reader, "lineno", 0), getattr(reader, "col_offset", 0), index, tensor))
                d = symbols.Sym.named(name, key)
            named.append(d)
        refined = tensor.with_(shape=tuple(named), tail=None)
        if refined.contiguous and refined.strides is None and shapes.sized(refined.dims):
            refined = refined.with_(sym_strides=shapes.contiguous_named(refined.dims))  # type: ignore[arg-type]
        if isinstance(holder, ast.Name) and env.get(holder.id) in (tensor, None):
            env[holder.id] = refined
        return refined

    def _last_batch_problem(self, tensor: TensorValue, named: list[Any], method: str) -> str | None:
        """``x.view(BATCH_SIZE, -1)`` on a loader's batch whose last batch is shorter: fails on that batch."""
        first = tensor.dims[0] if tensor.dims else None
        if not isinstance(first, symbols.Sym) or first not in self._partial_batches or not named:
            return None
        batch, length = self._partial_batches[first]
        rest = symbols.product(list(tensor.dims[1:]))  # type: ignore[index]
        fixed = symbols.product([d for d in named if d != -1])
        if named[0] != batch or not isinstance(rest, int) or not isinstance(fixed, int) or fixed <= 0:
            return None
        last = (length % batch) * rest  # the elements of the last batch
        if (last % fixed == 0) if -1 in named else (last == fixed):
            return None  # that batch still fits the shape (wrongly, but without an error)
        return (
            f"数据集有 {length} 个样本，`batch_size={batch}` 时最后一个批次只有 {length % batch} 个，"
            f"`{method}({batch}, ...)` 在那一批会失败；第一维写 `-1` 或 `x.size(0)`"
        )

    def _view_named(
        self, tensor: TensorValue, named: list[Any], method: str, node: ast.AST
    ) -> tuple[Any, str | None, dict[str, Any]]:
        """``view``/``reshape`` where some size has a name: the new dims, a problem that holds for every binding
        (element counts, or a layout ``view`` cannot address), and the named strides of the result."""
        dims, problem = shapes.view_named(tensor.dims, named)
        self._problem(node, "count", problem)
        if dims is None:
            return None, problem, {}
        changes: dict[str, Any] = {}
        if tensor.sym_strides is not None and shapes.sized(tensor.dims) and shapes.sized(dims):
            strides, impossible = shapes.view_strides_named(tensor.dims, tensor.sym_strides, dims)  # type: ignore[arg-type]
            if impossible and method == "view":
                names = _deciding_names(tensor.dims, tensor.sym_strides, dims)  # type: ignore[arg-type]
                problem = "这个张量在内存中不连续，无法按新形状 `view`" + (
                    f"（只要 {'、'.join(f'`{n}`' for n in names)} 大于 1）" if names else ""
                )
                self._problem(node, "view_stride", problem)
            if strides is None and method == "reshape":
                strides = shapes.contiguous_named(dims)
            if strides is not None:
                changes["sym_strides"] = strides
                changes["contiguous"] = True if strides == shapes.contiguous_named(dims) else None
        return dims, problem, changes


def _deciding_names(dims: tuple, strides: tuple, new_dims: tuple) -> list[str]:
    """The named sizes a failing ``view`` depends on: those that, set to 1, would let it work."""
    names = []
    for atom in symbols.atoms_of([*dims, *new_dims]):
        one = [tuple(symbols.with_one(d, atom) for d in part) for part in (dims, strides, new_dims)]
        if not shapes.view_strides_named(*one)[1]:
            names.append(atom[0])
    return names


def _reads_shape(node: ast.expr) -> bool:
    """``x.shape`` or ``x.size(...)``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "shape"
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size"
