"""Notebooks as one program (core/notebook.py) and the .ipynb file format (ipynb.py)."""

from __future__ import annotations

import copy
import importlib.util
import json
import re

import pytest

from torchls.core.checker import Checker
from torchls.core.findings import Edit, Finding, Fix, Severity
from torchls.core.notebook import Cell, build_program, check_cells, edits_by_cell, mask_ipython
from torchls.core.text import Position, Span
from torchls.ipynb import InvalidNotebook, read_notebook


def code(source: str) -> Cell:
    return Cell("code", source)


# ---- the program and its line map ---------------------------------------------------------------------------


def test_each_code_cell_starts_a_line_and_other_cells_add_nothing():
    cells = [code("import torch\nx = 1"), Cell("markdown", "# x = 2"), code(""), Cell("raw", "y"), code("z = 3\n")]
    program = build_program(cells)
    assert program.text == "import torch\nx = 1\n\nz = 3\n"
    assert program.cell_position(Position(1, 4)) == (0, Position(1, 4))
    assert program.cell_position(Position(2, 0)) == (2, Position(0, 0))  # the empty cell has its one line
    assert program.cell_position(Position(3, 2)) == (4, Position(0, 2))
    assert program.cell_position(Position(9, 0)) is None
    assert program.program_position(4, Position(0, 2)) == Position(3, 2)
    assert program.program_position(1, Position(0, 0)) is None  # a markdown cell is not in the program
    assert program.program_position(0, Position(5, 0)) is None  # past its cell's end
    assert not program.masked_lines and not program.syntax_errors


def test_positions_round_trip_with_chinese_and_emoji():
    cells = [code("import torch\n"), code("说明 = '🎯'; x = torch.randn(2)\n")]
    program = build_program(cells)
    for column in range(len("说明 = '🎯'; x = torch.randn(2)") + 1):
        cell, inside = program.cell_position(Position(2, column))  # the first cell's final newline ends line 1
        assert (cell, inside) == (1, Position(0, column))
        assert program.program_position(cell, inside) == Position(2, column)


MASKED = [
    ("%matplotlib inline", "pass"),
    ("    %load_ext autoreload", "    pass"),
    ("!pip install torch", "pass"),
    ("!!ls", "pass"),
    ("files = !ls", "files = __torchls_unparsed__"),
    ("a, b = %sx echo", "a, b = __torchls_unparsed__"),
    ("x?", "pass"),
    ("x??", "pass"),
    ("?x", "pass"),
    ("??torch.nn.Linear", "pass"),
    ("%timeit?", "pass"),
    ("%timeit y = f(x)", "pass"),
    ("/print 1", "pass"),
]


@pytest.mark.parametrize(("line", "masked"), MASKED)
def test_ipython_lines_are_masked_in_place(line, masked):
    lines, masked_lines, shifts = mask_ipython(["import torch", line, "y = 1"])
    assert lines == ["import torch", masked, "y = 1"]
    assert masked_lines == {1} and not shifts


@pytest.mark.parametrize(
    "source",
    [
        's = """\n!not a shell escape\n%not a magic\n"""',
        "total = (1\n  % 2)",
        "x = [\n    !1,\n]",  # broken Python, but not IPython: left for the parser's own repair
        "value = 1 \\\n  % 2",
        "# %matplotlib inline in a comment",
        "print('?')",
        "x = a if b else c",
    ],
)
def test_lines_inside_strings_brackets_and_continuations_are_not_magics(source):
    lines = source.split("\n")
    assert mask_ipython(lines) == (lines, set(), {})


def test_time_keeps_its_statement_and_maps_its_columns_back():
    cells = [code("import torch\nfor i in range(2):\n    %time y = torch.randn(i)\n")]
    program = build_program(cells)
    assert program.text.split("\n")[2] == "    y = torch.randn(i)"
    assert 2 not in program.masked_lines
    assert program.cell_position(Position(2, 8)) == (0, Position(2, 14))  # `torch` after "%time "
    assert program.cell_position(Position(2, 2)) == (0, Position(2, 2))  # the indentation does not move
    assert program.program_position(0, Position(2, 14)) == Position(2, 8)


def test_a_continued_magic_is_masked_to_its_last_line():
    lines, masked, _ = mask_ipython(["!pip install \\", "    torch", "x = 1"])
    assert lines == ["pass", "", "x = 1"] and masked == {0, 1}


