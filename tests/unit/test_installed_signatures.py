"""Signatures read from torch's sources in one pass (torchls.installed_signatures): on tiny packages, against the
installed torch's own ``inspect.signature``, and through the child process the server runs."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from torchls.installed_signatures import InstalledFiles, describe, read, read_in_child
from torchls.kb.wheel_reader import Release

FILES = {
    "torch/__init__.py": """
        from torch._C import *
        from torch._C._VariableFunctions import *
        from torch.functional import norm, old_style, plain
        from torch.nn import Linear, Buffer, Options, Child, Frozen
        float32 = dtype()
    """,
    "torch/_C/__init__.pyi": '''
        def set_threads(nthreads: int) -> None:
            """Sets the number of threads."""
    ''',
    "torch/_C/_VariableFunctions.pyi": """
        from typing import overload
        def set_threads(num: int) -> None:
            \"\"\"Sets the number of threads.\"\"\"
        @overload
        def cat(tensors: tuple[Tensor, ...], dim: int = 0) -> Tensor: ...
        @overload
        def cat(tensors: tuple[Tensor, ...], dim: str) -> Tensor: ...
    """,
    "torch/functional.py": '''
        def norm(input, p: float | str | None = "fro", dim=None, eps: float = 1e-6):
            """Matrix or vector norm.

            Args:
                input (Tensor): the input tensor
            """
        def old_style(x):
            """Implementation."""
        def plain(x, y=2): ...
    ''',
    "torch/functional.pyi": """
        def old_style(x: Tensor, /, *, scale: float = 2.0 ** 16) -> Tensor: ...
    """,
    "torch/nn/__init__.py": '''
        from dataclasses import dataclass
        from .base import Base
        class Linear:
            """Applies a linear map."""
            def __init__(self, in_features: int, out_features: int, bias: dict[
                str, int
            ] | None = None) -> None: ...
            def forward(self, input):
                """Run it."""
        class Buffer:
            """A tensor kept in the state dict."""
            def __new__(cls, data=None, *, persistent=True): ...
        @dataclass
        class Options:
            """Written by a decorator."""
            strict: bool = True
        class Child(Base):
            """Inherits its constructor."""
        class Frozen(Unknowable):
            """A base the reader cannot follow."""
    ''',
    "torch/nn/base.py": """
        class Base:
            def __init__(self, size: int, *args, **kwargs): ...
    """,
}


@pytest.fixture
def release() -> Release:
    return Release({path: dedent(text) for path, text in FILES.items()})


def test_a_class_is_described_by_its_init_without_self_and_as_the_source_writes_it(release):
    doc = describe(release, "torch.nn.Linear")
    assert doc is not None and doc.kind == "class" and doc.name == "torch.nn.Linear"
    # A multi-line annotation on one line, ``-> None`` dropped as jedi drops it for classes.
    assert doc.signatures == ("Linear(in_features: int, out_features: int, bias: dict[str, int] | None=None)",)
    assert doc.param_names == ("in_features", "out_features", "bias")
    assert doc.docstring == "Applies a linear map."


def test_a_method_keeps_self_and_names_its_class(release):
    doc = describe(release, "torch.nn.Linear.forward")
    assert doc is not None and doc.signatures == ("forward(self, input)",)
    assert doc.name == "torch.nn.Linear.forward" and doc.param_names == ("input",)


def test_defaults_keep_their_spelling_and_parameter_docs_are_parsed(release):
    doc = describe(release, "torch.norm")
    assert doc is not None
    assert doc.signatures == ('norm(input, p: float | str | None="fro", dim=None, eps: float=1e-6)',)
    assert doc.param_docs == {"input": "the input tensor"}


def test_the_stub_wins_over_the_implementation_and_keeps_its_markers(release):
    doc = describe(release, "torch.old_style")
    assert doc is not None
    assert doc.signatures == ("old_style(x: Tensor, /, *, scale: float=2.0 ** 16) -> Tensor",)
    assert doc.docstring == "Implementation."  # the stub has none: the implementation's


def test_a_python_function_without_a_docstring_is_read_as_it_is(release):
    doc = describe(release, "torch.plain")
    assert doc is not None and doc.signatures == ("plain(x, y=2)",) and doc.docstring == ""


def test_new_builds_the_signature_where_there_is_no_init(release):
    doc = describe(release, "torch.nn.Buffer")
    assert doc is not None and doc.signatures == ("Buffer(data=None, *, persistent=True)",)
    assert doc.param_names == ("data", "persistent")


def test_an_inherited_init_is_followed_into_its_module(release):
    doc = describe(release, "torch.nn.Child")
    assert doc is not None and doc.signatures == ("Child(size: int, *args, **kwargs)",)


@pytest.mark.parametrize(
    "name",
    [
        "torch.cat",  # compiled: its docstring comes from torch at import time, which jedi reads
        "torch.float32",  # a value
        "torch.nn.Options",  # @dataclass writes __init__
        "torch.nn.Frozen",  # a base the reader cannot follow
        "torch.no_such_name",
        "torch.set_threads",  # two stubs that disagree: which one torch binds needs jedi
    ],
)
def test_what_the_sources_cannot_say_exactly_is_left_to_jedi(release, name):
    assert describe(release, name) is None


# ------------------------------------------------------------------------------------------ the installed torch

TORCH_SITE = Path(importlib.import_module("torch").__file__).parent.parent  # type: ignore[arg-type]

# Python-level APIs whose runtime signature is the truth, and that have no stub of their own.
PYTHON_LEVEL = [
    "torch.nn.Linear",
    "torch.nn.Conv2d",
    "torch.nn.CrossEntropyLoss",
    "torch.optim.AdamW",
    "torch.optim.lr_scheduler.OneCycleLR",
    "torch.utils.data.DataLoader",
    "torch.load",
    "torch.save",
    "torch.nn.Module.register_forward_hook",
    "torch.cuda.Event",
    "torch.amp.GradScaler",
    "torch.autograd.grad",
]


def _runtime_parameters(name: str) -> list[str]:
    module, _, attribute = name.partition(".")
    value = importlib.import_module(module)
    for part in attribute.split("."):
        value = getattr(value, part)
    return [p for p in inspect.signature(value).parameters if p != "self"]


def test_the_installed_torch_agrees_with_its_own_runtime_signatures():
    answers = read(TORCH_SITE, PYTHON_LEVEL)
    assert sorted(answers) == sorted(PYTHON_LEVEL)
    for name in PYTHON_LEVEL:
        assert list(answers[name]["param_names"]) == _runtime_parameters(name), name


def test_the_child_process_reads_the_installed_torch_and_leaves_values_out():
    docs = read_in_child(TORCH_SITE, ["torch.nn.Linear", "torch.randn", "torch.float32", "torch.no_such_name"])
    assert set(docs) == {"torch.nn.Linear", "torch.randn"}
    linear = docs["torch.nn.Linear"]
    assert linear.signatures[0].startswith("Linear(in_features: int, out_features: int, bias: bool=True")
    assert "in_features" in linear.param_docs
    # A compiled function: its overloads from torch's generated stub, which carries its docstring too.
    randn = docs["torch.randn"]
    assert randn.name == "torch._C._VariableFunctions.randn" and len(randn.signatures) >= 2
    assert randn.docstring.startswith("randn(") and "size" in randn.param_names


def test_a_child_that_cannot_read_anything_answers_nothing(tmp_path):
    assert read_in_child(tmp_path / "missing", ["torch.nn.Linear"]) == {}


def test_the_child_fails_cleanly_where_its_interpreter_cannot_run(monkeypatch, caplog):
    monkeypatch.setattr(sys, "executable", str(Path("/nonexistent/python")))
    assert read_in_child(TORCH_SITE, ["torch.nn.Linear"]) == {}
    assert "failed" in caplog.text


def test_files_are_read_only_when_asked(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("x = 1\n", encoding="utf-8")
    files = InstalledFiles(tmp_path)
    assert "torch/__init__.py" in files and "torch/missing.py" not in files
    assert files["torch/__init__.py"] == "x = 1\n" and list(files) == ["torch/__init__.py"]


def test_a_constructor_that_only_passes_everything_on_names_no_parameter(release):
    base = describe(release, "torch.nn.Child")
    assert base is not None and base.param_names == ("size", "args", "kwargs")  # a named one: all are listed
    files = {path: dedent(text) for path, text in FILES.items()}
    files["torch/nn/base.py"] = "class Base:\n    def __init__(self, *args, **kwargs): ...\n"
    doc = describe(Release(files), "torch.nn.Child")
    assert doc is not None and doc.signatures == ("Child(*args, **kwargs)",) and doc.param_names == ()
