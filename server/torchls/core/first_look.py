"""A first answer in a file just opened, while its full index is not built yet.

Indexing a long file takes 50-150 milliseconds: ``ast.parse`` of the whole text (which holds the GIL, so the
server answers nothing meanwhile) and a walk of its 80,000 nodes. The first hover often comes right after
``didOpen``. It is answered from a *partial* index instead: the module's import lines, its other one-line
module-level statements, and the whole top-level block around the cursor (the class with all its methods, or the
function), every other line left blank so that positions stay the same. That parses in a few milliseconds
and answers what the block itself proves: import-qualified names (``nn.Conv2d``), ``self.fc`` from the class's
``__init__``, values bound in the method. It does not infer parameters from calls elsewhere in the file
(:attr:`~torchls.core.names.ModuleIndex.partial`), so it never proves what the full index would not.
"""

from __future__ import annotations

import ast

from torchls.core.names import ModuleIndex
from torchls.core.parsing import ParsedSource, parse_tolerant
from torchls.core.text import SourceText

_BLOCK_HEADS = ("def ", "async def ", "class ", "@")
_COMPOUND = ("if ", "for ", "while ", "with ", "try:", "else:", "elif ", "except", "finally:", "async ", "match ")
_CLOSERS = (")", "]", "}")


def kept_lines(text: str, line: int, with_init: bool = True) -> tuple[tuple[int, int], ...]:
    """The line ranges of the block around ``line`` that :func:`partial_index` keeps: hovers for which they are
    the same share one partial index."""
    lines = text.splitlines()
    start, end = _block_around(lines, line)
    return tuple(_class_members_kept(lines, start, end, line, with_init))


def partial_index(text: str, line: int, with_init: bool = True) -> tuple[ModuleIndex, frozenset[int]]:
    """A :class:`ModuleIndex` of the part of ``text`` that decides what code at ``line`` (0-based) sees, and the
    lines that did not parse (see :func:`~torchls.core.parsing.parse_tolerant`)."""
    lines = text.splitlines()
    start, end = _block_around(lines, line)
    block = [""] * (end - start + 1)
    for first, last in _class_members_kept(lines, start, end, line, with_init):
        block[first - start : last - start + 1] = lines[first : last + 1]
    pieces = [(first, lines[first : last + 1]) for first, last in _pieces(_module_statements(lines, start, end))]
    pieces.append((start, block))
    tree = ast.Module([], [])
    blanked: set[int] = set()
    # Each piece is parsed on its own and moved to its lines: the thousands of blank lines between them would
    # cost the tokenizer more than the code itself.
    for first, piece_lines in sorted(pieces, key=lambda piece: piece[0]):
        piece = parse_tolerant("\n".join(piece_lines))
        for statement in piece.tree.body:
            tree.body.append(ast.increment_lineno(statement, first))
        blanked.update(number + first for number in piece.blanked_lines)
    index = ModuleIndex(ParsedSource(tree, frozenset(blanked)), SourceText(text))
    index.partial = True
    return index, frozenset(blanked)


