"""`torchls kb new`: entry skeletons from the installed torch; what `kb check` says about them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from torchls.kb.loader import load_file
from torchls.kb.schema import DEVICE_LINE, validate_entry


def _torchls(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchls", *args], capture_output=True, text=True, cwd=cwd, timeout=180
    )


@pytest.mark.parametrize(
    ("name", "kind", "params"),
    [
        ("torch.logsumexp", "function", ["input", "dim", "keepdim"]),  # built-in: read from the docstring
        ("torch.nn.Conv3d", "class", ["in_channels", "out_channels", "kernel_size", "stride", "padding_mode"]),
        ("torch.Tensor.add_", "method", ["other", "alpha"]),
        ("torch.Tensor.is_cuda", "property", []),
    ],
)
def test_skeleton_has_the_installed_signature_and_validates(name, kind, params):
    result = _torchls("kb", "new", name, "--stdout")
    assert result.returncode == 0, result.stderr
    data = yaml.safe_load(result.stdout)
    assert data["kind"] == kind
    documented = [p["name"] for p in data.get("params", [])]
    assert set(params) <= set(documented)
    entry, errors = validate_entry(data, "skeleton.yaml", name)
    assert not errors and entry is not None
    assert "# torch 2." in result.stdout  # the English docstring to translate from, as comments
    assert f"      {DEVICE_LINE}\n" in result.stdout and "DEVICE" not in result.stdout.split("\n# ")[0]


def test_skeleton_file_is_written_once_and_kb_check_asks_for_the_todos(tmp_path):
    result = _torchls("kb", "new", "torch.special.erfcx", "--folder", str(tmp_path))
    assert result.returncode == 0, result.stderr
    path = tmp_path / "torch" / "special" / "erfcx.yaml"
    entry, errors = load_file(path, tmp_path)
    assert entry is not None and not errors
    again = _torchls("kb", "new", "torch.special.erfcx", "--folder", str(tmp_path))
    assert again.returncode == 1 and "已存在" in again.stderr and "--force" in again.stderr
    check = _torchls("kb", "check", str(tmp_path))
    assert check.returncode == 1
    assert f"{path}:1: 还有没写完的 TODO：summary" in check.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("torch.nope",), "已安装的 torch 里没有 torch.nope"),
        (("torch.nn.Linear", "--python", "/nonexistent/python3"), "找不到 Python 解释器：/nonexistent/python3"),
    ],
)
def test_bad_names_and_interpreters_exit_2_with_a_chinese_message(args, message):
    result = _torchls("kb", "new", *args, "--stdout")
    assert result.returncode == 2 and message in result.stderr
    assert not result.stdout


def test_an_interpreter_without_torch_is_named(tmp_path):
    bare = shutil.which("python3", path="/usr/bin:/bin")
    if bare is None or subprocess.run([bare, "-I", "-c", "import torch"], capture_output=True).returncode == 0:
        pytest.skip("no system Python without torch on this machine")
    result = _torchls("kb", "new", "torch.nn.Linear", "--python", bare, "--stdout")
    assert result.returncode == 2 and "导入不了 torch" in result.stderr and "--python" in result.stderr


OLD_STYLE_ENTRY = """\
name: torch.special.erfcx
kind: function
summary: 团队条目：缩放的互补误差函数。
returns: 与输入形状相同的张量。
examples:
  - title: 旧写法的示例
    code: |
      import torch

      x = torch.zeros(2, device=DEVICE)  # 在 DEVICE 上
      print(torch.special.erfcx(x), "DEVICE")  # tensor([1., 1.]) 和字符串
pitfalls:
  - text: 这个条目只用于测试。
see_also: [torch.special.erfc]
"""


def test_kb_check_reports_an_example_that_uses_device_in_capitals_and_the_script_converts_it(tmp_path):
    path = tmp_path / "torch" / "special" / "erfcx.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(OLD_STYLE_ENTRY, encoding="utf-8")
    entry, errors = load_file(path, tmp_path)
    assert entry is not None and not errors  # a team's old entry still loads (and the runner still runs it)
    check = _torchls("kb", "check", str(tmp_path))
    assert check.returncode == 1
    assert f"{path}:1: examples[1].code：示例代码第 3 行用了变量 `DEVICE`" in check.stdout
    assert DEVICE_LINE in check.stdout
    convert = [sys.executable, "-m", "torchls.kb.device_line", str(tmp_path)]
    done = subprocess.run(convert, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "改写了 1 个示例" in done.stderr
    assert path.read_text(encoding="utf-8") == OLD_STYLE_ENTRY.replace(
        "      import torch\n\n", f"      import torch\n\n      {DEVICE_LINE}\n\n"
    ).replace("device=DEVICE)  # 在 DEVICE 上", "device=device)  # 在 device 上")
    assert _torchls("kb", "check", str(tmp_path)).returncode == 0
    again = subprocess.run(convert, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "改写了 0 个示例" in again.stderr
