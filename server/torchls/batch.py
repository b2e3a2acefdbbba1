"""``torchls check``: the editor's findings for files and folders, for CI.

Files are checked in parallel worker processes (the checker is pure Python, so processes, not threads, use the
cores). A file that cannot be read or decoded is reported and skipped; a file with a syntax error is reported as
such and its other lines are still checked, exactly as in the editor.

A Jupyter notebook (``.ipynb``) is checked as its code cells in order, one program (core/notebook.py); its
findings carry their cell, and ``--fix`` rewrites only the changed cells' sources (ipynb.py). A file that is not
a valid notebook is reported and skipped like an unreadable file.
"""

from __future__ import annotations

import ast
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from torchls.core.checker import Checker
from torchls.core.findings import Finding
from torchls.core.fixes import apply_fixes
from torchls.core.notebook import CellFinding, check_cells
from torchls.core.parsing import SET_ASIDE, deep_statements
from torchls.core.unknowns import GiveUp
from torchls.ipynb import InvalidNotebook, NotebookFile, read_notebook

SKIPPED_FOLDERS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "env",
        "__pycache__",
        "node_modules",
        ".tox",
        ".nox",
        "build",
        "dist",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "site-packages",
        ".ipynb_checkpoints",
    }
)
PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIX = ".ipynb"
_CHUNK = 16  # files per task: large enough to amortise the inter-process traffic, small enough to balance


log = logging.getLogger(__name__)


@dataclass(slots=True)
class NotebookPlaces:
    """Where a notebook's findings lie: in their cells, and in the file's text (for SARIF)."""

    findings: list[CellFinding]  # parallel to the report's findings
    # (cell, line, column) in a cell -> (line, column) in the file's text, for every place a finding names
    file_positions: dict[tuple[int, int, int], tuple[int, int]] = field(default_factory=dict)


@dataclass(slots=True)
class FileReport:
    path: str
    findings: list[Finding] = field(default_factory=list)  # in a notebook: in the program of its code cells
    syntax_error: str | None = None  # "LINE: message"; in a notebook "cell N:LINE: message"
    read_error: str | None = None
    fixed: int = 0
    lines: int = 0
    notebook: NotebookPlaces | None = None


def discover(
    paths: Sequence[str], suffixes: tuple[str, ...] = (*PYTHON_SUFFIXES, NOTEBOOK_SUFFIX)
) -> tuple[list[Path], list[str]]:
    """The files under ``paths`` whose names end with ``suffixes`` (Python files and notebooks by default; sorted,
    no virtualenvs, caches or notebook checkpoints), and the paths that do not exist. A file named directly is
    always taken."""
    files: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            for directory, folders, names in os.walk(path):
                folders[:] = sorted(f for f in folders if f not in SKIPPED_FOLDERS and not f.endswith(".egg-info"))
                files.extend(Path(directory) / name for name in sorted(names) if name.endswith(suffixes))
        else:
            missing.append(raw)
    return list(dict.fromkeys(files)), missing


def check_file(path: Path, checker: Checker, fix: bool) -> FileReport:
    report = FileReport(str(path))
    try:
        raw = path.read_bytes()
    except OSError as error:
        report.read_error = f"无法读取：{error.strerror or error}"
        return report
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        report.read_error = f"不是 UTF-8 编码（第 {line} 行附近），已跳过"
        return report
    try:
        if path.suffix == NOTEBOOK_SUFFIX:
            return _check_notebook(report, path, text, checker, fix)
        return _check_python(report, path, text, checker, fix)
    except Exception as error:  # a bug of torchls, not of the file: say so once, exit 2, check the other files
        log.info("checking %s failed", path, exc_info=True)  # the traceback with -v; never by default
        report.findings, report.fixed = [], 0
        report.read_error = f"torchls 检查这个文件时内部出错（{type(error).__name__}: {error}），已跳过；请报告这个问题"
        return report


def _check_python(report: FileReport, path: Path, text: str, checker: Checker, fix: bool) -> FileReport:
    report.lines = text.count("\n") + 1
    result = checker.check(text)
    report.findings, report.syntax_error = result.findings, result.syntax_error
    if fix and result.syntax_error is None:
        fixes = [f.fix for f in result.findings if f.fix is not None]
        if fixes:
            new_text, applied = apply_fixes(text, fixes)
            if applied and new_text != text:
                if not _write(path, new_text, report):
                    return report
                report.fixed = applied
                report.findings = checker.check(new_text).findings
    return report


