"""The fast path across the project's files: what another module's annotations say a function returns."""

from __future__ import annotations

import os

from torchls.core.exports import module_exports
from torchls.core.names import ModuleIndex, Value
from torchls.core.parsing import parse_tolerant
from torchls.core.text import Position, SourceText
from torchls.project import ProjectModules

HELPERS = '''\
"""辅助函数 🔧"""
import functools
import torch
from torch import Tensor
from typing import Optional, Tuple

def 缩放(x: Tensor, k: float = 2.0) -> Tensor:
    return x * k

def 可选(x) -> Optional["torch.Tensor"]:
    return x

def 元组(x: Tensor) -> Tuple[Tensor, Tensor]:
    return x, x

def 未标注(x):
    return x * 2

async def 异步(x: Tensor) -> Tensor:
    return x

@functools.lru_cache()
def 缓存(n: int) -> torch.Tensor:
    return torch.arange(n)

def 包装器(f):
    return f

@包装器
def 被包装(x: Tensor) -> Tensor:
    return x

def 重名(x: Tensor) -> Tensor:
    return x

重名 = None

def 层() -> torch.nn.Module:
    return torch.nn.Identity()
'''


def test_module_exports_reads_return_annotations_it_can_trust():
    exports = module_exports(HELPERS, "项目.helpers", is_package=False)
    assert exports.returns == {
        "缩放": "torch.Tensor",
        "可选": "torch.Tensor",
        "缓存": "torch.Tensor",
        "层": "torch.nn.Module",
    }
    # Tuples, unannotated and async functions, unknown decorators and names bound twice are left to jedi.
    assert exports.reexports["Tensor"] == "torch.Tensor"
    assert "重名" not in exports.reexports


def test_module_exports_follows_relative_imports_of_a_package():
    init = (
        "from .helpers import 缩放, 可选 as 选\n"
        "from ..other import 别处\n"
        "try:\n    from .fast import 快\nexcept ImportError:\n    快 = None\n"
    )
    exports = module_exports(init, "项目.sub", is_package=True)
    assert exports.reexports["缩放"] == "项目.sub.helpers.缩放"
    assert exports.reexports["选"] == "项目.sub.helpers.可选"
    assert exports.reexports["别处"] == "项目.other.别处"
    assert "快" not in exports.reexports  # bound twice: the import may have failed
    assert module_exports("def broken(:\n", "项目.x", False).returns == {}


def _project(tmp_path):
    package = tmp_path / "项目"
    (package / "sub").mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("from .helpers import 缩放 as 公开缩放\n", encoding="utf-8")
    (package / "sub" / "__init__.py").write_text("", encoding="utf-8")
    (package / "helpers.py").write_text(HELPERS, encoding="utf-8")
    return package


def test_project_modules_locate_a_document_and_read_what_another_module_returns(tmp_path):
    package = _project(tmp_path)
    project = ProjectModules()
    location = project.locate(str(package / "sub" / "model.py"))
    assert (location.module, location.is_package, location.root) == ("项目.sub.model", False, tmp_path)
    # A script beside its modules: its folder is on sys.path when it runs, so ``from helpers import f`` is found.
    assert project.locate(str(tmp_path / "train.py")) == type(location)("train", False, tmp_path)
    assert project.locate(str(package / "notes.txt")) is None
    assert project.returns(tmp_path, "项目.helpers.缩放") == "torch.Tensor"
    assert project.returns(tmp_path, "项目.公开缩放") == "torch.Tensor"  # re-exported by the package
    assert project.returns(tmp_path, "项目.helpers.未标注") is None
    assert project.returns(tmp_path, "项目.missing.f") is None
    assert project.returns(tmp_path, "torch.nn.functional.relu") is None  # torch is not the project's

    helpers = package / "helpers.py"
    helpers.write_text(HELPERS.replace("def 缩放(x: Tensor, k: float = 2.0) -> Tensor:", "def 缩放(x, k=2.0):"))
    status = helpers.stat()
    os.utime(helpers, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
    assert project.returns(tmp_path, "项目.helpers.缩放") is None, "an edited file is read again"


MODEL = """\
import torch
from . import helpers
from ..helpers import 缩放, 可选
from .. import 公开缩放
from ..helpers import 未标注
from ..helpers import 层 as 遮蔽


def 前向(x: torch.Tensor):
    说明 = "前向 🎉"
    a = 缩放(x); b = 可选(x); c = 公开缩放(x); d = 未标注(x); e = 遮蔽(); f = helpers.g(x)
    遮蔽 = 3
    return a, b, c, d, e, f
"""


def _value(tmp_path, name: str, project: ProjectModules | None):
    package = _project(tmp_path)
    (package / "sub" / "helpers.py").write_text("import torch\ndef g(x) -> torch.Tensor:\n    return x\n")
    location = ProjectModules.locate(str(package / "sub" / "model.py"))
    returns = (lambda qualname: project.returns(location.root, qualname)) if project else None
    index = ModuleIndex(parse_tolerant(MODEL), SourceText(MODEL), (location.module, False), returns)
    lines = MODEL.splitlines()
    row = len(lines) - 1
    column = lines[row].index(f" {name}") + 1 + len(name)
    return index.value_at(name, Position(row, column))


def test_the_fast_path_follows_relative_imports_into_the_project(tmp_path):
    project = ProjectModules()
    expected = {
        "a": Value("torch.Tensor"),
        "b": Value("torch.Tensor"),
        "c": Value("torch.Tensor"),  # through the package's re-export
        "d": None,  # unannotated over there: jedi's to infer
        "e": None,  # the imported name is bound again in the file
        "f": Value("torch.Tensor"),  # ``helpers.g(x)``: through an imported module
    }
    for name, value in expected.items():
        assert _value(tmp_path, name, project) == value, name
    assert _value(tmp_path, "a", None) is None, "without a project nothing is read"
