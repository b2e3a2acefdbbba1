"""Rewrite knowledge-base examples that use ``DEVICE`` so that they define their own device and run when pasted.

Usage (from the repository root; re-running it changes nothing more)::

    python -m torchls.kb.device_line                 # every .yaml under knowledge/
    python -m torchls.kb.device_line FOLDER_OR_FILE  # a team knowledge folder, or single files
    python -m torchls.kb.device_line --check ...     # only report; exit status 1 when something would change

For each ``code: |`` block whose code uses the name ``DEVICE`` (which only the example runner used to define), it
inserts :data:`~torchls.kb.schema.DEVICE_LINE` after the example's top import block (a blank line on each side)
and renames the ``DEVICE`` name tokens, and ``DEVICE`` in comments, to ``device``; strings are left alone. In the
prose around the examples, ``DEVICE`` inside inline code (`` `model.to(DEVICE)` ``) becomes ``device``. It edits
the YAML text, not a load/dump round trip, so the rest of the file (formatting, comments) stays byte for byte.

An example it cannot convert safely is listed as a conflict and left unchanged, to fix by hand: one that already
has a name ``device`` of its own, binds ``DEVICE`` itself, uses ``DEVICE`` before its imports end, or is not valid
Python. The exit status is 1 when there are conflicts (or, with ``--check``, anything to change).
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

from torchls.kb.schema import DEVICE_LINE, OLD_DEVICE_NAME

NEW_NAME = "device"
_CODE_KEY = re.compile(r"^(?P<indent> *(?:- +)?)code: *\|[-+0-9]*(?: +#.*)?\s*$")
_OLD_WORD = re.compile(rf"\b{OLD_DEVICE_NAME}\b")
_INLINE_CODE = re.compile(r"`[^`\n]*`")


class Conflict(Exception):
    """The example cannot be converted mechanically; the message says why."""


@dataclass(frozen=True, slots=True)
class Block:
    """One ``code: |`` block scalar: its lines in the file, ``[start, end)``, and the indentation of its content."""

    start: int
    end: int
    indent: int


def code_blocks(lines: list[str]) -> list[Block]:
    """The ``code: |`` block scalars of a YAML file's lines (each line with its ending)."""
    blocks = []
    number = 0
    while number < len(lines):
        match = _CODE_KEY.match(lines[number].rstrip("\r\n"))
        number += 1
        if not match:
            continue
        key_indent = len(match.group("indent"))
        start = number
        indent = None
        end = start
        while number < len(lines):
            text = lines[number].rstrip("\r\n")
            if text.strip():
                here = len(text) - len(text.lstrip(" "))
                if here <= key_indent or (indent is not None and here < indent):
                    break
                indent = here if indent is None else indent
                end = number + 1
            number += 1
        number = end  # trailing blank lines belong to what follows
        if indent is not None:
            blocks.append(Block(start, end, indent))
    return blocks


def _binds_torch(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "torch" and (a.asname is None or a.asname == "torch") for a in node.names)
    return isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == "torch" for a in node.names)


def _imports_from_torch(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "torch" for a in node.names)
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch"


