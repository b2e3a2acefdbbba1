"""Hover's receiver types come from the checker's interpreter once a document version is analysed.

The session computes the analysis of a version (``FileValues``, the interpreter the diagnostics run) while the
user pauses, and attaches it to that version's index: from then on the index answers what a receiver is from
the interpreter, and its own inference only where the interpreter knows nothing. These tests go through the
session's real objects, each symbol after Chinese text and an emoji, and show both directions: a receiver only
the interpreter can type, and one where the fast path alone would answer wrongly.
"""

from __future__ import annotations

import ast

import pytest

from torchls.core import facts
from torchls.core.text import Position, SourceText
from torchls.session import Session

URI = "file:///tmp/torchls-test/一个分析.py"

PROGRAM = """\
import torch
from torch import nn

heads = {"cls": nn.Linear(8, 2), "box": nn.Linear(8, 4)}
说明 = "字典里的层 🧩"; w = heads["box"].weight
说明 = "范数 📏"; w.norm()


def make_head(deep):
    head = nn.Linear(8, 2)
    if deep:
        head = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    说明 = "分支 🌿"; head.train()
"""


@pytest.fixture
def session():
    session = Session()
    yield session
    session.close()


def _position(marker: str, symbol: str) -> Position:
    line = next(i for i, text in enumerate(PROGRAM.splitlines()) if marker in text)
    return Position(line, PROGRAM.splitlines()[line].index(symbol, PROGRAM.splitlines()[line].index(marker)))


def test_a_receiver_only_the_interpreter_types_is_answered_once_the_version_is_analysed(session):
    document = session.index(URI, PROGRAM, 1)
    norm = _position("范数", "norm")
    assert document.index.target_at(norm).qualname is None, "the fast path cannot type a dict item's weight"
    document.values()  # what the session computes while the user pauses (lsp/diagnostics._index)
    assert document.index.target_at(norm).qualname == "torch.Tensor.norm"


def test_where_the_two_engines_differ_hover_follows_the_interpreter(session):
    document = session.index(URI, PROGRAM, 1)
    train = _position("分支", "train")
    # The fast path takes the later binding and calls `head` a Sequential, though it may still be the Linear.
    assert document.index.target_at(train).qualname == "torch.nn.Sequential.train"
    document.values()
    # The interpreter merges the two paths: some module, whichever runs.
    assert document.index.target_at(train).qualname == "torch.nn.Module.train"


def test_every_receiver_the_analysis_types_reaches_hover_with_that_class(session):
    document = session.index(URI, PROGRAM, 1)
    values = document.values()
    source = SourceText(PROGRAM)
    checked = 0
    for node in ast.walk(document.index.tree):
        if not isinstance(node, ast.Attribute) or document.index.qualify(node.value) is not None:
            continue
        known = values.class_of(node.value)
        if known is None or known[1] is not None:
            continue  # the file's own classes are answered by their own members
        member = source.position_from_ast(node.end_lineno, node.end_col_offset)
        target = document.index.target_at(Position(member.line, member.column - 1))
        base = facts.ATTRIBUTE_BASES.get(known[0], known[0])  # a Parameter's members are a tensor's
        assert target is not None and target.qualname == f"{base}.{node.attr}", ast.unparse(node)
        checked += 1
    assert checked >= 2


def test_an_earlier_texts_index_does_not_take_the_new_texts_analysis(session):
    first = session.index(URI, PROGRAM, 1)
    lines = PROGRAM.split("\n")
    line = _position("范数", "norm").line
    lines[line] = lines[line].replace("w.norm()", "w.")
    typed = session.index_for_line(URI, "\n".join(lines), 2, line)
    assert typed.index is first.index
    typed.values()  # an analysis of the typed text, whose tree is not the index's
    assert first.index.target_at(_position("范数", "norm")).qualname is None


def test_completion_on_a_line_being_typed_reads_the_receiver_from_the_analysis(session):
    first = session.index(URI, PROGRAM, 1)
    first.values()
    lines = PROGRAM.split("\n")
    line = _position("范数", "norm").line
    lines[line] = lines[line].replace("w.norm()", "w.")
    typed = "\n".join(lines)
    document = session.index_for_line(URI, typed, 2, line)
    assert document.index is first.index, "completion reuses the analysed index while the user types"
    cursor = Position(line, lines[line].index("w.") + 2)
    value = document.index.value_at("w", cursor)
    assert value is not None and value.qualname == "torch.nn.Parameter", (
        "only the interpreter types a dict item's weight"
    )


def test_completion_does_not_take_a_value_the_cursors_own_statement_binds(session):
    text = PROGRAM + "w = heads\n说明 = '重新绑定 🔁'; w = torch.zeros(3) * len(heads)\n"
    first = session.index(URI, text, 1)
    first.values()
    lines = text.split("\n")
    line = len(lines) - 2
    lines[line] = lines[line].replace("len(heads)", "len(w.")  # typing: the analysed tree has no `w` here yet
    document = session.index_for_line(URI, "\n".join(lines), 2, line)
    assert document.index is first.index
    cursor = Position(line, lines[line].rindex("w.") + 2)
    assert document.index.value_at("w", cursor) is None, "w is the dict here, not the tensor its statement binds"


def test_the_checking_process_hands_its_analysis_to_the_index(session):
    """The diagnostics' own run, in the checking process: its receiver table crosses the process boundary and
    the version's index answers from it, with no second analysis in the server."""
    document = session.index(URI, PROGRAM, 1)
    norm = _position("范数", "norm")
    assert document.index.target_at(norm).qualname is None
    result = session.check_in_background(PROGRAM).result(timeout=60)
    assert result.receivers, "the worker sends the classes its analysis proved"
    session.use_checked_analysis(URI, 1, PROGRAM, result.receivers)
    assert document._values is None, "no FileValues computed in the server for this"
    assert document.index.target_at(norm).qualname == "torch.Tensor.norm"
    assert document.index.target_at(_position("分支", "train")).qualname == "torch.nn.Module.train"


def test_a_checked_analysis_of_another_version_is_not_attached(session):
    result = session.check_in_background(PROGRAM).result(timeout=60)
    session.use_checked_analysis(URI, 1, PROGRAM, result.receivers)
    edited = PROGRAM.replace("w.norm()", "w.norm(); pass")
    document = session.index(URI, edited, 2)  # built after the check of version 1 arrived
    assert document.index.target_at(_position("范数", "norm")).qualname is None
