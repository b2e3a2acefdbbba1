"""The signatures of the installed torch in one pass, read with ``ast`` from its ``.py`` and ``.pyi`` files.

In a new environment jedi takes about a minute to describe the knowledge base's ~1,000 names, most of it parso
parsing the modules they live in. Python's own parser reads the same files about ten times faster, and
:class:`torchls.kb.wheel_reader.Release` already follows torch's imports and stubs the way jedi does. This module
runs as a short child process (``python -m torchls.installed_signatures SITE_DIR`` with the names as JSON on
stdin, the answers as JSON on stdout), so neither its CPU time nor its parse trees stay in the server.

What it cannot read exactly is left out, and jedi describes it as before: values (``torch.float32``), names it
cannot follow, constructors a decorator writes (``@dataclass``), and compiled functions whose stub carries no
docstring (torch may attach one at import time, which jedi reads; torch 2.13's generated stubs carry most, so
``torch.randn`` is read here). Their stubs sit in the files jedi parsed during the warm-up, so jedi answers them
quickly.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
import sys
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path

from torchls.docinfo import SymbolDoc, parse_param_docs
from torchls.kb.wheel_reader import Release, Symbol, name_of, top_level

log = logging.getLogger(__name__)


class InstalledFiles(Mapping[str, str]):
    """The ``torch/...`` sources under one site directory, read when first asked (a release reads a few hundred
    of its thousands of files)."""

    def __init__(self, site_dir: Path) -> None:
        self._site = site_dir
        self._text: dict[str, str | None] = {}

    def _read(self, path: str) -> str | None:
        if path not in self._text:
            try:
                self._text[path] = (self._site / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                self._text[path] = None
        return self._text[path]

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._read(path) is not None

    def __getitem__(self, path: str) -> str:
        text = self._read(path)
        if text is None:
            raise KeyError(path)
        return text

    def __iter__(self) -> Iterator[str]:  # never walked by the reader; here for Mapping's contract
        return iter(path for path, text in self._text.items() if text is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def describe(release: Release, public_name: str) -> SymbolDoc | None:
    """What the sources say about ``public_name``, in jedi's shape; None where jedi should be asked instead."""
    found = release.resolve(public_name)
    if not isinstance(found, Symbol):
        return None
    short = public_name.rsplit(".", 1)[-1]
    if found.kind == "module":
        return _module_doc(release, found)
    if found.kind == "class":
        return _class_doc(release, found, short)
    if found.kind == "function":
        return _function_doc(release, found, short)
    return None  # a value: its type needs inference


def _module_doc(release: Release, module: Symbol) -> SymbolDoc | None:
    for path, _package in release.module_files(module.module):
        tree = release.tree_of(path)
        if tree is not None and not path.endswith(".pyi"):
            return SymbolDoc(name=module.module, kind="module", docstring=ast.get_docstring(tree) or "")
    return None


def _class_doc(release: Release, cls: Symbol, short: str) -> SymbolDoc | None:
    classes = [n for n in cls.nodes if isinstance(n, ast.ClassDef)]
    node = next((n for n in classes if _in_stub(n)), classes[0] if classes else None)
    if node is None:
        return None
    constructor = _constructor(release, cls.module, node, depth=0)
    if constructor is None:
        return None
    signatures = [_signature(release, short, f, drop_first=True, returns=False) for f in constructor] or [f"{short}()"]
    docstring = ast.get_docstring(node) or ""
    return _doc(f"{cls.module}.{node.name}", "class", signatures, constructor, docstring)


def _constructor(release: Release, module: str, cls: ast.ClassDef, depth: int) -> list[ast.AST] | None:
    """The ``__init__`` (else ``__new__``) definitions that calling the class runs, from the class or the first
    base that defines one; ``[]`` when none does; None where the reader cannot tell (a base it cannot follow, a
    decorator such as ``@dataclass`` that writes ``__init__``, a ``NamedTuple``)."""
    own = {"__init__": [], "__new__": []}  # type: dict[str, list[ast.AST]]
    for member in top_level(cls.body):
        if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name in own:
            own[member.name].append(member)
    if own["__init__"] or own["__new__"]:
        return _preferred(own["__init__"] or own["__new__"])
    if cls.decorator_list or depth > 20:
        return None
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in ("object", "Generic", "Protocol"):
            continue
        resolved = release.expression(module, base, set())
        if not isinstance(resolved, Symbol) or resolved.kind != "class" or not resolved.nodes:
            return None
        inner = resolved.nodes[0]
        found = _constructor(release, resolved.module, inner, depth + 1) if isinstance(inner, ast.ClassDef) else None
        if found != []:
            return found
    return []