def _uses_own_device(tree: ast.Module) -> bool:
    """Whether the code has a name ``device`` of its own (a variable, parameter, import or global)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == NEW_NAME:
            return True
        if isinstance(node, ast.arg) and node.arg == NEW_NAME:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == NEW_NAME:
            return True
        if isinstance(node, ast.Global | ast.Nonlocal) and NEW_NAME in node.names:
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == NEW_NAME:
            return True
        if isinstance(node, ast.ExceptHandler) and node.name == NEW_NAME:
            return True
    return False


def convert_code(code: str) -> str:
    """``code`` with its own device line and ``device`` for ``DEVICE``; unchanged when it does not use ``DEVICE``.

    Raises :class:`Conflict` when that cannot be done mechanically."""
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        if _OLD_WORD.search(code):
            raise Conflict(f"不是合法的 Python：{error.msg}") from error
        return code
    old = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == OLD_DEVICE_NAME]
    if not old:
        return code
    if any(not isinstance(n.ctx, ast.Load) for n in old):
        raise Conflict(f"示例自己给 {OLD_DEVICE_NAME} 赋值")
    lines = code.splitlines(keepends=True)
    has_line = any(line.rstrip() == DEVICE_LINE for line in lines)
    if not has_line and _uses_own_device(tree):
        raise Conflict(f"示例已经有自己的名字 {NEW_NAME}")
    if any(isinstance(n, ast.JoinedStr) for n in ast.walk(tree)) and any(
        isinstance(n, ast.Name) and n.id == OLD_DEVICE_NAME
        for s in ast.walk(tree)
        if isinstance(s, ast.JoinedStr)
        for n in ast.walk(s)
    ):
        raise Conflict(f"f-string 里用了 {OLD_DEVICE_NAME}")

    renamed = _rename(lines)
    if has_line:
        return "".join(renamed)
    body = tree.body
    first = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
    last = first
    while last < len(body) and isinstance(body[last], ast.Import | ast.ImportFrom):
        last += 1
    imports = body[first:last]
    if not imports:
        raise Conflict("示例开头没有 import")
    after = imports[-1].end_lineno or imports[-1].lineno  # 1-based last line of the import block
    if min(n.lineno for n in old) <= after:
        raise Conflict(f"在 import 结束之前就用了 {OLD_DEVICE_NAME}")
    rest = renamed[after:]
    while rest and not rest[0].strip():
        rest = rest[1:]
    head = renamed[:after]
    if not any(_binds_torch(node) for node in imports):  # `import torch.nn as nn` alone: the device line needs torch
        at = next((n for n in imports if _imports_from_torch(n)), imports[0]).lineno - 1
        head[at:at] = ["import torch\n"]
    if head and not head[-1].endswith("\n"):
        head[-1] += "\n"
    return "".join([*head, "\n", DEVICE_LINE + "\n", *(["\n", *rest] if rest else [])])


def _rename(lines: list[str]) -> list[str]:
    """``lines`` with every NAME token ``DEVICE`` and every ``DEVICE`` in a comment renamed to ``device``."""
    edits: dict[int, list[tuple[int, int, str]]] = {}  # 0-based line: (start column, end column, new text)
    source = "".join(lines)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        row, column = token.start
        if token.type == tokenize.NAME and token.string == OLD_DEVICE_NAME:
            edits.setdefault(row - 1, []).append((column, token.end[1], NEW_NAME))
        elif token.type == tokenize.COMMENT and _OLD_WORD.search(token.string):
            edits.setdefault(row - 1, []).append((column, token.end[1], _OLD_WORD.sub(NEW_NAME, token.string)))
    out = list(lines)
    for index, changes in edits.items():
        line = out[index]
        for start, end, text in sorted(changes, reverse=True):
            line = line[:start] + text + line[end:]
        out[index] = line
    return out


@dataclass(slots=True)
class Report:
    converted: int = 0  # examples rewritten
    prose: int = 0  # lines of prose rewritten
    files: int = 0  # files rewritten
    conflicts: list[str] | None = None

    def __post_init__(self) -> None:
        self.conflicts = [] if self.conflicts is None else self.conflicts


def convert_text(text: str, shown: str, report: Report) -> str:
    """The YAML file's text with each of its examples converted; conflicts are added to ``report``."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    done = 0
    for block in code_blocks(lines):
        out += _prose(lines[done : block.start], report)
        original = lines[block.start : block.end]
        newline = "\r\n" if original[0].endswith("\r\n") else "\n"
        code = "".join(line[block.indent :].rstrip("\r\n") + "\n" if line.strip() else "\n" for line in original)
        try:
            converted = convert_code(code)
        except Conflict as conflict:
            report.conflicts.append(f"{shown}:{block.start + 1}: {conflict}")
            converted = code
        if converted == code:
            out += original
        else:
            report.converted += 1
            pad = " " * block.indent
            out += [pad + line + newline if line.strip() else newline for line in converted.splitlines()]
            if not original[-1].endswith(("\n", "\r")):  # the file's last line had no line ending
                out[-1] = out[-1].rstrip("\r\n")
        done = block.end
    out += _prose(lines[done:], report)
    return "".join(out)


def _prose(lines: list[str], report: Report) -> list[str]:
    """Lines outside examples, with ``DEVICE`` in inline code (`model.to(DEVICE)`) written ``device``."""
    out = []
    for line in lines:
        new = _INLINE_CODE.sub(lambda m: _OLD_WORD.sub(NEW_NAME, m.group()), line)
        report.prose += new != line
        out.append(new)
    return out


def _files(targets: list[Path]) -> list[Path]:
    found = []
    for target in targets:
        found += sorted(target.rglob("*.yaml")) if target.is_dir() else [target]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchls.kb.device_line", description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", type=Path, help="knowledge folders or YAML files (default: knowledge/)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when something would change")
    args = parser.parse_args(argv)
    targets = args.targets or [Path("knowledge")]
    missing = [str(t) for t in targets if not t.exists()]
    if missing:
        print(f"找不到：{'、'.join(missing)}", file=sys.stderr)
        return 2
    report = Report()
    for path in _files(targets):
        text = path.read_bytes().decode("utf-8")  # as it is: line endings too
        new = convert_text(text, str(path), report)
        if new != text:
            report.files += 1
            if not args.check:
                path.write_bytes(new.encode("utf-8"))
    for conflict in report.conflicts:
        print(f"冲突（需要手工修改）：{conflict}")
    verb = "需要改写" if args.check else "改写了"
    counts = f"{report.converted} 个示例、{report.prose} 行说明（{report.files} 个文件）"
    print(f"{verb} {counts}，{len(report.conflicts)} 个冲突", file=sys.stderr)
    return 1 if report.conflicts or (args.check and (report.converted or report.prose)) else 0


if __name__ == "__main__":
    sys.exit(main())