def _write(path: Path, text: str, report: FileReport) -> bool:
    try:
        path.write_bytes(text.encode("utf-8"))
    except OSError as error:
        report.read_error = f"无法写回修复：{error.strerror or error}"
        return False
    return True


def _check_notebook(report: FileReport, path: Path, text: str, checker: Checker, fix: bool) -> FileReport:
    try:
        notebook = read_notebook(text)
    except InvalidNotebook as error:
        report.read_error = f"不是有效的 Jupyter 笔记本：{error}"
        return report
    if not notebook.is_python:  # an R or Julia notebook: nothing here is Python
        return report
    result = check_cells(notebook.cells, checker)
    if fix and not result.syntax_errors:
        sources, applied = result.program.fixed_sources(result.findings)
        if sources:
            new_text = notebook.with_sources(sources)
            if not _write(path, new_text, report):
                return report
            report.fixed = applied
            notebook = read_notebook(new_text)
            result = check_cells(notebook.cells, checker)
    report.lines = result.program.text.count("\n") + 1
    report.findings = [located.finding for located in result.findings]
    report.notebook = NotebookPlaces(result.findings, _file_positions(notebook, result.findings))
    if result.syntax_errors:
        first = result.syntax_errors[0]
        report.syntax_error = f"cell {first.cell + 1}:{first.line + 1}: {first.message}"
    return report


def _file_positions(notebook: NotebookFile, findings: list[CellFinding]) -> dict[tuple[int, int, int], tuple[int, int]]:
    places = [f.where for f in findings] + [r.where for f in findings for r in f.related]
    positions = {}
    for place in places:
        for position in (place.span.start, place.span.end):
            at = notebook.file_position(place.cell, position)
            positions[(place.cell, position.line, position.column)] = (at.line, at.column)
    return positions


def _check_chunk(paths: list[str], select: Sequence[str], ignore: Sequence[str], fix: bool) -> list[FileReport]:
    checker = Checker(select, ignore)
    return [check_file(Path(p), checker, fix) for p in paths]


def run(
    files: Sequence[Path], select: Sequence[str] = (), ignore: Sequence[str] = (), fix: bool = False, jobs: int = 0
) -> Iterator[FileReport]:
    """Check ``files`` on ``jobs`` processes (0: one per core), yielding reports in file order."""
    jobs = jobs or os.cpu_count() or 1
    chunks = [[str(p) for p in files[i : i + _CHUNK]] for i in range(0, len(files), _CHUNK)]
    if jobs == 1 or len(chunks) <= 1:
        for chunk in chunks:
            yield from _check_chunk(chunk, select, ignore, fix)
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(chunks))) as pool:
        futures = [pool.submit(_check_chunk, chunk, select, ignore, fix) for chunk in chunks]
        for future in futures:
            yield from future.result()


def split_codes(values: Iterable[str] | None) -> list[str]:
    """``--select TL1,TL301 --select TL4`` -> ``["TL1", "TL301", "TL4"]``."""
    codes = []
    for value in values or ():
        codes.extend(code.strip().upper() for code in value.split(",") if code.strip())
    return codes


def explain_file(path: Path) -> tuple[list[GiveUp], str | None]:
    """Where the analysis gives up in a Python file (``torchls check --explain-unknown``), or why it could not
    look."""
    from torchls.core.text import SourceText
    from torchls.core.unknowns import explain_unknown

    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        return [], f"无法读取：{error.strerror or error}"
    except UnicodeDecodeError:
        return [], "不是 UTF-8 编码，已跳过"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        return [], f"无法解析：{error}"
    deep = deep_statements(tree)
    if deep:
        return [], SET_ASIDE.replace("?", f"第 {deep[0].lineno} 行", 1).replace(": ", "：", 1)
    give_ups, failed = explain_unknown(tree, SourceText(text))
    return give_ups, ("分析在这个文件上中途停止了，没有结果" if failed else None)
