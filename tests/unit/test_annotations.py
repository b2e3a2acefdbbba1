"""The table of torch's private type aliases and torch's constants holds for the installed torch, and the
readable form and the kind checks built on it."""

from __future__ import annotations

import collections.abc
import importlib
import json
import types
import typing

import pytest
import torch

from torchls.core.annotations import (
    TORCH_DTYPES,
    TORCH_LAYOUTS,
    TORCH_MEMORY_FORMATS,
    TYPE_ALIASES,
    accepts,
    readable,
    torch_constant_kind,
)
from torchls.core.calls import ValueKind

# The stubs write these torch classes bare (``x: Tensor``); every other torch class is shown as ``torch.X``.
_BARE = {torch.Tensor: "Tensor", torch.SymInt: "SymInt", torch.SymFloat: "SymFloat", torch.SymBool: "SymBool"}


def render(annotation: object) -> str:
    """An annotation object as the table writes it, from the object torch defines (independent of torchls)."""
    if annotation is type(None) or annotation is None:
        return "None"
    if annotation is Ellipsis:
        return "..."
    if isinstance(annotation, typing.ForwardRef):
        return annotation.__forward_arg__
    if isinstance(annotation, str):  # a forward reference inside a subscript: ``Sequence["GradientEdge"]``
        return annotation
    if isinstance(annotation, list):  # the parameters of a Callable
        return "[" + ", ".join(render(item) for item in annotation) + "]"
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(render(argument) for argument in arguments)
    if origin is typing.Literal:
        return "Literal[" + ", ".join(json.dumps(argument) for argument in arguments) + "]"
    if origin is not None:
        return f"{render(origin)}[{', '.join(render(argument) for argument in arguments)}]"
    if annotation in (typing.Any, collections.abc.Callable, typing.Callable):
        return {typing.Any: "Any"}.get(annotation, "Callable")
    if getattr(annotation, "__module__", None) == "typing_extensions" or annotation is getattr(typing, "TypeIs", 0):
        return annotation._name  # TypeIs
    if annotation in _BARE:
        return _BARE[annotation]
    if isinstance(annotation, type) and annotation.__module__ == "builtins":
        return annotation.__name__
    if isinstance(annotation, type) and annotation.__module__ in ("collections.abc", "typing"):
        return annotation.__name__
    name = getattr(annotation, "__name__", None)
    if name is not None and getattr(torch, name, None) is annotation:
        return f"torch.{name}"
    raise AssertionError(f"no rendering for {annotation!r}")


@pytest.mark.parametrize("alias", sorted(TYPE_ALIASES))
def test_each_alias_means_what_the_installed_torch_defines(alias):
    meaning, home = TYPE_ALIASES[alias]
    defined = getattr(importlib.import_module(home), alias)
    assert render(defined) == meaning


@pytest.mark.parametrize("home", ["torch.types", "torch.nn.common_types"])
def test_every_private_alias_of_torchs_type_modules_is_in_the_table(home):
    """A new alias in a later torch fails here until the table learns it: the table cannot fall behind."""
    module = importlib.import_module(home)
    for name, value in vars(module).items():
        if not name.startswith("_") or name.startswith("__") or name in ("_TypeAlias", "_Number"):
            continue
        if any(isinstance(argument, typing.TypeVar) for argument in typing.get_args(value)):
            continue  # ``_scalar_or_tuple_2_t``: a generic template, only used subscripted
        if isinstance(value, (type, types.UnionType)) or typing.get_origin(value) is not None:
            assert name in TYPE_ALIASES, f"{home}.{name} = {value!r} is not in TYPE_ALIASES"


def test_the_dtype_layout_and_memory_format_names_are_torchs():
    for names, kind in ((TORCH_DTYPES, torch.dtype), (TORCH_LAYOUTS, torch.layout), (TORCH_MEMORY_FORMATS, None)):
        kind = kind or torch.memory_format
        exported = {name for name in dir(torch) if isinstance(getattr(torch, name, None), kind)}
        assert set(names) == exported, kind


def test_constants_are_read_by_their_public_name():
    assert torch_constant_kind("torch.float16") is ValueKind.DTYPE
    assert torch_constant_kind("torch.long") is ValueKind.DTYPE
    assert torch_constant_kind("torch.strided") is ValueKind.LAYOUT
    assert torch_constant_kind("torch.channels_last") is ValueKind.MEMORY_FORMAT
    assert torch_constant_kind("torch.nn.float16") is None
    assert torch_constant_kind("torch.randn") is None


def test_readable_annotations():
    assert readable("_size_2_t | None") == "int | tuple[int, int] | None"
    assert readable("Sequence[_int | SymInt]") == "Sequence[int | SymInt]"
    assert readable("_device | _int | str | None") == "torch.device | int | str | None"
    assert readable("builtins.bool | None") == "bool | None"
    # Type variables, private names that are no aliases, and names that only end like one stay.
    assert readable("_T_co") == "_T_co"
    assert readable("torch._int | my_int") == "torch._int | my_int"
    # jedi keeps the stub's line breaks; string literals keep their own spaces.
    assert readable('torch.nn.Module\n    | Literal["a  b"]') == 'torch.nn.Module | Literal["a  b"]'


@pytest.mark.parametrize(
    ("annotation", "kind", "expected"),
    [
        ("int", ValueKind.INT, True),
        ("torch.dtype", ValueKind.INT, False),  # an int literal is no dtype
        ("Tensor", ValueKind.INT, False),  # ... and no Tensor
        ("Tensor | Number | complex", ValueKind.INT, True),
        ("Sequence[int | SymInt]", ValueKind.INT, False),
        ("Sequence[int | SymInt]", ValueKind.SEQUENCE, True),
        ("torch.dtype", ValueKind.DTYPE, True),
        ("int | SymInt", ValueKind.DTYPE, False),
        ("torch.dtype | None", ValueKind.NONE, True),
        ("Optional[torch.dtype]", ValueKind.NONE, True),
        ("int", ValueKind.NONE, False),
        ("str", ValueKind.STR, True),
        ('Literal["zeros", "reflect"]', ValueKind.STR, True),
        ('Literal["zeros", "reflect"]', ValueKind.INT, False),
        ("Literal[1, 2]", ValueKind.INT, True),
        ("int", ValueKind.STR, False),
        ("float", ValueKind.INT, True),
        ("int", ValueKind.FLOAT, False),
        ("torch.device | str | int | None", ValueKind.STR, True),
        ("Union[int, Tensor]", ValueKind.TENSOR, True),
        ("Union[int, str]", ValueKind.TENSOR, False),
        # What cannot be told is accepted: no annotation, Any, a class or type variable not read, a plain name.
        ("", ValueKind.INT, True),
        ("Any", ValueKind.INT, True),
        ("MyConfig", ValueKind.STR, True),
        ("_T", ValueKind.INT, True),
        ("int", ValueKind.NAME, True),
        ("int", ValueKind.OTHER, True),
    ],
)
def test_which_literal_kinds_an_annotation_accepts(annotation, kind, expected):
    assert accepts(annotation, kind) is expected
