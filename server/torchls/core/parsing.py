"""Parse Python source into an ``ast`` tree even when some lines do not parse.

Editors send half-typed code all the time. A syntax error on one line must not cost the hover on every other
line, so the broken lines are blanked out (their text replaced by spaces, which keeps every other line's
positions intact) and the rest is parsed again.
"""

from __future__ import annotations

import ast
import re
import sys
import threading
from dataclasses import dataclass, field

_MAX_REPAIRS = 25
_AST_LOCK = threading.RLock()


# What a file too deeply nested (or too long an expression) for Python's parser is reported as.
TOO_DEEP = "?: 表达式嵌套太深或太长，Python 无法解析（例如上万项的加法、几千层的属性链）"
# ... and a statement Python parses but the analysis sets aside (:data:`MAX_EXPRESSION_DEPTH`).
SET_ASIDE = "?: 这一句的表达式嵌套超过 150 层（例如几百项连加），torchls 没有分析这一句"


def serialize_ast_parsing() -> None:
    """Make ``ast.parse`` safe to call from two threads at once (idempotent).

    CPython before 3.13 keeps the AST-conversion recursion counter in shared state, so two threads parsing at
    the same moment fail with ``SystemError: AST constructor recursion depth mismatch`` (CPython gh-106905).
    The server parses on the event loop while jedi calls ``ast.literal_eval`` (which uses ``ast.parse``) on its
    worker thread, so the server installs this lock around ``ast.parse`` at start-up.
    """
    if sys.version_info >= (3, 13) or getattr(ast.parse, "_torchls_locked", False):
        return
    unlocked = ast.parse

    def locked_parse(*args, **kwargs):  # type: ignore[no-untyped-def]
        with _AST_LOCK:
            return unlocked(*args, **kwargs)

    locked_parse._torchls_locked = True  # type: ignore[attr-defined]
    ast.parse = locked_parse  # type: ignore[assignment]


@dataclass(slots=True)
class ParsedSource:
    """An ``ast.Module`` plus the 0-based numbers of the lines that had to be blanked to get it."""

    tree: ast.Module
    blanked_lines: frozenset[int] = field(default_factory=frozenset)
    error: str | None = None  # the first syntax error, as Python reports it


# What a blanked assignment binds: a name nothing defines, so its value is unknown rather than the previous one.
UNKNOWN_VALUE = "__torchls_unparsed__"
_ASSIGNMENT = re.compile(
    r"^(\s*)([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\s*(?:[-+*/@%|&^]|//|\*\*)?=(?!=)"
)


def _blank(lines: list[str], index: int) -> bool:
    """Neutralise a broken line, keeping every other line's meaning and every position.

    A broken block header (``def f(:``) becomes ``if True:`` so the block under it still parses; a broken
    assignment (``x = x.to(device``) still binds its name, to an unknown value, so later lines do not see a
    stale value; any other line becomes empty.
    """
    if not 0 <= index < len(lines) or not lines[index].strip():
        return False
    line = lines[index]
    indent = line[: len(line) - len(line.lstrip())]
    stripped = line.split("#", 1)[0].rstrip()
    assignment = _ASSIGNMENT.match(line)
    if stripped.endswith(":") and stripped.strip() != "if True:":
        lines[index] = indent + "if True:"
    elif assignment and not line.strip().endswith(UNKNOWN_VALUE):
        lines[index] = f"{indent}{assignment.group(2)} = {UNKNOWN_VALUE}"
    else:
        lines[index] = ""
    return True


def _refill_emptied_block(lines: list[str], original: list[str], blanked: set[int], error: SyntaxError) -> bool:
    """After blanking the only statement of a block (``nn.init.`` typed alone under an ``if``), Python reports
    the line after the block ("expected an indented block"), which is fine. Put ``pass`` back where the blanked
    statement was instead of blanking good lines one after another. True when it did."""
    if not (isinstance(error, IndentationError) and str(error.msg).startswith("expected an indented block")):
        return False
    end = (error.lineno or 1) - 1
    header = end - 1
    while header >= 0 and not lines[header].split("#", 1)[0].rstrip().endswith(":"):
        header -= 1
    for index in sorted(blanked):
        if header < index < end and not lines[index].strip():
            source = original[index]
            lines[index] = source[: len(source) - len(source.lstrip())] + "pass"
            return True
    return False


def parse_tolerant(text: str) -> ParsedSource:
    """Parse ``text``; on syntax errors blank the offending lines and retry a bounded number of times. A
    statement nested deeper than :data:`MAX_EXPRESSION_DEPTH` is set aside the same way.

    Returns an empty module when nothing could be recovered; never raises for bad source.
    """
    error: str | None = None
    try:
        tree: ast.Module | None = ast.parse(text)
        lines, blanked = text, frozenset[int]()
    except (SyntaxError, ValueError) as first:  # ValueError: NUL bytes in the source
        error = f"{getattr(first, 'lineno', '?')}: {getattr(first, 'msg', first)}"
        tree, repaired, blanked = _repair(text)
        lines = "\n".join(repaired)
    except (RecursionError, MemoryError):  # a 100k-term sum, a.b.b.b... thousands deep: Python cannot build it
        return ParsedSource(ast.Module(body=[], type_ignores=[]), frozenset(), TOO_DEEP)
    deep = deep_statements(tree) if tree is not None else []
    if deep:
        return _set_aside(lines, deep, blanked, error)
    return ParsedSource(tree or ast.Module(body=[], type_ignores=[]), blanked, error)