def _function_doc(release: Release, function: Symbol, short: str) -> SymbolDoc | None:
    nodes = _preferred(function.nodes)
    if len({getattr(n, "source_path", "") for n in nodes}) > 1:
        # Two stubs that disagree (``set_num_threads(nthreads)`` in torch/_C, ``(num)`` in _VariableFunctions.pyi,
        # which torch does not export at run time): which one the name is bound to needs jedi's inference.
        return None
    docstring = next((d for d in (ast.get_docstring(n) for n in function.nodes) if d), "")  # type: ignore[arg-type]
    if not docstring and all(_in_stub(n) for n in function.nodes):
        return None  # compiled: torch may give it its docstring at import time, which jedi reads
    signatures = [_signature(release, short, f, drop_first=False, returns=True) for f in nodes]
    owner = f"{function.owner}." if function.owner else ""
    return _doc(f"{function.module}.{owner}{short}", "function", signatures, nodes, docstring)


def _doc(name: str, kind: str, signatures: list[str], nodes: list[ast.AST], docstring: str) -> SymbolDoc:
    params: list[str] = []
    for node in nodes:
        if _only_catch_alls(node, drop_first=kind == "class"):
            continue  # ``Module.__init__(self, *args, **kwargs)``: nothing a user passes (jedi lists none either)
        for index, param in enumerate(_parameters(node)):
            if kind == "class" and index == 0:
                continue  # self / cls
            if param not in params and param != "self":
                params.append(param)
    return SymbolDoc(
        name=name,
        kind=kind,
        signatures=tuple(dict.fromkeys(signatures)),
        param_names=tuple(params),
        param_docs=parse_param_docs(docstring),
        docstring=docstring,
    )


def _only_catch_alls(function: ast.AST, drop_first: bool) -> bool:
    """``(self, *args, **kwargs)``: no named parameter at all, only what it passes on."""
    args = function.args  # type: ignore[attr-defined]
    named = [*args.posonlyargs, *args.args][1 if drop_first else 0 :] + list(args.kwonlyargs)
    return not named and (args.vararg is not None or args.kwarg is not None)


def _in_stub(node: ast.AST) -> bool:
    return str(getattr(node, "source_path", "")).endswith(".pyi")


def _preferred(nodes: list[ast.AST]) -> list[ast.AST]:
    """The definitions jedi shows: the stub's over the implementation's, the ``@overload`` ones over the one
    that implements them."""
    chosen = [n for n in nodes if _in_stub(n)] or nodes
    overloads = [n for n in chosen if any(name_of(d) == "overload" for d in getattr(n, "decorator_list", []))]
    return overloads or chosen


def _parameters(function: ast.AST) -> Iterator[str]:
    args = function.args  # type: ignore[attr-defined]
    for arg in [*args.posonlyargs, *args.args]:
        yield arg.arg
    if args.vararg is not None:
        yield args.vararg.arg
    for arg in args.kwonlyargs:
        yield arg.arg
    if args.kwarg is not None:
        yield args.kwarg.arg


def _signature(release: Release, name: str, function: ast.AST, drop_first: bool, returns: bool) -> str:
    """``name(a: int, b: float=1.0, *, c=None) -> Tensor``, spelled as jedi spells signatures: annotations and
    defaults as the source writes them (``1e-6``, ``"fro"``), on one line."""
    path = getattr(function, "source_path", "")

    def text(node: ast.expr) -> str:
        segment = _source_segment(release, path, node)
        return _one_line(segment) if segment else ast.unparse(node)

    def parameter(arg: ast.arg, default: ast.expr | None) -> str:
        written = arg.arg + (f": {text(arg.annotation)}" if arg.annotation is not None else "")
        return written + (f"={text(default)}" if default is not None else "")

    args = function.args  # type: ignore[attr-defined]
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts: list[str] = []
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        if not (index == 0 and drop_first):
            parts.append(parameter(arg, default))
        if args.posonlyargs and arg is args.posonlyargs[-1] and parts:
            parts.append("/")
    if args.vararg is not None:
        parts.append("*" + parameter(args.vararg, None))
    elif args.kwonlyargs:
        parts.append("*")
    parts.extend(parameter(arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True))
    if args.kwarg is not None:
        parts.append("**" + parameter(args.kwarg, None))
    result = f" -> {text(function.returns)}" if returns and function.returns is not None else ""  # type: ignore[attr-defined]
    return f"{name}({', '.join(parts)}){result}"