@pytest.mark.parametrize("magic", ["%%time", "%%capture out", "%%prun -s cumulative"])
def test_python_cell_magics_keep_their_body(magic):
    lines, masked, _ = mask_ipython(["", magic, "import torch", "x = torch.randn(2)"])
    assert lines == ["", "", "import torch", "x = torch.randn(2)"] and masked == {1}


@pytest.mark.parametrize("magic", ["%%bash", "%%writefile train.py", "%%html", "%%javascript", "%%timeit", "%%sql"])
def test_other_cell_magics_mask_the_whole_cell(magic):
    lines, masked, _ = mask_ipython([magic, "import torch", "", "x = torch.randn(2)"])
    assert lines == ["", "", "", ""] and masked == {0, 1, 3}


def test_an_indented_cell_is_dedented_as_ipython_does():
    program = build_program([code("    import torch\n    x = torch.randn(2)\n")])
    assert program.text == "import torch\nx = torch.randn(2)\n"
    assert program.cell_position(Position(1, 4)) == (0, Position(1, 8))


def test_top_level_await_and_async_blocks_parse():
    program = build_program([code("import asyncio\nawait asyncio.sleep(0)\nasync with lock:\n    pass\n")])
    assert not program.syntax_errors and not program.masked_lines


def test_a_syntax_error_stays_in_its_cell():
    cells = [
        code("import torch\nimport torch.nn.functional as F\nbad = (1,\n"),  # unclosed: must not swallow cell 2
        code(
            "logits = torch.randn(4, 3)\nlabels = torch.randint(0, 3, (4,))\n"
            "loss = F.cross_entropy(F.softmax(logits, dim=1), labels)\n"
        ),
    ]
    result = check_cells(cells, Checker())
    assert [(e.cell, e.line) for e in result.syntax_errors] == [(0, 2)]
    assert [(f.finding.code, f.where.cell, f.where.span.start.line) for f in result.findings] == [("TL301", 1, 2)]


# ---- findings in cells -------------------------------------------------------------------------------------------

NOTEBOOK = [
    code("%matplotlib inline\nimport torch\nimport torch.nn as nn\n!pip install tqdm\n"),
    Cell("markdown", "## 训练 🎯"),
    code("logits = torch.randn(4, 3)\n说明 = '🎯'; probs = torch.softmax(logits, dim=1)\nprobs?\n"),
    Cell("markdown", ""),
    code(
        "%%time\ncriterion = nn.CrossEntropyLoss()\n"
        "labels = torch.randint(0, 3, (4,))\nloss = criterion(probs, labels)\n"
    ),
]


def test_a_finding_names_its_cell_and_its_related_cell():
    result = check_cells(NOTEBOOK, Checker())
    (finding,) = result.findings
    assert finding.finding.code == "TL301"
    assert finding.where.cell == 4
    assert finding.where.span.start == Position(3, 7)
    (related,) = finding.related
    assert related.where.cell == 2
    assert related.where.span.start == Position(1, 18)  # after 说明 and the emoji, in code points


def test_no_finding_on_a_masked_line():
    cells = [code("import torch\nx = torch.randn(2)\n%time x.to('cpu')\n!x.to('cpu')\n%timeit x.to('cpu')\n")]
    result = check_cells(cells, Checker())
    assert [(f.finding.code, f.where.span.start) for f in result.findings] == [("TL201", Position(2, 8))]


def test_noqa_in_a_cell():
    cells = [code("import torch\nx = torch.randn(2)\n"), code("x.to('cpu')  # noqa: TL201\nx.float()\n")]
    result = check_cells(cells, Checker())
    assert [(f.where.cell, f.where.span.start.line) for f in result.findings] == [(1, 1)]


def test_fixes_change_only_the_cells_they_edit():
    cells = [code("import torch\nx = torch.randn(2)\n"), Cell("markdown", "x"), code("说明 = '🎯'; x.to('cpu')\n")]
    result = check_cells(cells, Checker())
    (finding,) = result.findings
    assert finding.fixable
    assert edits_by_cell(finding.edits).keys() == {2}
    sources, applied = result.program.fixed_sources(result.findings)
    assert sources == {2: "说明 = '🎯'; x = x.to('cpu')\n"} and applied == 1


