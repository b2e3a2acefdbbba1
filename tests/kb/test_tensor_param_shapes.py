"""Every tensor parameter of a shipped entry says what shape or dtype it expects (issue 15, point 4).

``torch.allclose``'s ``input`` once read only "第一个张量。": true, and no help. The writing guide asks each
tensor parameter for its expected shape and dtype ("与 `input` 形状相同或可广播；浮点型", "`(N, C)` 的 logits").

The heuristic is deliberately simple:

* a parameter is a *tensor parameter* when its ``type``, with every ``[...]`` generic argument removed, still
  names ``Tensor`` (``LongTensor`` too) or ``张量``, and is not a ``Callable``: ``Tensor``, ``Number | Tensor``,
  ``Iterable[Tensor] 或 Tensor`` count; ``Iterable[Tensor]``, ``Callable[[Tensor], Tensor]``, ``dict[str, Tensor]``
  do not (they take containers or functions, whose desc says other things). A parameter without ``type`` counts
  when the installed torch annotates it as ``Tensor`` or ``Tensor | None``;
* its ``desc`` *says something of shape or dtype* when it contains one of the words in ``_SAYS`` (形状, 维,
  dtype, 类型, 广播, 标量, 浮点, 整数, 布尔, ``(N, C)``-style shapes, ...). A word is enough: the test cannot judge
  whether the sentence is right, only that the writer did not leave the reader guessing.

``_ALLOWED`` lists the tensor parameters still silent on purpose; it must stay short, and an entry that is fixed
must leave it (the last test fails on stale lines).
"""

from __future__ import annotations

import inspect
import re

import pytest

from torchls.kb.base import shipped_folder
from torchls.kb.loader import iter_yaml_files, load_file

from .torch_introspect import resolve_object

_GENERIC = re.compile(r"\[[^\[\]]*\]")
_TENSOR = re.compile(r"Tensor\b|张量")  # ``LongTensor`` too, not ``TensorPipeRpcBackendOptions``
_SAYS = re.compile(
    r"形状|维|dtype|类型|相同|广播|标量|浮点|整数|布尔|复数|实数|长度|shape|`\(|\bbool\b|\bfloat|\bint|\blong\b|\bcomplex",
    re.IGNORECASE,
)
_TENSOR_ANNOTATION = re.compile(r"(torch\.)?Tensor( \| None)?|(typing\.)?Optional\[(torch\.)?Tensor\]")

# "entry name.parameter": tensor parameters whose desc may stay silent on shape and dtype. Keep it short.
_ALLOWED: frozenset[str] = frozenset()


def is_tensor_type(type_text: str | None) -> bool:
    text, previous = type_text or "", None
    while previous != text:
        previous, text = text, _GENERIC.sub("", text)
    return bool(_TENSOR.search(text)) and "Callable" not in text


def says_shape_or_dtype(desc: str) -> bool:
    return bool(_SAYS.search(desc))


def _live_annotations(name: str) -> dict[str, str]:
    try:
        obj = resolve_object(name)
        target = obj.__init__ if inspect.isclass(obj) else obj
        parameters = inspect.signature(target).parameters
    except (LookupError, TypeError, ValueError):
        return {}
    shown = {}
    for key, parameter in parameters.items():
        annotation = parameter.annotation
        if annotation is inspect.Parameter.empty:
            continue
        shown[key] = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    return shown


def _silent_tensor_parameters() -> list[str]:
    root = shipped_folder()
    silent = []
    for path in sorted(iter_yaml_files(root)):
        entry, errors = load_file(path, root)
        assert entry is not None and not errors, path
        annotations = None
        for param in entry.params:
            if param.type:
                tensor = is_tensor_type(param.type)
            else:
                annotations = _live_annotations(entry.name) if annotations is None else annotations
                tensor = bool(_TENSOR_ANNOTATION.fullmatch(annotations.get(param.name, "")))
            if tensor and not says_shape_or_dtype(param.desc):
                silent.append(f"{entry.name}.{param.name}")
    return silent


@pytest.fixture(scope="module")
def silent():
    return _silent_tensor_parameters()


@pytest.mark.parametrize(
    ("type_text", "expected"),
    [
        ("Tensor", True),
        ("LongTensor", True),
        ("torch.distributed.rpc.TensorPipeRpcBackendOptions | None", False),
        ("Number | Tensor", True),
        ("float / Tensor", True),
        ("Iterable[Tensor] 或 Tensor", True),
        ("Iterable[Tensor]", False),
        ("Callable[[Tensor], Tensor | None]", False),
        ("dict[str, Tensor]", False),
        ("int", False),
        (None, False),
    ],
)
def test_what_counts_as_a_tensor_parameter(type_text, expected):
    assert is_tensor_type(type_text) is expected


@pytest.mark.parametrize(
    ("desc", "expected"),
    [
        ("第一个张量。", False),
        ("输入张量。", False),
        ("要切分的张量。", False),
        ("与 `input` 形状相同或可广播；浮点型。", True),
        ("`(N, C)` 的 logits，float。", True),
        ("任意形状和 dtype。", True),
        ("Python 数或 0 维张量。", True),
    ],
)
def test_what_counts_as_saying_shape_or_dtype(desc, expected):
    assert says_shape_or_dtype(desc) is expected


def test_every_tensor_parameter_says_its_shape_or_dtype(silent):
    missing = sorted(set(silent) - _ALLOWED)
    assert not missing, (
        "tensor parameters whose desc says nothing of shape or dtype (write e.g. “任意形状；整数输入会先转成浮点”, "
        "“与 `input` 形状相同或可广播”, “`(N, C)` 的 logits，float”):\n" + "\n".join(missing)
    )


def test_the_allow_list_has_no_stale_lines(silent):
    stale = sorted(_ALLOWED - set(silent))
    assert not stale, "documented now, remove from _ALLOWED:\n" + "\n".join(stale)
