"""`python -m torchls.kb.device_line`: examples that used DEVICE get their own device line, in the YAML text."""

from __future__ import annotations

import pytest

from torchls.kb.device_line import Conflict, Report, convert_code, convert_text
from torchls.kb.schema import DEVICE_LINE, old_device_lines


def test_the_device_line_goes_after_the_imports_and_only_the_name_is_renamed():
    code = (
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        "fc = nn.Linear(2, 3).to(DEVICE)  # 搬到 DEVICE 上\n"
        'print(fc.weight.device.type == torch.device(DEVICE).type, "DEVICE")\n'
    )
    assert convert_code(code) == (
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        f"{DEVICE_LINE}\n"
        "\n"
        "fc = nn.Linear(2, 3).to(device)  # 搬到 device 上\n"
        'print(fc.weight.device.type == torch.device(device).type, "DEVICE")\n'
    )


def test_converting_twice_changes_nothing_more_and_code_without_device_is_left_alone():
    code = "import torch\nx = torch.ones(2, device=DEVICE)\nprint(x)\n"
    once = convert_code(code)
    assert once == f"import torch\n\n{DEVICE_LINE}\n\nx = torch.ones(2, device=device)\nprint(x)\n"
    assert convert_code(once) == once
    plain = "import torch\nprint(torch.ones(2))  # DEVICE 无关\n"
    assert convert_code(plain) == plain
    assert old_device_lines(once) == [] and old_device_lines(code) == [2]


def test_torch_is_imported_for_the_device_line_when_only_a_submodule_was():
    code = "import math\nimport torch.nn as nn\n\nprint(nn.Linear(1, 1).to(DEVICE), math.pi)\n"
    assert convert_code(code) == (
        f"import math\nimport torch\nimport torch.nn as nn\n\n{DEVICE_LINE}\n\n"
        "print(nn.Linear(1, 1).to(device), math.pi)\n"
    )


def test_an_example_with_the_line_already_only_gets_the_name_renamed():
    code = f"import torch\n\n{DEVICE_LINE}\nx = torch.ones(1, device=DEVICE)\nprint(x, device)\n"
    assert convert_code(code) == code.replace("device=DEVICE", "device=device")


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("import torch\ndevice = torch.device(DEVICE)\nprint(device)\n", "自己的名字 device"),
        ("import torch\ndef f(device):\n    return device\nprint(f(DEVICE))\n", "自己的名字 device"),
        ("import torch\nDEVICE = 'cpu'\nprint(DEVICE)\n", "自己给 DEVICE 赋值"),
        ("print(DEVICE)\n", "没有 import"),
        ("import torch\nprint(f'{DEVICE}')\n", "f-string"),
    ],
)
def test_what_cannot_be_converted_safely_is_a_conflict(code, why):
    with pytest.raises(Conflict, match=why):
        convert_code(code)


YAML = """\
name: torch.ones
examples:
  - title: 示例  # 注释保留
    code: |
      import torch

      x = torch.ones(2, device=DEVICE)
      print(x)
  - code: |-  # 块的注释
      print(DEVICE)
    title: 冲突
pitfalls:
  - text: "`x.to(DEVICE)` 返回新张量；`CUDA_VISIBLE_DEVICES` 不变。"
"""


def test_the_yaml_text_is_edited_in_place_and_conflicts_are_listed():
    report = Report()
    text = convert_text(YAML, "ones.yaml", report)
    assert text == YAML.replace("      import torch\n\n", f"      import torch\n\n      {DEVICE_LINE}\n\n").replace(
        "device=DEVICE)", "device=device)"
    ).replace("`x.to(DEVICE)`", "`x.to(device)`")
    assert (report.converted, report.prose) == (1, 1)
    assert report.conflicts == ["ones.yaml:10: 示例开头没有 import"]
    again = Report()
    assert convert_text(text, "ones.yaml", again) == text and (again.converted, again.prose) == (0, 0)
    crlf = YAML.replace("\n", "\r\n")
    assert convert_text(crlf, "ones.yaml", Report()) == text.replace("\n", "\r\n")