# How deep one statement's expressions may nest before the statement is set aside like a broken line. The
# analysis walks expressions recursively, and a 500-term sum (500 nested ``BinOp``) exhausts Python's stack; real
# code stays far below: the deepest statement in the 2,531 files of the real corpus nests 52 deep.
MAX_EXPRESSION_DEPTH = 150


def deep_statements(tree: ast.Module) -> list[ast.stmt]:
    """The statements whose own expressions (not their nested statements') nest deeper than
    :data:`MAX_EXPRESSION_DEPTH`, in source order. Without recursion; an expression narrower than the limit on
    one line cannot be that deep (every level takes a character at least), so most are never walked."""
    found: list[ast.stmt] = []
    statements: list[ast.stmt] = list(reversed(tree.body))
    while statements:
        statement = statements.pop()
        if not isinstance(statement, _COMPOUND) and not _may_be_deep(statement):
            continue  # most statements: one short line, nothing to walk
        expressions: list[ast.AST] = []
        for child in ast.iter_child_nodes(statement):
            if isinstance(child, ast.stmt):
                statements.append(child)
            elif isinstance(child, ast.excepthandler | ast.match_case):
                statements.extend(c for c in ast.iter_child_nodes(child) if isinstance(c, ast.stmt))
                expressions.extend(c for c in ast.iter_child_nodes(child) if not isinstance(c, ast.stmt))
            else:
                expressions.append(child)
        if any(_deeper_than_limit(e) for e in expressions if _may_be_deep(e)):
            found.append(statement)
    return sorted(found, key=lambda s: s.lineno)


_COMPOUND = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While, ast.If, ast.With,
    ast.AsyncWith, ast.Try, ast.Match,
)  # fmt: skip
if sys.version_info >= (3, 11):
    _COMPOUND += (ast.TryStar,)


def _may_be_deep(node: ast.AST, budget: int = MAX_EXPRESSION_DEPTH) -> bool:
    """False when ``node`` cannot nest more than ``budget`` levels: on one line, every level takes a character."""
    lineno, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    if lineno is None or end is None or lineno != end:
        return True
    return node.end_col_offset - node.col_offset > budget  # type: ignore[attr-defined]


def _deeper_than_limit(node: ast.AST) -> bool:
    stack = [(node, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > MAX_EXPRESSION_DEPTH:
            return True
        budget = MAX_EXPRESSION_DEPTH - depth
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(current) if _may_be_deep(child, budget))
    return False


def _set_aside(text: str, deep: list[ast.stmt], blanked: frozenset[int], error: str | None) -> ParsedSource:
    """Blank the lines of ``deep`` statements (a compound statement's header only) as broken lines are blanked:
    an assignment still binds its name, to an unknown value; the rest of the file is analysed as usual."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    set_aside: set[int] = set()
    for statement in deep:
        body = getattr(statement, "body", None)
        last = body[0].lineno - 2 if isinstance(body, list) and body else (statement.end_lineno or statement.lineno) - 1
        first = statement.lineno - 1
        if _blank(lines, first):
            set_aside.add(first)
        for index in range(first + 1, last + 1):
            if lines[index].strip():
                lines[index] = ""
                set_aside.add(index)
    tree, _, repaired = _repair("\n".join(lines))
    if tree is not None and deep_statements(tree):  # what the repair left is still too deep: nothing is safe
        tree = None
    error = error or SET_ASIDE.replace("?", str(deep[0].lineno), 1)
    return ParsedSource(tree or ast.Module(body=[], type_ignores=[]), frozenset(blanked | set_aside | repaired), error)


def repair_lines(text: str) -> tuple[list[str], frozenset[int], str | None]:
    """The lines of ``text`` as :func:`parse_tolerant` parses them: broken lines neutralised, every line keeping
    its number and every kept line its columns; plus the numbers of the changed lines and the first syntax error.

    When nothing could be recovered every non-blank line counts as changed (and is emptied).
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    try:
        ast.parse(text)
        return lines, frozenset(), None
    except (SyntaxError, ValueError) as first:
        first_error = f"{getattr(first, 'lineno', '?')}: {getattr(first, 'msg', first)}"
    except (RecursionError, MemoryError):
        first_error = TOO_DEEP
    tree, repaired, blanked = _repair(text)
    if tree is None:
        blanked = frozenset(i for i, line in enumerate(lines) if line.strip())
        repaired = ["" if i in blanked else line for i, line in enumerate(lines)]
    return repaired, blanked, first_error


def _repair(text: str) -> tuple[ast.Module | None, list[str], frozenset[int]]:
    """Blank broken lines until the rest parses: (tree or None when hopeless, the lines, the blanked lines)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    original = list(lines)
    blanked: set[int] = set()
    for _ in range(_MAX_REPAIRS):
        try:
            return ast.parse("\n".join(lines)), lines, frozenset(blanked)
        except (RecursionError, MemoryError):
            return None, lines, frozenset(blanked)
        except SyntaxError as error:
            index = (error.lineno or 1) - 1
            if _refill_emptied_block(lines, original, blanked, error):
                continue
            # An unclosed bracket is reported where it opens, an indentation error on the line itself; when the
            # reported line is already blank, the culprit is the nearest non-blank line above it.
            while index >= 0 and not _blank(lines, index):
                index -= 1
            if index < 0:
                break
            blanked.add(index)
            # A block header whose body was blanked ("if x:" followed by nothing) fails next; that is handled
            # by the next round reporting the header line.
        except ValueError:
            break
    return None, lines, frozenset(blanked)
