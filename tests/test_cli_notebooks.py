"""`torchls check` on Jupyter notebooks, through the real launcher: cells as one program, cell numbers in every
format, # noqa, --fix that touches only the fixed cell, bad notebooks."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.test_cli_check import torchls

IMPORTS = "%matplotlib inline\n!pip install tqdm\nimport torch\nimport torch.nn as nn\n"
SOFTMAX = "logits = torch.randn(4, 3)\n说明 = '先 softmax 🎯'; probs = torch.softmax(logits, dim=1)\nprobs?\n"
LOSS = (
    "%%time\ncriterion = nn.CrossEntropyLoss()\nlabels = torch.randint(0, 3, (4,))\nloss = criterion(probs, labels)\n"
)
CELLS = [
    ("code", IMPORTS),
    ("markdown", "## 训练 🎯\n\n%这不是魔法命令"),
    ("code", SOFTMAX),
    ("code", "%%bash\necho 'x.to(\"cpu\")'\n"),
    ("code", LOSS),
    ("code", ""),
    ("code", "x = torch.randn(2)\nx?\n??x\n"),
]


def notebook(cells, **metadata) -> dict:
    """A notebook shaped as nbformat 4 writes it (sources as lists of lines)."""
    built = []
    for number, (kind, source) in enumerate(cells):
        cell = {"cell_type": kind, "id": f"cell-{number}", "metadata": {}, "source": source.splitlines(True)}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        built.append(cell)
    meta = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}, **metadata}
    return {"cells": built, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}


def write(path: Path, nb: dict) -> Path:
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def test_a_softmax_from_cell_3_fed_to_the_loss_in_cell_5(tmp_path):
    write(tmp_path / "train.ipynb", notebook(CELLS))
    result = torchls("check", "train.ipynb", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("train.ipynb:cell 5:4:8: TL301 "), lines
    assert len(lines) == 2 and "检查了 1 个文件，发现 1 个问题" in lines[1]
    assert result.stderr == ""  # no syntax error from any magic, help line or the %%bash cell


def test_json_names_the_cell_of_the_finding_and_of_its_related_location(tmp_path):
    write(tmp_path / "train.ipynb", notebook(CELLS))
    (finding,) = json.loads(torchls("check", "train.ipynb", "--format", "json", cwd=tmp_path).stdout)
    assert (finding["cell"], finding["line"], finding["column"], finding["code"]) == (5, 4, 8, "TL301")
    assert finding["end_column"] - finding["column"] == len("criterion")
    (related,) = finding["related"]
    column = SOFTMAX.splitlines()[1].index("torch.softmax") + 1  # after 说明 and 🎯: code points
    assert (related["cell"], related["line"], related["column"]) == (3, 2, column)


def test_sarif_points_into_the_notebook_file_and_carries_the_cell(tmp_path):
    path = write(tmp_path / "train.ipynb", notebook(CELLS))
    sarif = json.loads(torchls("check", "train.ipynb", "--format", "sarif", cwd=tmp_path).stdout)
    assert sarif["version"] == "2.1.0"
    (result,) = sarif["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "train.ipynb"
    file_lines = path.read_text(encoding="utf-8").split("\n")
    region = location["region"]
    assert file_lines[region["startLine"] - 1][region["startColumn"] - 1 :].startswith("criterion(probs, labels)")
    assert location["properties"] == {
        "cell": 5,
        "cellRegion": {"startLine": 4, "startColumn": 8, "endLine": 4, "endColumn": 17},
    }
    related = result["relatedLocations"][0]["physicalLocation"]
    start = related["region"]
    assert file_lines[start["startLine"] - 1][start["startColumn"] - 1 :].startswith("torch.softmax(")
    assert related["properties"]["cell"] == 3


def test_noqa_works_on_a_cell_line(tmp_path):
    cells = [
        ("code", "import torch\nx = torch.randn(2)\n"),
        ("code", "x.to('cpu')  # noqa: TL201\nx.float()  # noqa\n"),
    ]
    write(tmp_path / "a.ipynb", notebook(cells))
    result = torchls("check", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_fix_keeps_outputs_metadata_and_the_other_cells(tmp_path):
    nb = notebook([("code", "import torch\nx = torch.randn(2)\n"), ("markdown", "说明 🎯"), ("code", "x.cuda()\nx")])
    nb["cells"][2].update(
        execution_count=7,
        metadata={"tags": ["训练"]},
        outputs=[
            {
                "output_type": "execute_result",
                "data": {"text/plain": ["tensor([1., 2.])"]},
                "execution_count": 7,
                "metadata": {},
            }
        ],
    )
    path = write(tmp_path / "fix.ipynb", nb)
    result = torchls("check", "--fix", "--select", "TL201", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    expected = copy.deepcopy(nb)
    expected["cells"][2]["source"] = ["x = x.cuda()\n", "x"]
    assert path.read_text(encoding="utf-8") == json.dumps(expected, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def jupyter_notebook():
    """A notebook written by nbformat itself, with outputs, counts, metadata, an attachment, Chinese and emoji."""
    nbformat = pytest.importorskip("nbformat")
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    nb = new_notebook(metadata={"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}})
    nb.cells = [
        new_code_cell(
            "import torch\n%load_ext autoreload",
            execution_count=1,
            outputs=[new_output("stream", name="stdout", text="已加载 ✅\n")],
        ),
        new_markdown_cell("![图](attachment:a.png) 🎯", attachments={"a.png": {"image/png": "iVBORw0KGgo=\n"}}),
        new_code_cell(
            "x = torch.randn(2)\n说明 = '🚀'; x.to('cpu')",
            execution_count=2,
            outputs=[new_output("execute_result", data={"text/plain": "tensor([0.1, 0.2])"}, execution_count=2)],
            metadata={"tags": ["训练"]},
        ),
        new_code_cell("y = x * 2", execution_count=3, outputs=[]),
    ]
    return nbformat, nb


def test_fix_rewrites_only_the_fixed_cell_as_jupyter_would(tmp_path):
    nbformat, nb = jupyter_notebook()
    path = tmp_path / "fix.ipynb"
    nbformat.write(nb, path)
    result = torchls("check", "--fix", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "已自动修复 1 个" in result.stdout
    expected = copy.deepcopy(nb)
    expected.cells[2].source = "x = torch.randn(2)\n说明 = '🚀'; x = x.to('cpu')"
    written = path.read_text(encoding="utf-8")
    assert written == nbformat.writes(expected) + "\n"  # byte for byte: outputs, metadata, key order, newline


def test_a_notebook_with_nothing_to_fix_is_left_byte_for_byte(tmp_path):
    nbformat, nb = jupyter_notebook()
    nb.cells[2].source = "x = torch.randn(2)\nx = x.to('cpu')"
    path = tmp_path / "clean.ipynb"
    nbformat.write(nb, path)
    before = path.read_bytes()
    assert torchls("check", "--fix", str(path)).returncode == 0
    assert path.read_bytes() == before


def test_bad_notebooks_are_reported_and_the_rest_is_still_checked(tmp_path):
    (tmp_path / "broken.ipynb").write_text("{not json", encoding="utf-8")
    (tmp_path / "no_cells.ipynb").write_text('{"metadata": {}, "nbformat": 4}', encoding="utf-8")
    (tmp_path / "odd_cell.ipynb").write_text('{"cells": [{"cell_type": "code", "source": 3}]}', encoding="utf-8")
    write(tmp_path / "good.ipynb", notebook(CELLS))
    (tmp_path / "train.py").write_text("import torch\nx = torch.randn(2)\nx.to('cpu')\n", encoding="utf-8")
    checkpoints = tmp_path / ".ipynb_checkpoints"
    checkpoints.mkdir()
    (checkpoints / "good-checkpoint.ipynb").write_text("{not json", encoding="utf-8")
    result = torchls("check", str(tmp_path))
    assert result.returncode == 2
    problems = result.stderr.splitlines()
    assert len(problems) == 3, result.stderr
    assert f"{tmp_path / 'broken.ipynb'}: 不是有效的 Jupyter 笔记本：JSON 解析失败" in problems[0]
    assert "no_cells.ipynb: 不是有效的 Jupyter 笔记本：没有 cells 列表" in problems[1]
    assert "odd_cell.ipynb: 不是有效的 Jupyter 笔记本：第 1 个单元格的 source" in problems[2]
    assert "good.ipynb:cell 5:4:8: TL301" in result.stdout
    assert "train.py:3:3: TL201" in result.stdout
    assert "检查了 5 个文件" in result.stdout and "3 个文件无法读取" in result.stdout


def test_a_cell_syntax_error_names_its_cell(tmp_path):
    cells = [
        ("code", "import torch\nimport torch.nn as nn\n"),
        ("markdown", "x"),
        ("code", "def half(:\n    pass\n"),
        ("code", "probs = torch.softmax(torch.randn(2, 3), 1)\n"),
        ("code", LOSS),
    ]
    write(tmp_path / "half.ipynb", notebook(cells))
    result = torchls("check", str(tmp_path / "half.ipynb"))
    assert result.returncode == 1
    assert "half.ipynb:cell 3:1: 语法错误" in result.stderr
    assert "half.ipynb:cell 5:4:8: TL301" in result.stdout  # the other cells are still checked
