"""The checker's abstract interpreter: one walk over a file that evaluates values and dispatches to rules.

Statements are evaluated in order, scope by scope, so a name's value is the one the straight-line code gives
it. After a branch or a loop, a name keeps its value only where every path agrees (:func:`values.merge`).
Methods of a class see ``self.x`` as what ``__init__`` assigned, and a user model's call returns what its
``forward`` returns. Whatever is not modelled here is unknown, and rules say nothing about unknown values.

Every expression node is evaluated exactly once; after a node is evaluated, the rules registered for its type
are called, so a rule reads the values of the node's parts from :class:`~torchls.core.rules.base.Context`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from torchls.core import facts, symbols
from torchls.core.interpreter.base import _UNROLL_ITEMS, Env, InterpreterBase
from torchls.core.interpreter.calls import CallsMixin
from torchls.core.interpreter.expressions import ExpressionsMixin
from torchls.core.interpreter.known_values import _int, _known_items, _literal
from torchls.core.interpreter.modules import ModulesMixin
from torchls.core.interpreter.named_sizes import NamedSizesMixin
from torchls.core.interpreter.statements import StatementsMixin
from torchls.core.interpreter.tensor_methods import TensorMethodsMixin
from torchls.core.interpreter.torch_functions import TorchFunctionsMixin
from torchls.core.interpreter.user_classes import UserClassesMixin
from torchls.core.interpreter.user_functions import UserFunctionsMixin
from torchls.core.rules.base import CallInfo, Context, Rule
from torchls.core.statements import assigned_names
from torchls.core.values import (
    CPU,
    DictValue,
    InstanceValue,
    Literal,
    Number,
    OfClass,
    Origin,
    SequenceOf,
    TensorValue,
    TupleValue,
    Value,
    merge,
)


class Interpreter(
    StatementsMixin,
    ExpressionsMixin,
    NamedSizesMixin,
    CallsMixin,
    TorchFunctionsMixin,
    TensorMethodsMixin,
    ModulesMixin,
    UserClassesMixin,
    UserFunctionsMixin,
    InterpreterBase,
):
    def __init__(self, ctx: Context, dispatch: dict[type[ast.AST], list[Rule]]) -> None:
        super().__init__(ctx, dispatch)
        self._expr_table: dict[type[ast.AST], Callable[[Any, Env], Value]] = {
            ast.Name: self._name,
            ast.Constant: self._constant,
            ast.Tuple: self._sequence,
            ast.List: self._sequence,
            ast.Attribute: self._attribute,
            ast.Call: self._call,
            ast.BinOp: self._binop,
            ast.UnaryOp: self._unaryop,
            ast.Subscript: self._subscript,
            ast.IfExp: self._ifexp,
            ast.NamedExpr: self._namedexpr,
            ast.JoinedStr: self._joinedstr,
            ast.Compare: self._compare,
            ast.BoolOp: self._boolop,
            ast.Dict: self._dict,
        }
        self._stmt_table: dict[type[ast.AST], Callable[[Any, Env], None]] = {
            ast.Assign: self._assign,
            ast.AugAssign: self._augassign,
            ast.AnnAssign: self._annassign,
            ast.Expr: lambda node, env: self._discard(self.expr(node.value, env)),
            ast.Return: self._return,
            ast.If: self._if,
            ast.Assert: self._assert,
            ast.For: self._for,
            ast.AsyncFor: self._for,
            ast.While: self._while,
            ast.With: self._with,
            ast.AsyncWith: self._with,
            ast.Try: self._try,
            ast.FunctionDef: self._function,
            ast.AsyncFunctionDef: self._function,
            ast.ClassDef: self._class,
        }

    @staticmethod
    def _discard(_value: Value) -> None:
        return None

    # ------------------------------------------------------------------------------------------ driver

    def run(self, tree: ast.Module) -> None:
        counts: dict[str, int] = {}
        for stmt in tree.body:
            for target in assigned_names(stmt):
                counts[target] = counts.get(target, 0) + 1
        self.stable_globals = {name for name, count in counts.items() if count == 1}
        self.functions = {
            stmt.name: stmt
            for stmt in tree.body
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name in self.stable_globals
        }
        text = self.ctx.source.text
        self.default_device_changed = "set_default_device" in text or "set_default_tensor_type" in text
        self.ctx.file_facts["classes"] = self.classes
        self.ctx.tree = tree
        self.block(tree.body, self.module_env)
        self._settle_unstable_reads()

    def _settle_unstable_reads(self) -> None:
        """Reads of attributes assigned more than once (``self.head`` that ``reset_classifier`` replaces) learn,
        once the whole file is walked, the class all their values share: for hover, after the rules have run."""
        values = self.ctx.values
        collected = self.call_values
        for node, klass, name in self._unstable_reads:
            if node is None or values.get(node) is not None or (collected is not None and collected.get(node)):
                continue
            shared = klass.attribute_class(name)
            if shared is not None:
                values[node] = shared

    # ---- torch functions and classes

    def _subsets(self, qualname: str, info: CallInfo) -> Value:
        """``random_split(ds, [800, 200])`` / ``Subset(ds, idx)``: datasets whose samples are ``ds``'s."""
        dataset = info.arg(0, "dataset")
        if not isinstance(dataset, InstanceValue):
            return None
        subset = InstanceValue(
            "torch.utils.data.Subset",
            (("dataset", dataset), ("on_cpu", dataset.arg("on_cpu"))),
            Origin(info.node, "在这里划分了数据集"),
        )
        if qualname.endswith("Subset"):
            return subset
        lengths = _known_items(info.arg(1, "lengths"))
        return TupleValue((subset,) * len(lengths)) if lengths and len(lengths) <= _UNROLL_ITEMS else None

    # ---- iteration

    def _dataset_sample(self, dataset: Value, node: ast.AST) -> Value:
        """One item of a dataset: a TensorDataset's rows, or what a Dataset class's ``__getitem__`` returns."""
        if not isinstance(dataset, InstanceValue):
            return None
        if dataset.qualname == "torch.utils.data.Subset":
            return self._dataset_sample(dataset.arg("dataset"), node)
        tensors = dataset.arg("tensors")
        if isinstance(tensors, TupleValue):
            rows = [
                TensorValue(shape=t.shape[1:], dtype=t.dtype, device=t.device, origin=t.origin)
                if isinstance(t, TensorValue) and t.shape
                else TensorValue(dtype=t.dtype, device=t.device)
                if isinstance(t, TensorValue)
                else None
                for t in tensors.items
            ]
            return TupleValue(tuple(rows))
        klass = self._user_class_of(dataset)
        if klass is None or klass.method("__getitem__") is None:
            return None
        call = ast.Call(func=ast.Name(id="__getitem__"), args=[], keywords=[])
        ast.copy_location(call, node)
        return self._user_method(dataset, CallInfo(call, method="__getitem__", args=[Number("int")]))

    def _dataset_length(self, dataset: Value, node: ast.AST) -> int | None:
        """``len(dataset)`` when it is known: a TensorDataset's first dim, a Dataset class's ``__len__``."""
        if not isinstance(dataset, InstanceValue):
            return None
        tensors = dataset.arg("tensors")
        if isinstance(tensors, TupleValue):
            first = tensors.items[0] if tensors.items else None
            return first.shape[0] if isinstance(first, TensorValue) and first.shape else None
        klass = self._user_class_of(dataset)
        if klass is None or klass.method("__len__") is None:
            return None
        call = ast.copy_location(ast.Call(func=ast.Name(id="__len__"), args=[], keywords=[]), node)
        return _int(self._user_method(dataset, CallInfo(call, method="__len__")))

    def _loader_batch(self, loader: InstanceValue, dataset: Value, node: ast.AST) -> Value:
        """A batch of a DataLoader with the default collate: the samples' structure with a batch dim in front."""
        sample = self._dataset_sample(dataset, node)
        if sample is None:
            return None
        size = loader.arg("batch_size", Literal(1))  # DataLoader's default batch_size is 1
        if isinstance(size, Literal) and size.value is None:
            return sample  # batch_size=None: no batching, samples as they are
        batch: Any = _int(size)
        if batch is not None and batch != 1 and _literal(loader.arg("drop_last")) is not True:
            # The last batch may be shorter: a size of its own, the same for every tensor of the batch.
            size_name = symbols.Sym.named("batch", hash(("loader", node.lineno, node.col_offset)))
            length = self._dataset_length(dataset, node)
            if length is not None and length % batch:
                self._partial_batches[size_name] = (batch, length)
            batch = size_name
        on_cpu = (
            isinstance(dataset, InstanceValue) and dataset.arg("on_cpu") is True and not self.default_device_changed
        )
        return _collated(sample, batch, Origin(node, "这个 batch 来自 DataLoader，在 CPU 上") if on_cpu else None)

    def _iteration(self, iterable: Value, node: ast.expr) -> Value:
        """What each item of ``for ... in iterable`` is, when known."""
        if isinstance(iterable, SequenceOf):
            return iterable.item
        known = _known_items(iterable) if not isinstance(iterable, InstanceValue) else None
        if known:
            item = known[0]
            for other in known[1:]:
                item = merge(item, other)
            return item
        if isinstance(iterable, InstanceValue) and iterable.qualname == "builtins.zip":
            zipped = iterable.arg("of")
            parts = (
                tuple(self._iteration(part, node) for part in zipped.items) if isinstance(zipped, TupleValue) else ()
            )
            return TupleValue(parts) if any(p is not None for p in parts) else None
        if isinstance(iterable, InstanceValue) and iterable.qualname in ("builtins.enumerate", "progress"):
            inner_node = iterable.origin.node if iterable.origin is not None else node
            inner = self._iteration(iterable.arg("of"), inner_node)  # type: ignore[arg-type]
            if iterable.qualname == "progress":
                return inner
            return TupleValue((Number("int"), inner)) if inner is not None else None
        if isinstance(iterable, InstanceValue):
            dataset = iterable.arg("dataset")
            if iterable.qualname.endswith("DataLoader") and iterable.arg("collate_fn") is None:
                batch = self._loader_batch(iterable, dataset, node)
                if batch is not None:
                    return batch
            if (
                iterable.qualname.endswith("DataLoader")
                and iterable.arg("collate_fn") is None
                and isinstance(dataset, InstanceValue)
                and dataset.arg("on_cpu") is True
                and not self.default_device_changed
            ):
                # The default collate stacks what the dataset returns: CPU samples make CPU batches.
                item = TensorValue(
                    device=CPU, is_leaf=True, origin=Origin(node, "这个 batch 来自 DataLoader，在 CPU 上")
                )
                return TupleValue((item, item))
            if iterable.qualname.startswith("torch.nn.Module."):
                element = facts.MODULE_ITERATORS.get(iterable.qualname.rsplit(".", 1)[1])
                if isinstance(element, tuple):  # named_parameters(): (name, parameter) pairs
                    return TupleValue(tuple(_element_value(e, node) for e in element))
                return _element_value(element, node)
        if isinstance(iterable, TensorValue) and iterable.shape:
            return TensorValue(shape=iterable.dims[1:], dtype=iterable.dtype, device=iterable.device, is_leaf=False)  # type: ignore[index]
        if isinstance(iterable, TensorValue):  # rows of a tensor of unknown rank: tensors where it is
            return TensorValue(dtype=iterable.dtype, device=iterable.device, is_leaf=False)
        return None


