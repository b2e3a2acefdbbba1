"""Where the analysis gives up (``torchls check --explain-unknown``): each torch use of an unknown value is followed
back to the first place that lost it, and that place is named with its reason."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap

from torchls.core.text import SourceText
from torchls.core.unknowns import explain_unknown

PROGRAM = textwrap.dedent(
    """\
    import sys

    import numpy as np
    import torch
    import torch.nn as nn


    def scale(x):
        return torch.relu(x) * 2  # 中文注释 😀 before nothing


    def load_features(path):
        return np.load(path)


    feats = torch.from_numpy(np.load("feats.npy"))
    spectrum = torch.fft.rfft(torch.randn(4, 8))
    head = nn.Linear(8, 2)
    out = head(spectrum)
    z = torch.randn(4, 8)
    z = head(z)
    w = head(load_features("x.npy"))
    if len(sys.argv) > 1:
        v = torch.zeros(2, 3)
    else:
        v = torch.zeros(5)
    u = torch.relu(v)
    """
)


def _explained(source: str) -> dict[int, tuple[str, str, str, int]]:
    give_ups, failed = explain_unknown(ast.parse(source), SourceText(source))
    assert not failed
    return {g.line: (g.expression, g.reason, g.detail, g.uses) for g in give_ups}


def test_each_give_up_is_named_at_its_first_place_with_its_reason():
    found = _explained(PROGRAM)
    assert found[9] == ("x", "parameter", "scale 的参数 x：文件里没有调用它", 1)
    assert found[16][1:3] == ("outside-torch", "numpy.load")  # the NumPy call, not torch.from_numpy around it
    assert found[17][1:3] == ("unmodelled-call", "torch.fft.rfft")  # the call that lost it, not head(spectrum)
    assert found[22][1:3] == ("user-function", "load_features")
    assert found[27][1] == "paths-disagree" and "24、26" in found[27][2]  # ranks 2 and 1 merge to nothing known
    # z = head(z) reads the z bound before the statement: known, so nothing is reported there
    assert set(found) == {9, 16, 17, 22, 27}


def test_a_well_modelled_file_has_no_give_up():
    source = "import torch\nimport torch.nn as nn\nx = torch.randn(4, 8)\ny = nn.Linear(8, 2)(x).softmax(-1)\n"
    assert _explained(source) == {}


def test_a_parameter_the_file_passes_inconsistent_values_says_so():
    source = textwrap.dedent(
        """\
        import torch

        def block(width):
            return torch.nn.Linear(width, width)

        for width in (8, 16):
            block(width)
        """
    )
    (found,) = _explained(source).values()
    assert found[1] == "parameter" and found[2] == "block 的参数 width：文件里的调用给出的值不一致或未知"


def test_the_command_line_lists_give_ups_and_a_summary(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(PROGRAM, encoding="utf-8")
    run = [sys.executable, "-m", "torchls", "check", "--explain-unknown"]
    text = subprocess.run([*run, str(tmp_path)], capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert text.returncode == 0, text.stderr
    assert (
        f"{path}:17:12: `torch.fft.rfft(torch.randn(4, 8))` 未知：调用的结果没有建模（torch.fft.rfft）" in text.stdout
    )
    assert "5 处分析放弃的地方，影响 5 处 torch 用法" in text.stdout
    as_json = subprocess.run(
        [*run, "--format", "json", str(path)], capture_output=True, text=True, encoding="utf-8", timeout=120
    )
    rows = json.loads(as_json.stdout)
    assert {row["reason"] for row in rows} == {
        "parameter",
        "outside-torch",
        "unmodelled-call",
        "user-function",
        "paths-disagree",
    }
    missing = subprocess.run([*run, str(tmp_path / "nope.py")], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "找不到" in missing.stderr
