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


def test_a_half_typed_statement_alone_in_its_block_costs_only_its_own_line():
    # The only statement of the ``if`` is being typed: blanking it empties the block, and Python then reports the
    # ``elif`` below. That must not blank good lines one after another (it used to empty the whole module).
    source = (
        "import torch.nn as nn\n"
        "def init(module):\n"
        '    """初始化 🎲"""\n'
        "    if isinstance(module, nn.Linear):\n"
        "        if module.bias is not None:\n"
        "            nn.init.\n"
        "    elif hasattr(module, 'init_weights'):\n"
        "        module.init_weights()\n"
        "    else:\n"
        "        pass\n"
        "x = 1\n"
    )
    parsed = parse_tolerant(source)
    assert parsed.blanked_lines == {5}
    assert [type(node).__name__ for node in parsed.tree.body] == ["Import", "FunctionDef", "Assign"]
    branch = parsed.tree.body[1].body[1].body[0]  # the inner ``if``: its body is a placeholder now
    assert type(branch.body[0]).__name__ == "Pass"
