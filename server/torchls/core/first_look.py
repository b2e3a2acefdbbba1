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

from torchls.core.names import ModuleIndex
from torchls.core.parsing import parse_tolerant
from torchls.core.text import SourceText

_BLOCK_HEADS = ("def ", "async def ", "class ", "@")
_COMPOUND = ("if ", "for ", "while ", "with ", "try:", "else:", "elif ", "except", "finally:", "async ", "match ")
_CLOSERS = (")", "]", "}")


def partial_index(text: str, line: int) -> tuple[ModuleIndex, frozenset[int]]:
    """A :class:`ModuleIndex` of the part of ``text`` that decides what code at ``line`` (0-based) sees, and the
    lines that did not parse (see :func:`~torchls.core.parsing.parse_tolerant`)."""
    lines = text.splitlines()
    kept = [""] * len(lines)
    for number in _module_statements(lines):
        kept[number] = lines[number]
    start, end = _block_around(lines, line)
    kept[start : end + 1] = lines[start : end + 1]
    parsed = parse_tolerant("\n".join(kept))
    index = ModuleIndex(parsed, SourceText(text))
    index.partial = True
    return index, parsed.blanked_lines


def _module_statements(lines: list[str]) -> list[int]:
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
            found.extend(range(number, last + 1))
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


def _starts_top_level(line: str) -> bool:
    """True for a line that begins a module-level statement (a decorator included); an ``else:`` or a closing
    bracket at column 0 continues the statement before it."""
    if not line or line[0] in " \t#":
        return False
    return not (line.startswith(_CLOSERS) or line.startswith(("else:", "elif ", "except", "finally:")))