def _pieces(numbers: list[int]) -> list[tuple[int, int]]:
    """Runs of consecutive line numbers, as (first, last): each holds whole statements (an import over several
    lines stays in one run)."""
    runs: list[tuple[int, int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


def _module_statements(lines: list[str], block_start: int, block_end: int) -> list[int]:
    """Lines of module-level statements that stand alone: imports (with their continuation lines) and one-line
    statements (``F = torch.nn.functional``, ``DEVICE = ...``), which may bind again what an import bound. Lines
    inside a triple-quoted string are not code."""
    found: list[int] = []
    in_string = False
    number = 0
    while number < len(lines):
        line = lines[number]
        quotes = line.count('"""') + line.count("'''")
        starts_code = not in_string and line[:1] not in ("", " ", "\t", "#") and not line.startswith(_BLOCK_HEADS)
        if quotes % 2:
            in_string = not in_string
        if starts_code and not line.startswith(_COMPOUND) and not line.startswith(_CLOSERS) and not quotes:
            last = number
            if line.startswith(("import ", "from ")):
                code = line.split("#", 1)[0]
                while (code.count("(") > code.count(")") or code.rstrip().endswith("\\")) and last + 1 < len(lines):
                    last += 1
                    code += lines[last].split("#", 1)[0]
            elif _open_brackets(line) or line.rstrip().endswith("\\"):
                number += 1
                continue  # a statement over several lines: not followed
            found.extend(n for n in range(number, last + 1) if not block_start <= n <= block_end)
            number = last
        number += 1
    return found


def _open_brackets(line: str) -> bool:
    code = line.split("#", 1)[0]
    return sum(code.count(c) for c in "([{") > sum(code.count(c) for c in ")]}")


def _block_around(lines: list[str], line: int) -> tuple[int, int]:
    """The first and last line of the top-level statement containing ``line``, decorators included."""
    line = min(max(line, 0), max(len(lines) - 1, 0))
    start = line
    while start > 0 and not _starts_top_level(lines[start]):
        start -= 1
    while start > 0 and lines[start - 1].startswith("@"):
        start -= 1
    end = max(start, line)
    while end + 1 < len(lines) and lines[end].startswith("@"):
        end += 1  # a decorator's block is the definition below it
    while end + 1 < len(lines) and not _starts_top_level(lines[end + 1]):
        end += 1
    return start, end


def _class_members_kept(
    lines: list[str], start: int, end: int, line: int, with_init: bool = True
) -> list[tuple[int, int]]:
    """The line ranges to keep of the block ``start``-``end``: all of it, or for a class only what decides code at
    ``line``: its header, its one-line statements, ``__init__`` (where ``self.fc = ...`` is bound; left out when
    not ``with_init``) and the member around ``line``. Other methods are left out (a big model class has thousands
    of nodes in them)."""
    header = next((n for n in range(start, end + 1) if lines[n].startswith("class ")), None)
    if header is None:
        return [(start, end)]
    members = _members(lines, header + 1, end)
    if not members:
        return [(start, end)]
    kept = [(start, members[0][0] - 1)]
    for first, last in members:
        definition = next(
            (lines[n].lstrip() for n in range(first, last + 1) if not lines[n].lstrip().startswith("@")), ""
        )
        is_method = definition.startswith(("def ", "async def "))
        is_init = definition.startswith(("def __init__", "async def __init__"))
        if not is_method or first <= line <= last or (with_init and is_init):
            kept.append((first, last))
    if len(kept) == 1:
        kept.append(members[0])  # a class needs a body: the cursor is on its header
    return kept


def _members(lines: list[str], first: int, last: int) -> list[tuple[int, int]]:
    """The statements of a class body from ``first`` to ``last``, each with its decorators: where a line at the
    body's indentation begins one."""
    indent = None
    starts: list[int] = []
    for number in range(first, last + 1):
        text = lines[number]
        stripped = text.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        width = len(text) - len(stripped)
        if indent is None:
            indent = width
        if width == indent and not stripped.startswith(_CLOSERS):
            if (
                starts
                and lines[starts[-1]].lstrip().startswith("@")
                and not _ends_decorators(lines, starts[-1], number)
            ):
                continue  # a decorator's definition belongs to it
            starts.append(number)
    return [(begin, (starts[i + 1] - 1 if i + 1 < len(starts) else last)) for i, begin in enumerate(starts)]


def _ends_decorators(lines: list[str], decorator: int, number: int) -> bool:
    """True when ``number`` starts a new member after the decorated one that begins at ``decorator``: it is not
    the next decorator or the definition right after them."""
    for between in range(decorator, number):
        stripped = lines[between].lstrip()
        if stripped.startswith(("def ", "async def ", "class ")):
            return True  # the decorated definition came already
    return False


def _starts_top_level(line: str) -> bool:
    """True for a line that begins a module-level statement (a decorator included); an ``else:`` or a closing
    bracket at column 0 continues the statement before it."""
    if not line or line[0] in " \t#":
        return False
    return not (line.startswith(_CLOSERS) or line.startswith(("else:", "elif ", "except", "finally:")))
