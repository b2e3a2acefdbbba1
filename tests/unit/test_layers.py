"""The dependency direction of the design notes, checked on the source: lower layers never import upper ones.

`core` is pure analysis on `ast`; `kb`, `resolve`, `settings`, `session`, `hover` never touch the LSP
libraries; nothing in the server process imports torch (start-up time, no CUDA in the editor's process).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "torchls"

FORBIDDEN = {
    "core": (
        "pygls",
        "lsprotocol",
        "jedi",
        "yaml",
        "torch",
        "torchls.kb",
        "torchls.lsp",
        "torchls.cli",
        "torchls.resolve",
        "torchls.session",
        "torchls.hover",
    ),
    "kb": (
        "pygls",
        "lsprotocol",
        "jedi",
        "torch",
        "torchls.lsp",
        "torchls.cli",
        "torchls.resolve",
        "torchls.jedi_host",
    ),
    "resolve.py": ("pygls", "lsprotocol", "torch", "torchls.lsp", "torchls.cli"),
    "jedi_host.py": ("pygls", "lsprotocol", "torch", "torchls.lsp", "torchls.cli", "torchls.kb", "torchls.session"),
    "project.py": ("pygls", "lsprotocol", "jedi", "torch", "torchls.lsp", "torchls.cli", "torchls.session"),
    "memory.py": ("pygls", "lsprotocol", "jedi", "torch", "torchls.lsp", "torchls.cli"),
    "ipynb.py": ("pygls", "lsprotocol", "jedi", "torch", "torchls.lsp", "torchls.cli", "torchls.session"),
    "settings.py": ("pygls", "lsprotocol", "torch", "torchls.lsp", "torchls.cli"),
    "session.py": ("pygls", "lsprotocol", "torch", "torchls.lsp", "torchls.cli"),
    "hover.py": ("pygls", "lsprotocol", "torch", "torchls.lsp", "torchls.cli"),
    "lsp": ("torch", "torchls.cli"),
    "cli.py": ("torch",),
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def _files(part: str) -> list[Path]:
    target = PACKAGE / part
    return sorted(target.rglob("*.py")) if target.is_dir() else [target]


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_layer_does_not_import_upward(part):
    for path in _files(part):
        for module in imported_modules(path):
            for forbidden in FORBIDDEN[part]:
                assert not (module == forbidden or module.startswith(forbidden + ".")), (
                    f"{path.relative_to(PACKAGE)} imports {module}, which `{part}` must not depend on"
                )


def test_only_lsp_imports_the_lsp_libraries():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(PACKAGE / "lsp"):
            continue
        modules = imported_modules(path)
        assert not any(m.split(".")[0] in ("pygls", "lsprotocol") for m in modules), path


def test_no_print_in_the_server_process():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ("cli.py", "demo.py", "device_line.py", "version_table.py") or "samples" in path.parts:
            continue  # the command line, the demo client and the developer tools print to the terminal by design
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print"]
        assert not calls, f"{path.relative_to(PACKAGE)}:{calls[0].lineno}: print() would corrupt JSON-RPC on stdout"
