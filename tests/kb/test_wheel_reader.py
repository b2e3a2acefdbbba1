"""The static reader of torch releases (torchls.kb.wheel_reader), on tiny in-memory packages: no wheels needed."""

from __future__ import annotations

import zipfile
from textwrap import dedent

import pytest

from torchls.kb.wheel_reader import ABSENT, UNKNOWN, Api, Release

FILES = {
    "torch/__init__.py": """
        from typing import TYPE_CHECKING
        from math import inf
        from torch._tensor import Tensor
        from torch.functional import *
        if TYPE_CHECKING:
            from torch._C._VariableFunctions import *
        from torch import nn as nn
        _lazy = {"_dynamo"}
        def __getattr__(name):
            if name in _lazy:
                return __import__(name)
            raise AttributeError(name)
        def compile(model=None, *, fullgraph=False, mode=None):
            ...
    """,
    "torch/functional.py": """
        import warnings
        __all__ = ["split", "old"]
        def split(tensor, split_size_or_sections, dim=0): ...
        def old(x):
            warnings.warn("old() is deprecated, use new()", FutureWarning)
        def _private(): ...
        def hidden(): ...
    """,
    "torch/_C/__init__.pyi": """
        from typing import overload
        class TensorBase:
            @overload
            def view(self, dtype: dtype) -> Tensor: ...
            @overload
            def view(self, *size: int) -> Tensor: ...
            shape: Size
    """,
    "torch/_C/_VariableFunctions.pyi": """
        from typing import overload
        @overload
        def cat(tensors, dim: int = 0, *, out=None): ...
        @overload
        def cat(tensors, dim: str, *, out=None): ...
    """,
    "torch/_tensor.py": """
        import torch
        class Tensor(torch._C.TensorBase):
            def to(self, *args, **kwargs): ...
    """,
    "torch/nn/__init__.py": """
        from .modules import *
        from . import functional
        from .utils import spectral_norm
    """,
    "torch/nn/modules/__init__.py": """
        from .linear import Linear
        from .conv import Conv2d
        from .module import Module
        from typing_extensions import deprecated
        __all__ = ["Linear", "Conv2d", "Module", "Old"]
        @deprecated("use Linear", category=FutureWarning)
        class Old:
            def __init__(self, n): ...
    """,
    "torch/nn/modules/linear.py": """
        import warnings
        from .module import Module
        class Linear(Module):
            in_features: int
            def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
                super().__init__()
                if bias:
                    self.register_parameter("bias", None)
                if device == "meta":
                    warnings.warn("meta is deprecated", DeprecationWarning)
                self.weight = None
    """,
    "torch/nn/modules/conv.py": """
        from somewhere_else import _ConvNd
        class Conv2d(_ConvNd):
            pass
    """,
    "torch/nn/modules/module.py": """
        class Module:
            def __init__(self, *args, **kwargs): ...
            def to(self, *args, **kwargs): ...
    """,
    "torch/nn/functional.py": """
        import torch
        from torch._C import _add_docstr
        relu = _add_docstr(torch.relu, "doc")
        gelu = _add_docstr(torch._C._nn.gelu, "doc")
        sdpa = _add_docstr(torch._C._nn.sdpa, r'''
        sdpa(query, key, value, attn_mask=None, *, scale=None) -> Tensor:

        Computes attention. {extra}
        '''.format(extra="") + "more")
        silu = _add_docstr(torch._C._nn.silu, "The SiLU function. See :class:`SiLU`.")
        def _max_pool2d(input, kernel_size, ceil_mode=False): ...
        def _max_pool2d_with_indices(input, kernel_size, return_indices=True): ...
        max_pool2d = boolean_dispatch(arg_name="return_indices", if_true=_max_pool2d_with_indices, if_false=_max_pool2d)
        class _WorldMeta(type):
            @property
            def WORLD(cls): ...
        class GroupMember(metaclass=_WorldMeta):
            NON_GROUP_MEMBER = -100
        def interpolate(input, size=None, scale_factor=None): ...
    """,
    "torch/_C/_nn.pyi": """
        def gelu(input, approximate: str = "none"): ...
    """,
    "torch/nn/functional.pyi": """
        def relu(input, inplace: bool = ...): ...
    """,
    "torch/nn/utils/__init__.py": """
        from .spectral_norm import spectral_norm
    """,
    "torch/nn/utils/spectral_norm.py": """
        def spectral_norm(module, name="weight", n_power_iterations=1): ...
    """,
}
RELEASE = Release({path: dedent(text) for path, text in FILES.items()})