def _element_value(qualname: str | None, node: ast.AST) -> Value:
    """An item of a module's ``parameters()``, ``buffers()`` or ``modules()``."""
    if qualname == "torch.nn.Parameter":
        return TensorValue(requires_grad=True, is_leaf=True, registered=True, origin=Origin(node, "模型参数"))
    if qualname == facts.TENSOR:
        return TensorValue()  # a buffer: a tensor of the module's, nothing more known
    return OfClass(qualname) if qualname is not None else None


def _collated(sample: Value, batch: Any, on_cpu: Origin | None) -> Value:
    """What the default ``collate_fn`` makes of a list of samples like ``sample``: tensors gain a batch dim.

    ``on_cpu``: where the batch was made, when the dataset's samples are known to be on the CPU.
    """
    if isinstance(sample, TupleValue):
        parts = tuple(_collated(item, batch, on_cpu) for item in sample.items)
        return TupleValue(parts)
    if isinstance(sample, DictValue):
        return DictValue(tuple((key, _collated(item, batch, on_cpu)) for key, item in sample.items))
    if isinstance(sample, TensorValue):
        shape = (batch, *sample.dims) if sample.dims is not None else None
        return TensorValue(
            shape=shape,
            dtype=sample.dtype,
            device=CPU if on_cpu else sample.device,
            is_leaf=True,
            origin=on_cpu or sample.origin,
        )
    if isinstance(sample, Literal) and isinstance(sample.value, bool | int | float):
        dtype = {bool: "torch.bool", int: "torch.int64", float: "torch.float64"}[type(sample.value)]
        return TensorValue(shape=(batch,), dtype=dtype, device=CPU, is_leaf=True)  # Python numbers become a tensor
    return None
