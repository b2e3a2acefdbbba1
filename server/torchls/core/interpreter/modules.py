"""Modules: building torch layers from their constructor arguments, their methods (``.to``, ``.train``,
``.parameters()``...), and applying a layer, a ``Sequential`` or a user model to an input.

A user model's call returns what its ``forward`` returns for that input; a ``Sequential`` feeds its input
through its layers in order, noting what reached each one.
"""

from __future__ import annotations

import ast
from typing import Any

from torchls.core import facts, layers
from torchls.core.interpreter.base import Env, InterpreterBase
from torchls.core.interpreter.known_values import _literal
from torchls.core.interpreter.torch_tables import LAYER_PARAMETERS
from torchls.core.rules.base import CallInfo
from torchls.core.values import (
    CPU,
    CUDA,
    DictValue,
    InstanceValue,
    Literal,
    ModuleValue,
    OfClass,
    Origin,
    TensorValue,
    TupleValue,
    Value,
    parse_device,
)

# Layers whose output is a newly allocated tensor in the default memory format.
_FRESH_LAYERS = frozenset({"Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "Embedding"})

_POOLS = frozenset({"MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d"})


class ModulesMixin(InterpreterBase):
    """Evaluates layers and models: their construction, their methods, and calling them."""

    def _construct_layer(self, short: str, qualname: str, info: CallInfo) -> Value:
        node = info.node
        if short == "Sequential":
            children = tuple(v if isinstance(v, ModuleValue) else None for v in info.args)
            if node.keywords or info.starred:
                children = ()
            return ModuleValue(
                qualname, children=children, origin=Origin(node, "在这里定义了 `Sequential`"), training=True
            )
        if short == "ModuleList":
            given = info.arg(0, "modules")
            children = (
                tuple(v if isinstance(v, ModuleValue) else None for v in given.items)
                if isinstance(given, TupleValue)
                else ()
            )
            return ModuleValue(
                qualname, children=children, origin=Origin(node, "在这里定义了 `ModuleList`"), training=True
            )
        if short == "ModuleDict":
            given = info.arg(0, "modules")
            known = (
                isinstance(given, DictValue)
                and all(isinstance(k, str) and isinstance(v, ModuleValue) for k, v in given.items)
                and not info.starred
            )
            return ModuleValue(
                qualname,
                (("keys", tuple(k for k, _ in given.items)),) if known else (),  # type: ignore[union-attr]
                children=tuple(v for _, v in given.items) if known else (),  # type: ignore[union-attr]
                origin=Origin(node, "在这里定义了 `ModuleDict`"),
                training=True,
            )
        names = LAYER_PARAMETERS.get(short, ())
        args: list[tuple[str, Any]] = []
        for index, value in enumerate(info.args):
            if index < len(names) and not info.starred:
                args.append((names[index], _literal(value) if not isinstance(value, ModuleValue) else value))
        for key, value in info.kwargs.items():
            args.append((key, _literal(value)))
        return ModuleValue(qualname, tuple(args), origin=Origin(node, f"在这里定义了 `{short}`"), training=True)

    def _module_method(self, module: ModuleValue, info: CallInfo, env: Env) -> Value:
        method = info.method
        entries = _dict_entries(module)
        if entries is not None and method in ("items", "keys", "values") and not info.args:
            # layers.items(): the ModuleDict's (key, layer) pairs in insertion order
            if method == "items":
                return TupleValue(tuple(TupleValue((Literal(k), v)) for k, v in entries))
            return TupleValue(tuple(Literal(k) if method == "keys" else v for k, v in entries))
        if method in ("to", "cuda", "cpu"):
            device = CUDA if method == "cuda" else CPU if method == "cpu" else None
            if method == "to":
                candidates = list(info.args) + ([info.kwargs["device"]] if "device" in info.kwargs else [])
                for value in candidates:
                    literal = _literal(value)
                    if isinstance(literal, str) and literal.startswith("torch."):
                        continue  # model.to(torch.float16): a dtype, not a device
                    device = value.device if isinstance(value, TensorValue) else parse_device(value)
                    break
            moved = module.with_(device=device)
            func = info.node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                env[func.value.id] = moved  # modules move in place: the name now holds the moved model
            return moved
        if method in ("train", "eval"):
            mode: bool | None = False
            if method == "train":
                given = _literal(info.arg(0, "mode"))
                written = bool(info.node.args or info.node.keywords)
                mode = given if isinstance(given, bool) else (None if written else True)
            changed = module.with_(training=mode)
            func = info.node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                env[func.value.id] = changed  # modes change in place, like devices
            return changed
        if method in ("requires_grad_", "float", "half", "double"):
            return module
        if method in facts.MODULE_ITERATORS and not self._redefines(module, method):
            return InstanceValue("torch.nn.Module." + method)
        if method == "forward":
            return self._apply_module(module, CallInfo(info.node, args=info.args, kwargs=info.kwargs))
        return self._user_method(module, info, env)

    def _redefines(self, module: ModuleValue | OfClass, method: str) -> bool:
        """True when the file's class of ``module`` defines ``method`` itself (so torch's meaning may not hold)."""
        klass = self._user_class_of(module)
        return klass is not None and klass.method(method) is not None

    def _class_method(self, receiver: OfClass, info: CallInfo, env: Env) -> Value:
        """A method of a value known only by its class: what torch's method gives for any instance."""
        method = info.method or ""
        if receiver.user_class is not None and self._redefines(receiver, method):
            return self._user_method(receiver, info, env)
        is_module = receiver.qualname == facts.MODULE or facts.is_module_class(receiver.qualname)
        if is_module and method in facts.MODULE_ITERATORS:
            return InstanceValue("torch.nn.Module." + method)
        if is_module and method in facts.MODULE_SELF_METHODS:
            return receiver
        return None

    def _apply_module(self, module: ModuleValue, info: CallInfo) -> Value:
        """The value of calling a layer (or a user model) on the call's arguments."""
        if module.user_class is not None:
            klass = self.classes.get(module.user_class)
            forward = klass.method("forward") if klass is not None else None
            returned = None
            if forward is not None:
                returned = self._call_function(forward, self._defining_class(klass, "forward"), info, module)
            if isinstance(returned, TensorValue):
                # A moved model computes on its device, unless its own code moves tensors around.
                device = module.device if klass is not None and not klass.moves_to_device else None
                if module.device is None:
                    device = returned.device  # not moved as a whole: where its forward computed, for this input
                return TensorValue(
                    shape=returned.dims,
                    tail=returned.tail,
                    dtype=returned.dtype,
                    device=device,
                    provenance=returned.provenance,
                    origin=returned.origin,
                    is_leaf=False,
                )
            if isinstance(returned, TupleValue | DictValue):
                return returned  # (output, hidden), (recon, mu, logvar), {"logits": ...}: as forward made them
            return None
        x = info.arg(0, "input")
        short = module.qualname.rsplit(".", 1)[-1]
        if short.endswith("Loss"):
            return self._loss_value(Literal(module.arg("reduction", "mean")), x, info.node)
        if short == "Sequential":
            return self._apply_sequential(module, x, info)
        if x is None:
            x = TensorValue()  # a layer's input is a tensor even when we do not know which
        if not isinstance(x, TensorValue):
            return None
        return self.layer_output(module, x, info.node)

    def _apply_sequential(self, module: ModuleValue, x: Value, info: CallInfo) -> Value:
        if not module.children:
            return None
        steps: list[tuple[ModuleValue, Value]] = []
        value = self._run_layers(module.children, x if x is not None else TensorValue(), info, steps)
        info.layer_inputs = tuple(steps)
        return value

    def _run_layers(self, children: tuple[ModuleValue | None, ...], value: Value, info: CallInfo, steps: list) -> Value:
        """Feed ``value`` through ``children`` in order, noting what reached each layer (nested ones included)."""
        for child in children:
            if not isinstance(value, TensorValue):
                return None
            if child is None:
                result = None
            elif child.qualname == "torch.nn.Sequential" and child.children:
                result = self._run_layers(child.children, value, info, steps)
            else:
                steps.append((child, value))
                if child.user_class is not None:  # a block of the file's own: its forward, for this input
                    result = self._apply_module(child, CallInfo(info.node, args=[value]))
                else:
                    result = self.layer_output(child, value, info.node)
            # A layer we do not model still hands one tensor on: unknown, but later layers (a final Softmax)
            # still say what they make of it.
            value = result if result is not None else TensorValue()
        return value

    def layer_output(self, module: ModuleValue, x: TensorValue, node: ast.AST) -> Value:
        result = layers.layer_output(module, x, node)
        short = module.qualname.rsplit(".", 1)[-1]
        keeps_layout = short in layers.SAME_SHAPE_LAYERS or short in _POOLS
        if (
            isinstance(result, TensorValue)
            and (short in _FRESH_LAYERS or (keeps_layout and x.contiguous is True))
            and result.strides is None
            and result.dims is not None
            and "channels_last" not in self.ctx.source.text
        ):
            # a new tensor in the default layout (a file that never asks for channels_last keeps that layout), or
            # an elementwise layer's / a pool's result on a contiguous input, which keeps the input's layout
            result = result.with_(contiguous=True, **layers.fresh_strides(result.dims))
        return result


def _dict_entries(module: Value) -> tuple[tuple[str, ModuleValue | None], ...] | None:
    """The (key, layer) pairs of an ``nn.ModuleDict`` built from a dict the code spells out; None otherwise."""
    if not isinstance(module, ModuleValue) or module.qualname != "torch.nn.ModuleDict":
        return None
    keys = module.arg("keys")
    if not isinstance(keys, tuple) or len(keys) != len(module.children):
        return None
    return tuple(zip(keys, module.children, strict=True))