# release -> path -> the file's lines, as ast counts columns (bytes); gone with the release
_LINES: weakref.WeakKeyDictionary[Release, dict[str, list[bytes]]] = weakref.WeakKeyDictionary()


def _source_segment(release: Release, path: str, node: ast.expr) -> str | None:
    """The text of ``node`` as its file writes it (``ast.get_source_segment`` splits the whole file on each call:
    minutes on torch's 1 MB stub)."""
    files = _LINES.setdefault(release, {})
    if path not in files:
        source = release.files.get(path) if path else None
        files[path] = source.encode("utf-8").splitlines(keepends=True) if source else []
    lines = files[path]
    end_line, end_col = node.end_lineno, node.end_col_offset
    if not lines or end_line is None or end_col is None or end_line > len(lines):
        return None
    if node.lineno == end_line:
        return lines[node.lineno - 1][node.col_offset : end_col].decode("utf-8", errors="replace")
    first = lines[node.lineno - 1][node.col_offset :]
    middle = lines[node.lineno : end_line - 1]
    last = lines[end_line - 1][:end_col]
    return b"".join([first, *middle, last]).decode("utf-8", errors="replace")


def _one_line(source: str) -> str:
    """A multi-line annotation on one line: ``dict[\n    int, str\n] | None`` -> ``dict[int, str] | None``."""
    joined = re.sub(r"\s*\n\s*", " ", source.strip())
    return re.sub(r"([\[(]) | ([\])])", lambda m: m.group(1) or m.group(2), joined).replace(", ]", "]")


def read(site_dir: Path, names: list[str]) -> dict[str, dict]:
    """``{name: SymbolDoc fields}`` for the names the sources describe exactly; the others are left out."""
    from dataclasses import asdict

    release = Release(InstalledFiles(site_dir))
    answers: dict[str, dict] = {}
    for name in names:
        try:
            doc = describe(release, name)
        except (RecursionError, ValueError, AttributeError, TypeError) as error:  # odd sources: jedi decides
            sys.stderr.write(f"torchls: cannot read {name}: {error}\n")
            continue
        if doc is not None:
            answers[name] = asdict(doc)
    return answers


def read_in_child(site_dir: Path, names: list[str], timeout: float = 120.0) -> dict[str, SymbolDoc]:
    """:func:`read` in a short child process of this interpreter; ``{}`` (and a log line) when it fails, so that
    jedi describes everything as before."""
    import subprocess

    import torchls

    env = dict(os.environ)
    package_root = str(Path(torchls.__file__).resolve().parent.parent)  # a bundled torchls is not on sys.path
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", "torchls.installed_signatures", str(site_dir)]
    try:
        done = subprocess.run(
            command, input=json.dumps(names), capture_output=True, text=True, encoding="utf-8", timeout=timeout, env=env
        )
        answers = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        log.warning("reading torch's signatures from %s failed: %s", site_dir, error)
        return {}
    if not isinstance(answers, dict):
        log.warning("reading torch's signatures from %s failed: %s", site_dir, done.stderr.strip()[-2000:])
        return {}
    docs: dict[str, SymbolDoc] = {}
    for name, fields in answers.items():
        try:
            docs[name] = SymbolDoc(
                **{**fields, "signatures": tuple(fields["signatures"]), "param_names": tuple(fields["param_names"])}
            )
        except (TypeError, KeyError):
            continue
    return docs


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m torchls.installed_signatures SITE_DIR < names.json\n")
        return 2
    if hasattr(os, "nice"):
        os.nice(10)  # background work: the jedi process answering the user's requests gets the CPU first
    names = json.load(sys.stdin)
    json.dump(read(Path(argv[0]), names), sys.stdout, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