def test_a_fix_that_would_edit_a_masked_line_is_dropped():
    program = build_program([code("import torch\n!ls\nx = 1\n")])
    assert program.cell_edits(Fix("t", (Edit(Span(Position(1, 0), Position(1, 3)), "y"),))) is None
    assert program.cell_edits(Fix("t", (Edit(Span(Position(2, 0), Position(2, 1)), "y"),))) is not None
    finding = Finding(
        "TL201",
        "m",
        Span(Position(2, 0), Position(2, 1)),
        Severity.ERROR,
        Fix("t", (Edit(Span(Position(1, 0), Position(2, 1)), "y"),)),
    )
    located = program.locate(finding)
    assert located.finding.fix is None and not located.edits  # reported, but not offered as fixable


# ---- .ipynb files ------------------------------------------------------------------------------------------------

SOFTMAX_CELL = 'logits = torch.randn(4, 3)\n说明 = "q\\t\\"🎯"; probs = torch.softmax(logits, dim=1)\nprobs'


def nbformat_notebook():
    """A notebook as Jupyter writes it: outputs, execution counts, metadata, attachments, Chinese and emoji."""
    nbformat = pytest.importorskip("nbformat")
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

    nb = new_notebook(
        metadata={
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "version": "3.11.7", "mimetype": "text/x-python"},
        }
    )
    nb.cells = [
        new_markdown_cell("# 训练笔记 🎯\n\n先导入。", attachments={"a.png": {"image/png": "iVBORw0KGgo=\n"}}),
        new_code_cell(
            "%matplotlib inline\nimport torch\nimport torch.nn as nn",
            execution_count=1,
            outputs=[new_output("stream", name="stdout", text="就绪 ✅\nok\n")],
        ),
        new_code_cell(
            SOFTMAX_CELL,
            execution_count=2,
            outputs=[
                new_output(
                    "execute_result",
                    data={"text/plain": "tensor([[0.1, 0.9],\n        [0.5, 0.5]])"},
                    execution_count=2,
                )
            ],
        ),
        new_raw_cell("raw ✨"),
        new_code_cell(""),
        new_code_cell("x = torch.randn(2)\nx.to('cpu')\n", metadata={"tags": ["训练"], "collapsed": False}),
    ]
    return nbformat, nb


def writes(nbformat, nb) -> str:
    return nbformat.writes(nb) + "\n"  # nbformat.write adds the trailing newline


def hand_written() -> dict:
    """The same notebook's content, built here: the variants below need no nbformat."""

    def cell(kind: str, source: str, **fields) -> dict:
        return {"cell_type": kind, "id": f"c{len(source)}", "metadata": {}, "source": source.splitlines(True), **fields}

    stream = {"name": "stdout", "output_type": "stream", "text": ["就绪 ✅\n", "ok\n"]}
    result = {
        "data": {"text/plain": ["tensor([0.1])"]},
        "execution_count": 2,
        "metadata": {},
        "output_type": "execute_result",
    }
    cells = [
        cell("markdown", "# 训练笔记 🎯\n\n先导入。", attachments={"a.png": {"image/png": "iVBORw0KGgo=\n"}}),
        cell("code", "%matplotlib inline\nimport torch", execution_count=1, outputs=[stream]),
        cell("code", SOFTMAX_CELL, execution_count=2, outputs=[result]),
        cell("raw", "raw ✨"),
        cell("code", "", execution_count=None, outputs=[]),
        cell("code", "x = torch.randn(2)\nx.to('cpu')\n", execution_count=None, outputs=[]),
    ]
    return {"cells": cells, "metadata": {"kernelspec": {"language": "python"}}, "nbformat": 4, "nbformat_minor": 5}