def api(name: str) -> Api:
    found = RELEASE.api(name)
    assert isinstance(found, Api), (name, found)
    return found


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("torch.nn.Linear", {"in_features", "out_features", "bias", "device", "dtype"}),
        ("torch.nn.functional.interpolate", {"input", "size", "scale_factor"}),
        ("torch.nn.functional.relu", {"input", "inplace"}),  # the stub, where the source is a call
        ("torch.Tensor.view", {"dtype", "size"}),  # overloads from the base class in the _C stub, self dropped
        ("torch.Tensor.to", {"args", "kwargs"}),
        ("torch.cat", {"tensors", "dim", "out"}),  # from _VariableFunctions.pyi
        ("torch.split", {"tensor", "split_size_or_sections", "dim"}),  # star import that __all__ allows
        ("torch.compile", {"model", "fullgraph", "mode"}),
        ("torch.nn.utils.spectral_norm", {"module", "name", "n_power_iterations"}),  # the function, not the module
        ("torch.nn.Module.to", {"args", "kwargs"}),
        ("torch.nn.functional.gelu", {"input", "approximate"}),  # _add_docstr(<the real one>, doc)
        ("torch.nn.functional.sdpa", {"query", "key", "value", "attn_mask", "scale"}),  # the docstring's signature
        ("torch.nn.functional.max_pool2d", {"input", "kernel_size", "ceil_mode", "return_indices"}),
    ],
)
def test_parameters_follow_the_package_imports(name, params):
    assert api(name).params == params


def test_names_that_exist_without_parameters():
    for name in ("torch.nn", "torch.nn.functional", "torch.inf", "torch.Tensor.shape", "torch.nn.Linear.weight"):
        assert api(name).params is None or name == "torch.nn.Linear.weight"
    assert isinstance(RELEASE.api("torch.nn.Linear.bias"), Api)  # registered in __init__
    assert isinstance(RELEASE.api("torch.nn.Linear.in_features"), Api)


def test_absent_only_where_every_place_was_read():
    assert RELEASE.api("torch.nn.Bilinear") == ABSENT
    assert RELEASE.api("torch.hidden") == ABSENT  # not in torch.functional.__all__
    assert RELEASE.api("torch.nn.Linear.missing") == ABSENT
    assert RELEASE.api("torch._dynamo") == UNKNOWN  # served by the module __getattr__
    assert RELEASE.api("torch.nn.Conv2d.weight") == UNKNOWN  # a base class outside the release
    assert RELEASE.api("numpy.array") == UNKNOWN


def test_a_compiled_function_without_a_stub_or_a_signature_line_has_unknown_parameters():
    assert api("torch.nn.functional.silu").params is None


def test_open_signatures_and_metaclass_properties():
    assert api("torch.Tensor.to").open and not api("torch.nn.Linear").open
    assert isinstance(RELEASE.api("torch.nn.functional.GroupMember.WORLD"), Api)
    assert RELEASE.api("torch.nn.functional.GroupMember.OTHER") == ABSENT


def test_deprecations():
    assert api("torch.old").deprecated  # an unconditional FutureWarning that says so
    assert api("torch.nn.modules.Old").deprecated  # @deprecated on the class
    assert api("torch.nn.modules.Old").params == {"n"}
    assert not api("torch.nn.Linear").deprecated  # a warning inside an `if` is about one argument
    assert not api("torch.split").deprecated


def test_reads_members_of_a_wheel_without_unpacking(tmp_path):
    wheel = tmp_path / "torch-9.9.9-none.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch/__init__.py", "def cat(tensors, dim=0): ...\n")
        archive.writestr("torch/lib/libtorch.dylib", b"\0")
        archive.writestr("torch-9.9.9.dist-info/METADATA", "x")
    release = Release.from_wheel(wheel)
    assert set(release.files) == {"torch/__init__.py"}
    assert api_params(release, "torch.cat") == {"tensors", "dim"}


def api_params(release: Release, name: str):
    found = release.api(name)
    assert isinstance(found, Api)
    return found.params
