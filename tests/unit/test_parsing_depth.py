"""Statements nested deeper than the analysis can walk are set aside like broken lines (torchls.core.parsing)."""

from __future__ import annotations

import ast
import subprocess
import sys

from torchls.core.parsing import MAX_EXPRESSION_DEPTH, UNKNOWN_VALUE, deep_statements, parse_tolerant


def _sum(terms: int) -> str:
    return " + ".join(["a"] * terms)


def test_deep_statements_are_found_and_ordinary_ones_are_not():
    source = "\n".join(
        [
            "a = 1",
            f"x = {_sum(600)}",  # 600 nested BinOps
            f"y = {'-' * 200}a",  # 200 nested UnaryOps on fewer than 210 characters
            "values = [",
            *[f"    {i}," for i in range(2000)],  # long, but flat
            "]",
            f"near = {'-' * (MAX_EXPRESSION_DEPTH - 5)}a",
            "if True:",
            f"    inner = {_sum(400)}",  # inside a block
        ]
    )
    deep = deep_statements(ast.parse(source))
    assert [s.lineno for s in deep] == [2, 3, 2008]


def test_only_the_deep_statement_is_set_aside_and_its_name_stays_bound():
    source = f"import torch\n# 中文注释 🧠\nx = {_sum(600)}\nz = torch.randn(3)\n"
    parsed = parse_tolerant(source)
    assert parsed.blanked_lines == frozenset({2})
    assert parsed.error is not None and parsed.error.startswith("3: ") and "150 层" in parsed.error
    first, second = parsed.tree.body[1], parsed.tree.body[2]
    assert isinstance(first, ast.Assign) and ast.unparse(first) == f"x = {UNKNOWN_VALUE}"
    assert ast.unparse(second) == "z = torch.randn(3)" and second.lineno == 4


def test_a_deep_block_header_keeps_its_body():
    source = f"if {_sum(300)}:\n    y = 1\n"
    parsed = parse_tolerant(source)
    (block,) = parsed.tree.body
    assert isinstance(block, ast.If) and ast.unparse(block.body[0]) == "y = 1"


def test_torchls_check_reports_the_rest_of_the_file_through_the_launcher(tmp_path):
    path = tmp_path / "deep.py"
    path.write_text(
        f'import torch\n说明 = "🧮"; a = torch.randn(2)\nx = {_sum(600)}\nz = torch.randn(3)\nw = z.view(4)\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "torchls", "check", str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert f"{path}:5:7: TL103" in done.stdout
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stdout + done.stderr


def test_a_deep_statement_in_a_file_with_a_syntax_error_is_set_aside_too():
    source = f"def broken(:\n    pass\nx = {_sum(600)}\ny = torch.randn(3)\n"
    parsed = parse_tolerant(source)
    assert not deep_statements(parsed.tree) and 2 in parsed.blanked_lines
    assert parsed.error is not None and parsed.error.startswith("1: ")  # the syntax error is the one reported
    assert ast.unparse(parsed.tree.body[-1]) == "y = torch.randn(3)"