def variants(data: dict) -> dict[str, str]:
    unsorted = {key: data[key] for key in reversed(list(data))}
    as_strings = copy.deepcopy(data)
    for cell in as_strings["cells"]:
        cell["source"] = "".join(cell["source"])
    return {
        "nbformat layout": json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
        "indent 2, no final newline": json.dumps(data, indent=2, ensure_ascii=False),
        "unsorted keys": json.dumps(unsorted, indent=1, ensure_ascii=False) + "\n",
        "string sources": json.dumps(as_strings, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
        "ascii escapes": json.dumps(data, indent=1, sort_keys=True) + "\n",
        "one line": json.dumps(data, ensure_ascii=False),
        "crlf": json.dumps(data, indent=4, ensure_ascii=False).replace("\n", "\r\n") + "\r\n",
    }


def assert_reserialises(text: str, name: str) -> None:
    notebook = read_notebook(text)
    for index, cell in enumerate(notebook.cells):
        value = notebook.sources[index]
        assert notebook.source_json(index, cell.source) == text[value.start : value.end], (name, index)
    assert notebook.with_sources({i: c.source for i, c in enumerate(notebook.cells)}) == text, name


@pytest.mark.parametrize("name", list(variants(hand_written())))
def test_every_source_of_a_hand_written_notebook_reserialises_byte_for_byte(name):
    assert_reserialises(variants(hand_written())[name], name)


def test_every_source_of_a_jupyter_notebook_reserialises_byte_for_byte():
    nbformat, nb = nbformat_notebook()
    assert_reserialises(writes(nbformat, nb), "nbformat")
    assert_reserialises(json.dumps(json.loads(writes(nbformat, nb)), indent=2, ensure_ascii=False), "indent 2")


def test_changing_one_source_writes_what_jupyter_writes():
    nbformat, nb = nbformat_notebook()
    notebook = read_notebook(writes(nbformat, nb))
    new_source = "x = torch.randn(2)\nx = x.to('cpu')\n"
    expected = copy.deepcopy(nb)
    expected.cells[5].source = new_source
    assert notebook.with_sources({5: new_source}) == writes(nbformat, expected)


@pytest.mark.parametrize("name", list(variants(hand_written())))
def test_changing_one_source_keeps_every_other_byte(name):
    text = variants(hand_written())[name]
    notebook = read_notebook(text)
    new_source = notebook.cells[5].source.replace("x.to('cpu')", "x = x.to('cpu') ✨")
    written = notebook.with_sources({5: new_source})
    value = notebook.sources[5]
    assert written[: value.start] == text[: value.start]
    assert written[value.start + len(notebook.source_json(5, new_source)) :] == text[value.end :]
    assert read_notebook(written).cells[5].source == new_source
    assert type(json.loads(written)["cells"][5]["source"]) is type(json.loads(text)["cells"][5]["source"])
    if name == "nbformat layout":
        expected = hand_written()
        expected["cells"][5]["source"] = new_source.splitlines(True)
        assert written == json.dumps(expected, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_a_cell_position_is_found_in_the_file_text():
    texts = list(variants(hand_written()).values())
    if importlib.util.find_spec("nbformat") is not None:
        nbformat, nb = nbformat_notebook()
        texts.append(writes(nbformat, nb))
    for text in texts:
        notebook = read_notebook(text)
        lines = text.replace("\r\n", "\n").split("\n")
        column = notebook.cells[2].source.split("\n")[1].index("probs")  # after 说明, escaped backslashes, 🎯
        at = notebook.file_position(2, Position(1, column))
        assert lines[at.line][at.column :].startswith("probs = torch.softmax"), text[:30]
        end = notebook.file_position(5, Position(1, 11))  # the end of the cell's last line
        assert lines[end.line][end.column :].startswith(("\\n", '"')), text[:30]


def test_the_kernel_language_and_cell_ids_are_read():
    data = hand_written()
    notebook = read_notebook(json.dumps(data))
    assert notebook.is_python and notebook.cells[1].id == data["cells"][1]["id"]
    data["metadata"] = {"kernelspec": {"language": "R", "name": "ir"}}
    assert not read_notebook(json.dumps(data)).is_python
    data["metadata"] = {"language_info": {"name": "python"}}
    assert read_notebook(json.dumps(data)).is_python


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "JSON 解析失败（第 1 行第 2 列"),
        ("[1, 2]", "顶层不是 JSON 对象"),
        ('{"nbformat": 4}', "没有 cells 列表"),
        ('{"nbformat": 3, "worksheets": []}', "nbformat 3 的旧格式"),
        ('{"cells": [1]}', "第 1 个单元格不是 JSON 对象"),
        ('{"cells": [{"source": ""}]}', "没有字符串 cell_type"),
        ('{"cells": [{"cell_type": "code", "source": [1]}]}', "source 不是字符串或字符串列表"),
        ('{"cells": [{"cell_type": "code"}]}', "source 不是字符串或字符串列表"),
    ],
)
def test_invalid_notebooks_say_why(text, reason):
    with pytest.raises(InvalidNotebook, match=re.escape(reason)):
        read_notebook(text)
