"""Data pipelines: datasets, their subsets, DataLoader batches, and what iterating anything gives.

A ``TensorDataset``'s samples are its tensors' rows, a Dataset class's are what its ``__getitem__`` returns; a
loader with the default collate stacks them with a batch dim in front (named, when the last batch may be
shorter), on the CPU when the samples are. ``for`` loops and comprehensions read their items through
:meth:`DataPipelinesMixin._iteration` (``enumerate``, ``zip``, ``tqdm``, ``parameters()``, rows of a tensor).
"""

from __future__ import annotations

import ast
from typing import Any

from torchls.core import facts, symbols
from torchls.core.interpreter.base import _UNROLL_ITEMS, InterpreterBase
from torchls.core.interpreter.known_values import _int, _known_items, _literal
from torchls.core.rules.base import CallInfo
from torchls.core.values import (
    CPU,
    LOSS,
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


class DataPipelinesMixin(InterpreterBase):
    """Evaluates datasets and loaders, and the items of whatever a loop iterates."""

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

    def _dataset_sample(self, dataset: Value, node: ast.AST) -> Value:
        """One item of a dataset: a TensorDataset's rows, or what a Dataset class's ``__getitem__`` returns."""
        if not isinstance(dataset, InstanceValue):
            return None
        if dataset.qualname == "torch.utils.data.Subset":
            return self._dataset_sample(dataset.arg("dataset"), node)
        tensors = dataset.arg("tensors")
        if isinstance(tensors, TupleValue):
            rows = [
                TensorValue(
                    shape=t.shape[1:], dtype=t.dtype, device=t.device, provenance=_row_provenance(t), origin=t.origin
                )
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

    def _custom_batch(self, loader: InstanceValue, dataset: Value, node: ast.AST) -> Value:
        """A batch of a DataLoader whose ``collate_fn`` is the file's function: that function called on a list of
        ``batch_size`` samples (``toks, labels = zip(*batch)``, ``pad_sequence(toks)``...)."""
        sample = self._dataset_sample(dataset, node)
        size = loader.arg("batch_size", Literal(1))
        if sample is None or (isinstance(size, Literal) and size.value is None):
            return None  # batch_size=None: collate_fn gets one sample at a time
        batch = self._batch_dim(loader, dataset, node, _int(size))
        function = self.functions[loader.arg("collate_function").value]
        call = CallInfo(node, args=[SequenceOf(sample, batch)], spliced=True)  # type: ignore[arg-type]
        return self._call_function(function, None, call)

    def _loader_batch(self, loader: InstanceValue, dataset: Value, node: ast.AST) -> Value:
        """A batch of a DataLoader with the default collate: the samples' structure with a batch dim in front."""
        sample = self._dataset_sample(dataset, node)
        if sample is None:
            return None
        size = loader.arg("batch_size", Literal(1))  # DataLoader's default batch_size is 1
        if isinstance(size, Literal) and size.value is None:
            return sample  # batch_size=None: no batching, samples as they are
        batch = self._batch_dim(loader, dataset, node, _int(size))
        on_cpu = (
            isinstance(dataset, InstanceValue) and dataset.arg("on_cpu") is True and not self.default_device_changed
        )
        return _collated(sample, batch, Origin(node, "这个 batch 来自 DataLoader，在 CPU 上") if on_cpu else None)

    def _batch_dim(self, loader: InstanceValue, dataset: Value, node: ast.AST, batch: Any) -> Any:
        """The size of a loader's batches: ``batch`` when every batch has it, else a name for it (the last one
        may be shorter), noting what is known of that name."""
        if batch is not None and batch != 1 and _literal(loader.arg("drop_last")) is not True:
            # The last batch may be shorter: a size of its own, the same for every tensor of the batch.
            size_name = symbols.Sym.named("batch", hash(("loader", node.lineno, node.col_offset)))
            length = self._dataset_length(dataset, node)
            if length is not None and length % batch:
                self._partial_batches[size_name] = (batch, length)
            resampled = any(key in ("sampler", "batch_sampler") for key, _ in loader.args)
            if length is not None and length > 0 and not resampled and (length % batch or batch) > 1:
                self._batches_never_one[size_name] = (length % batch or batch, batch, length)
            batch = size_name
        return batch

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
            if iterable.qualname.endswith("DataLoader") and isinstance(iterable.arg("collate_function"), Literal):
                return self._custom_batch(iterable, dataset, node)
            if iterable.qualname.endswith("DataLoader") and not _custom_collate(iterable):
                batch = self._loader_batch(iterable, dataset, node)
                if batch is not None:
                    return batch
            if (
                iterable.qualname.endswith("DataLoader")
                and not _custom_collate(iterable)
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
            provenance = _row_provenance(iterable)
            return TensorValue(
                shape=iterable.dims[1:],  # type: ignore[index]
                dtype=iterable.dtype,
                device=iterable.device,
                provenance=provenance,
                is_leaf=False,
                origin=iterable.origin if provenance is not None else None,
            )
        if isinstance(iterable, TensorValue):  # rows of a tensor of unknown rank: tensors where it is
            return TensorValue(dtype=iterable.dtype, device=iterable.device, is_leaf=False)
        return None


def _row_provenance(tensor: TensorValue) -> str | None:
    """The kind of values (softmax, one-hot, ...) each row of ``tensor`` holds along the last dim: the tensor's,
    when it has more than one dim (a row of a 1-D tensor is a number)."""
    if tensor.provenance == LOSS or tensor.rank is None or tensor.rank < 2:
        return None
    return tensor.provenance


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
            provenance=None if sample.provenance == LOSS else sample.provenance,  # stacked rows keep their kind
            is_leaf=True,
            origin=on_cpu or sample.origin,
        )
    if isinstance(sample, Literal) and isinstance(sample.value, bool | int | float):
        dtype = {bool: "torch.bool", int: "torch.int64", float: "torch.float64"}[type(sample.value)]
        return TensorValue(shape=(batch,), dtype=dtype, device=CPU, is_leaf=True)  # Python numbers become a tensor
    return None


def _custom_collate(loader: InstanceValue) -> bool:
    """The loader is given a ``collate_fn`` (known or not): its batches are what that function makes, not the
    default collation of the samples."""
    # collate_fn=None is the default collate; a function (or a value the analysis does not know) is not
    return any(key == "collate_fn" and (value is None or _literal(value) is not None) for key, value in loader.args)
