from __future__ import annotations

import ast

from torchls.core.parsing import parse_tolerant


def test_valid_source_is_parsed_untouched():
    parsed = parse_tolerant("import torch\nx = torch.randn(3)\n")
    assert parsed.blanked_lines == frozenset()
    assert parsed.error is None


def test_broken_lines_are_blanked_and_the_rest_survives():
    text = "import torch\nx = torch.randn(3\ny = torch.zeros(2)\ndef f(:\n    pass\nz = torch.ones(1)\n"
    parsed = parse_tolerant(text)
    assert parsed.error is not None
    names = {node.id for node in ast.walk(parsed.tree) if isinstance(node, ast.Name)}
    assert "z" in names
    assert 1 in parsed.blanked_lines


def test_hopeless_source_gives_an_empty_module():
    parsed = parse_tolerant("(((((\n" * 40)
    assert isinstance(parsed.tree, ast.Module)


def test_nul_bytes_do_not_raise():
    assert isinstance(parse_tolerant("x = 1\0\n").tree, ast.Module)
