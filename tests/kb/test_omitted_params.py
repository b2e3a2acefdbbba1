"""``omitted_params`` holds only ``out``, catch-alls, internal and deprecated parameters (issue 15, point 4).

An entry may leave a parameter of the live signature out of ``params`` only when no reader needs it:

* ``out``: rarely used, the same on every function;
* names starting with ``_`` (torch's convention for internal parameters) and the ``*args``/``**kwargs``
  catch-alls ``args`` and ``kwargs``;
* ``_INTERNAL``: a parameter whose torch docstring says it is not for users;
* ``_DEPRECATED``: a parameter the installed torch says is deprecated, with the reason.

Each line of the two lists is checked against the installed torch: the text of the entry's object (its docstring
and source), or of the object named in ``where``, must contain ``evidence``; an allowed pair no entry uses any more
is stale and fails too. Everything else (``layout``, ``dtype``, ``foreach``, ...) goes into ``params``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from torchls.kb.base import shipped_folder
from torchls.kb.loader import iter_yaml_files, load_file

from .torch_introspect import resolve_object

_ALWAYS = frozenset({"out", "args", "kwargs"})


@dataclass(frozen=True)
class Allowed:
    reason: str
    entries: frozenset[str] | None  # None: any entry (the legacy loss arguments)
    evidence: str  # a regular expression the installed torch's text must match
    # entry name -> the dotted torch name whose text holds the evidence, where it is not the entry's object
    where: dict[str, str] = field(default_factory=dict)


def _entries(*names: str) -> frozenset[str]:
    return frozenset(names)


_ONNX_LEGACY = _entries("torch.onnx.export")

_DEPRECATED: dict[str, Allowed] = {
    "size_average": Allowed(
        "deprecated since 1.0, use `reduction`", None, r"size_average \(bool, optional\): Deprecated"
    ),
    "reduce": Allowed("deprecated since 1.0, use `reduction`", None, r"reduce \(bool, optional\): Deprecated"),
    "eps": Allowed(
        "deprecated, has no effect (a warning says so when it is passed)",
        _entries("torch.nn.functional.gumbel_softmax"),
        r"`eps` parameter is deprecated and has no effect",
    ),
    "only_inputs": Allowed(
        "ignored, always True; use torch.autograd.backward to accumulate elsewhere",
        _entries("torch.autograd.grad"),
        r"``only_inputs`` argument is deprecated and is ignored",
    ),
    "use_cuda": Allowed(
        "deprecated since 1.8.1: use `activities` (torch.profiler) or `use_device='cuda'` (autograd.profiler)",
        _entries("torch.profiler.profile", "torch.autograd.profiler.profile"),
        r"use_cuda[^\n]*(?:\n[^\n]*)?[Dd]eprecat",
    ),
    "optimize": Allowed(
        "deprecated, has no effect: use `torch.jit.optimized_execution()`",
        _entries("torch.jit.trace", "torch.jit.script"),
        r"`optimize` is deprecated and has no effect",
        where={"torch.jit.script": "torch.jit._script._script_impl"},
    ),
    "submodules": Allowed(
        "deprecated in torch.distributed.checkpoint.state_dict",
        _entries(
            "torch.distributed.checkpoint.state_dict.get_model_state_dict",
            "torch.distributed.checkpoint.state_dict.get_optimizer_state_dict",
        ),
        r"submodules \(deprecated\)",
    ),
    "keep_submodule_prefixes": Allowed(
        "deprecated with `submodules`, which it modifies",
        _entries("torch.distributed.checkpoint.state_dict.StateDictOptions"),
        r"``keep_submodule_prefixes`` \(deprecated\)",
    ),
    "optim_input": Allowed(
        "deprecated, removable without changing behaviour: pass `optim`",
        _entries("torch.distributed.fsdp.FullyShardedDataParallel.rekey_optim_state_dict"),
        r"`optim_input` argument is deprecated",
        where={
            "torch.distributed.fsdp.FullyShardedDataParallel.rekey_optim_state_dict": (
                "torch.distributed.fsdp.FullyShardedDataParallel._warn_optim_input"
            )
        },
    ),
    "group_name": Allowed(
        "deprecated and ignored",
        _entries("torch.distributed.init_process_group"),
        r"group_name \(str, optional, deprecated\)",
    ),
    "check_reduction": Allowed(
        "deprecated, no effect",
        _entries("torch.nn.parallel.DistributedDataParallel"),
        r"check_reduction: This argument is deprecated",
    ),
    "training": Allowed(
        "deprecated: set model.train()/eval() before exporting",
        _ONNX_LEGACY,
        r"training: Deprecated option",
    ),
    "operator_export_type": Allowed(
        "deprecated: only ONNX is supported", _ONNX_LEGACY, r"operator_export_type: Deprecated option"
    ),
    "do_constant_folding": Allowed(
        "deprecated: always enabled", _ONNX_LEGACY, r"do_constant_folding: Deprecated option"
    ),
    "custom_opsets": Allowed("deprecated (TorchScript exporter)", _ONNX_LEGACY, r"custom_opsets: Deprecated option"),
    "export_modules_as_functions": Allowed(
        "deprecated (TorchScript exporter)", _ONNX_LEGACY, r"export_modules_as_functions: Deprecated option"
    ),
    "autograd_inlining": Allowed(
        "deprecated (TorchScript exporter)", _ONNX_LEGACY, r"autograd_inlining: Deprecated option"
    ),
    "device": Allowed(
        "passing it warns DeprecationWarning: pinned memory goes to the current accelerator",
        _entries("torch.Tensor.pin_memory"),
        r"The argument 'device' of Tensor\.pin_memory\(\) is deprecated",
        where={"torch.Tensor.pin_memory": "warning:torch.Tensor.pin_memory"},
    ),
}

_INTERNAL: dict[str, Allowed] = {
    "destination": Allowed(
        "the docstring says it is not designed for end-users",
        _entries("torch.nn.Module.state_dict"),
        r"avoid the use of argument ``destination`` as it is not\s+designed for end-users",
    ),
}


def _shipped():
    root = shipped_folder()
    for path in iter_yaml_files(root):
        entry, errors = load_file(path, root)
        assert entry is not None and not errors, path
        yield path.relative_to(root).as_posix(), entry


ENTRIES = sorted(_shipped(), key=lambda item: item[0])


def _allowance(entry_name: str, parameter: str) -> Allowed | None:
    allowed = _DEPRECATED.get(parameter) or _INTERNAL.get(parameter)
    if allowed is None or (allowed.entries is not None and entry_name not in allowed.entries):
        return None
    return allowed


def _is_free(parameter: str) -> bool:
    return parameter in _ALWAYS or parameter.startswith("_")


def test_omitted_params_are_out_catch_alls_internal_or_deprecated():
    wrong = [
        f"{path} ({entry.name}): {parameter}"
        for path, entry in ENTRIES
        for parameter in entry.omitted_params
        if not _is_free(parameter) and _allowance(entry.name, parameter) is None
    ]
    assert not wrong, (
        "omitted_params may hold only `out`, `args`/`kwargs`, `_`-prefixed and allow-listed deprecated or internal "
        "parameters; document these in `params`:\n" + "\n".join(wrong)
    )


def _pin_memory_warning() -> str:
    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.suppress(RuntimeError):  # "cpu" is no accelerator: the warning comes first
            torch.empty(1).pin_memory(device="cpu")
    return "\n".join(str(w.message) for w in caught)


_RUNTIME: dict[str, Callable[[], str]] = {"warning:torch.Tensor.pin_memory": _pin_memory_warning}


@functools.cache
def _live_text(name: str) -> str:
    if name in _RUNTIME:
        return _RUNTIME[name]()
    obj = resolve_object(name)
    text = inspect.getdoc(obj) or ""
    with contextlib.suppress(OSError, TypeError):  # built-ins have no Python source
        text += "\n" + inspect.getsource(obj)
    return text


_USED = sorted(
    {(entry.name, parameter) for _, entry in ENTRIES for parameter in entry.omitted_params if not _is_free(parameter)}
)


@pytest.mark.parametrize(("entry_name", "parameter"), _USED, ids=[f"{e}.{p}" for e, p in _USED])
def test_allowed_parameter_is_deprecated_or_internal_in_installed_torch(entry_name, parameter):
    allowed = _allowance(entry_name, parameter)
    if allowed is None:
        pytest.skip("not allowed at all: reported by the test above")
    text = _live_text(allowed.where.get(entry_name, entry_name))
    assert re.search(allowed.evidence, text), (
        f"{entry_name}: the installed torch no longer says `{parameter}` is deprecated or internal "
        f"(looked for {allowed.evidence!r} in {allowed.where.get(entry_name, entry_name)}); document it in `params`"
    )


def test_allow_list_has_no_stale_lines():
    used = {parameter for _, parameter in _USED}
    stale = sorted((set(_DEPRECATED) | set(_INTERNAL)) - used)
    listed_entries = {
        (entry_name, parameter)
        for parameter, allowed in {**_DEPRECATED, **_INTERNAL}.items()
        for entry_name in (allowed.entries or ())
    }
    stale += [f"{entry_name}.{parameter}" for entry_name, parameter in sorted(listed_entries - set(_USED))]
    assert not stale, f"allow-listed but omitted by no entry any more; remove: {stale}"
