"""Hover coverage on real code: hover every torch reference of real projects and classify each answer.

    python bench/hover_coverage.py                      # 4 files from each package of the corpus
    python bench/hover_coverage.py --files 8 --launcher script
    python bench/hover_coverage.py --misses 40          # list more of the most frequent misses

A *torch reference* is a place in the code where a user would expect torchls's card, found without asking torchls:

* ``import``: a name the file's own imports make a torch name (``torch.cat``, ``nn.Conv2d``, ``F.relu``);
* ``jedi``: an attribute (``x.view``, ``self.fc``, ``model.parameters``, ``self.fc.weight``) that jedi, given all the
  time it needs in this process, resolves to a torch definition, or infers to be an instance of a torch class other
  than a plain tensor (``self.fc`` is a ``Linear``; a tensor variable is not an API reference);
* ``name``: an attribute that jedi cannot type whose name is a ``torch.Tensor`` member that none of the builtins'
  types, ``nn.Module``, ``Optimizer`` or ``torch.Size`` has (``x.view``, ``h.masked_fill``, ``x.shape``): in a torch
  file these are tensors. In a file that imports NumPy, the names ``numpy.ndarray`` shares are left out; an
  attribute read on ``self`` (``self.device``) is the class's own, never counted.

The expected API is the knowledge base's name for it (``torch._C.TensorBase.view`` is ``torch.Tensor.view``). The
server is started as an editor starts it (``python -m torchls`` or the ``torchls`` script), every file is opened
after the warm-up has ended, and each reference is hovered right away. Each answer is one of:

* ``chinese``: a Chinese card whose title is the expected API (or another name of the same object in the installed
  torch: ``torch.distributed.nn.functional.all_gather`` is ``torch.distributed.nn.all_gather``; or a torch layer
  class where jedi knows only ``torch.nn.Module``, as after ``nn.Conv2d(...).requires_grad_(False)``);
* ``english``: torch's English documentation of the expected API (no Chinese entry);
* ``other API``: a card for another API (wrong);
* ``nothing``: no hover;
* ``error``: a JSON-RPC error answer (or no answer within 60 s).

The references found with jedi are cached per file in ``.bench-cache/`` (jedi needs minutes for the whole set).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import collections
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types

from harness import (
    ROOT,
    SERVERS,
    TorchImports,
    compile_torchls,
    percentile,
    pick_files,
    start_server,
    stop_server,
    utf16_column,
    wait_for_warm_up,
)

_ORACLE_VERSION = 13  # bump when the way references are found changes: the cached ones are then found again
_TITLE = re.compile(r"\*\*(torch[\w.]*)\*\* (·|—)")
_REQUEST_TIMEOUT_SECONDS = 60.0
OUTCOMES = ("chinese", "english", "other API", "nothing", "error")


@dataclass(frozen=True)
class Reference:
    line: int  # 0-based
    column: int  # UTF-16, at the start of the last identifier
    expected: str  # the API's public name, or several separated by "|" where any is right
    found_by: str  # import / jedi / name
    text: str  # the source around it, for the list of misses


@dataclass
class Tally:
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    by_kind: dict[str, collections.Counter] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter)
    )
    misses: collections.Counter = field(default_factory=collections.Counter)
    examples: dict[tuple[str, str], str] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    every_miss: list[dict] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------- the oracle


def _member_names() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(members of torch.Tensor that no builtin type, ``nn.Module``, ``Optimizer`` or ``torch.Size`` has; those of
    them ``numpy.ndarray`` has too; every member name of the common torch classes)."""
    import builtins

    import numpy
    import torch

    def public(kind: object) -> set[str]:
        return {name for name in dir(kind) if not name.startswith("_")}

    tensor = public(torch.Tensor)
    others = public(torch.nn.Module) | public(torch.Size) | public(torch.optim.Optimizer) | public(builtins)
    for kind in (list, dict, tuple, str, set, int, float, bytes):
        others |= public(kind)
    classes = [torch.Tensor, torch.nn.Module, torch.optim.Optimizer, torch.device, torch.dtype, torch.Size]
    classes += [getattr(torch.nn, n) for n in dir(torch.nn) if isinstance(getattr(torch.nn, n), type)]
    members: set[str] = set()
    for kind in classes:
        members |= public(kind)
        members |= set(getattr(kind, "__annotations__", {}))
    members |= {"weight", "bias", "param_groups", "type", "index", "out_proj", "running_mean", "running_var"}
    tensor_only = tensor - others
    return frozenset(tensor_only), frozenset(tensor_only & public(numpy.ndarray)), frozenset(members)


def _imports_numpy(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "numpy" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numpy":
            return True
    return False


def _imported_names(tree: ast.Module) -> set[str]:
    """Every name an import statement of the file binds."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


_DEFINITION_TYPES = ("function", "class", "module", "property")


def _self_rooted(expr: ast.expr) -> bool:
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return isinstance(expr, ast.Name) and expr.id == "self"


class Oracle:
    """Finds the torch references of a file (see the module docstring), independently of torchls's fast path."""

    def __init__(self, project_root: Path) -> None:
        import jedi

        from torchls.kb.base import KnowledgeBase

        self.kb = KnowledgeBase.load()
        self.kb.read_identity()  # the server's own climbs; without it nothing climbs
        self.tensor_only, self.also_numpy, self.members = _member_names()
        self.project = jedi.Project(project_root)
        self.jedi = jedi

    def public(self, name: str) -> str:
        return self.kb.public_name(name)

    def jedi_expected(
        self, script, where: tuple[int, int], attr: str, receiver: tuple[int, int]
    ) -> frozenset[str] | None:
        """The APIs a hover at ``where`` (1-based line, code-point column) on ``receiver.attr`` may rightly show, as
        jedi sees it: one API, or several where jedi infers several torch values (``self.head`` may be a Linear or
        an Identity, so ``torch.nn.Module`` is right too). Empty: not torch, or a plain tensor variable; None: jedi
        knows nothing there."""
        try:
            named = script.goto(*where, follow_imports=True)
            defined = {
                self.public(name.full_name)
                for name in named
                if (name.full_name or "").startswith("torch.") and name.type in _DEFINITION_TYPES
            }
            if len(defined) > 1:
                return None  # ``Tensor.to`` or ``Module.to``: typed by ``Module.__getattr__``, jedi does not know
            if defined:
                return frozenset(defined)
            if any((name.full_name or "").startswith("torch.") for name in named):
                # An attribute torch assigns (``self.weight = ...``, a stub's ``shape: Size``): users know it as a
                # member of the receiver's class (``fc.weight`` is ``Linear.weight``, ``p`` of a Dropout).
                owners = self._torch_values(script.infer(*receiver))
                if not owners:
                    owners = {self.public(c) for n in named if (c := _defining_class(n))}
                members = {
                    self.public(f"{owner}.{attr}")
                    for owner in owners
                    if _has_member(owner, attr) or self.kb.lookup(f"{owner}.{attr}") is not None
                }
                if members:
                    return frozenset(members)
            inferred = script.infer(*where)
        except Exception:
            return None
        if not named and not inferred:
            return None
        values = self._torch_values(inferred)
        if values is not None and {"torch.Tensor", "torch.nn.Module"} <= values:
            return None  # what ``Module.__getattr__`` is typed to return: jedi does not know the attribute
        if values is None or values == {"torch.Tensor"}:
            return frozenset()  # something else, or a plain tensor variable (not an API reference)
        if all(self._is_module_class(v) for v in values) and len(values) > 1:
            values.add("torch.nn.Module")
        return frozenset(values)

    @staticmethod
    def _receiver_known(script, where: tuple[int, int]) -> bool:
        """True when jedi says what the receiver is: a guess by the member's name does not apply then."""
        try:
            return any((name.full_name or "") != "builtins.NoneType" for name in script.infer(*where))
        except Exception:
            return False

    def _torch_values(self, names) -> set[str] | None:
        """The public names of the torch classes (or APIs) ``names`` are, when all of them are torch; else None."""
        real = [n for n in names if (n.full_name or "") != "builtins.NoneType"]
        if not real or not all((n.full_name or "").startswith("torch.") for n in real):
            return None
        return {self.public(n.full_name) for n in real}

    @staticmethod
    def _is_module_class(public: str) -> bool:
        import importlib

        import torch

        module, _, name = public.rpartition(".")
        try:
            kind = getattr(importlib.import_module(module), name)
        except Exception:
            return False
        return isinstance(kind, type) and issubclass(kind, torch.nn.Module)

    def references(self, path: Path, text: str) -> list[Reference]:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return []
        qualify = TorchImports(tree).qualify
        lines = text.splitlines()
        numpy_file = _imports_numpy(tree)
        other_imports = _imported_names(tree) - set(TorchImports(tree).aliases)
        receivers = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        script = None
        found: dict[tuple[int, int], Reference] = {}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute | ast.Name) or not isinstance(node.ctx, ast.Load):
                continue
            line = (node.end_lineno or node.lineno) - 1
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            end_bytes = node.end_col_offset or 0
            column = utf16_column(lines[line], end_bytes) - len(name)
            snippet = lines[line].strip()[:80]
            qualified = qualify(node)
            if qualified is not None:
                if qualified.startswith("torch.") and not (id(node) in receivers and _is_module_path(qualified)):
                    found[(line, column)] = Reference(line, column, self.public(qualified), "import", snippet)
                continue
            if not isinstance(node, ast.Attribute) or name.startswith("_"):
                continue
            if qualify(node.value) is not None and not qualify(node.value).startswith("torch"):  # type: ignore[union-attr]
                continue
            if isinstance(node.value, ast.Name) and node.value.id in other_imports:
                continue  # ``math.sqrt``, ``np.view``: a member of another module, not a torch reference
            if name not in self.members and not _self_rooted(node.value):
                continue
            if script is None:
                script = self.jedi.Script(text, path=str(path), project=self.project)
            expected = self.jedi_expected(
                script, (line + 1, _code_points(lines, line, end_bytes)), name, _end_of(node.value, lines)
            )
            if expected:
                found[(line, column)] = Reference(line, column, "|".join(sorted(expected)), "jedi", snippet)
            elif (
                expected is None
                and name in self.tensor_only
                and not (numpy_file and name in self.also_numpy)
                # ``self.device``: an attribute the user's own class sets, not a member of a tensor
                and not (isinstance(node.value, ast.Name) and node.value.id == "self")
                and not self._receiver_known(script, _end_of(node.value, lines))
            ):
                found[(line, column)] = Reference(line, column, f"torch.Tensor.{name}", "name", snippet)
        return sorted(found.values(), key=lambda r: (r.line, r.column))


def _code_points(lines: list[str], line: int, utf8_offset: int) -> int:
    return len(lines[line].encode("utf-8")[:utf8_offset].decode("utf-8", "replace"))


def _end_of(expr: ast.expr, lines: list[str]) -> tuple[int, int]:
    """Where jedi should look to infer ``expr``: its last character (1-based line, code-point column)."""
    line = (expr.end_lineno or expr.lineno) - 1
    return line + 1, _code_points(lines, line, expr.end_col_offset or 0)


def _has_member(public: str, attr: str) -> bool:
    """True when the torch class ``public`` has ``attr``: in its namespace or annotated on it or a base."""
    import importlib

    module, _, name = public.rpartition(".")
    try:
        kind = getattr(importlib.import_module(module), name)
    except Exception:
        return False
    if not isinstance(kind, type):
        return False
    return hasattr(kind, attr) or any(attr in getattr(base, "__annotations__", {}) for base in kind.__mro__)


def _defining_class(name) -> str | None:
    """The torch class whose body or method assigns the attribute jedi found (``Module.training``)."""
    scope = name.parent()
    while scope is not None and scope.type != "class":
        scope = scope.parent() if scope.type != "module" else None
    full = scope.full_name if scope is not None else None
    return full if full and full.startswith("torch.") else None


def _is_module_path(qualified: str) -> bool:
    """``torch.nn`` in ``torch.nn.Linear``: a module on the way to the name, not a reference of its own."""
    return qualified.rsplit(".", 1)[-1][:1].islower()


def oracle_references(files: list[Path], corpus: Path) -> dict[Path, list[Reference]]:
    """The references of each file, from the cache when the file, jedi and torch are unchanged."""
    import jedi
    import torch

    cache_dir = ROOT / ".bench-cache" / "hover-oracle"
    cache_dir.mkdir(parents=True, exist_ok=True)
    oracles: dict[Path, Oracle] = {}
    out: dict[Path, list[Reference]] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        key = f"{_ORACLE_VERSION}|{jedi.__version__}|{torch.__version__}|{path}|{text}"
        cached = cache_dir / (hashlib.sha1(key.encode()).hexdigest()[:20] + ".json")
        if cached.exists():
            out[path] = [Reference(**item) for item in json.loads(cached.read_text(encoding="utf-8"))]
            continue
        package_root = corpus / path.relative_to(corpus).parts[0] if path.parent != corpus else corpus
        oracle = oracles.setdefault(package_root, Oracle(package_root))
        began = time.perf_counter()
        out[path] = oracle.references(path, text)
        print(f"  references in {path.relative_to(corpus)}: {len(out[path])} ({time.perf_counter() - began:.0f} s)")
        cached.write_text(json.dumps([r.__dict__ for r in out[path]], ensure_ascii=False), encoding="utf-8")
    return out


# ------------------------------------------------------------------------------------------------- the server


def classify(hover: types.Hover | None, expected: str, same=None) -> tuple[str, str]:
    """The outcome of one hover, and the titles of the cards it showed. ``same(a, b)``: whether two names are the
    same object in the installed torch (``kb.identity``), so another spelling of the expected API is no miss."""
    if hover is None:
        return "nothing", ""
    contents = hover.contents
    text = contents.value if isinstance(contents, types.MarkupContent) else str(contents)
    titles = [(m.group(1), m.group(2)) for m in _TITLE.finditer(text)]
    shown = ", ".join(name for name, _ in titles)
    english = "暂无中文条目" in text  # the English fallback card says so, whatever its title looks like
    wanted = expected.split("|")
    for name, _mark in titles:
        if name in wanted or (same is not None and any(same(name, api) for api in wanted)):
            return ("english" if english else "chinese"), shown
    return ("other API" if titles else "nothing"), shown or text[:60].replace("\n", " ")


def _capabilities() -> types.ClientCapabilities:
    return types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown])
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )


async def hover_all(server: str, files: dict[Path, list[Reference]], workspace: Path, same=None) -> Tally:
    tally = Tally()
    client, _ = await start_server(server, _capabilities(), workspace)
    progress = client.progress  # type: ignore[attr-defined]
    warm = await wait_for_warm_up(progress, timeout=300)
    print(f"{server}: warm-up ended after {warm:.1f} s")
    for path, references in files.items():
        uri = path.as_uri()
        text = path.read_text(encoding="utf-8")
        client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text)))
        for ref in references:
            began = time.perf_counter()
            try:
                answer = await asyncio.wait_for(
                    client.text_document_hover_async(
                        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(ref.line, ref.column))
                    ),
                    _REQUEST_TIMEOUT_SECONDS,
                )
                outcome, shown = classify(answer, ref.expected, same)
            except Exception as error:  # an error answer or none in time: counted, never hidden
                outcome, shown = "error", ""
                tally.errors.append(f"{path.name}:{ref.line + 1}: {type(error).__name__}: {error}"[:300])
            tally.latencies.append((time.perf_counter() - began) * 1000)
            tally.outcomes[outcome] += 1
            tally.by_kind[ref.found_by][outcome] += 1
            if outcome != "chinese":
                tally.every_miss.append(
                    {"file": str(path), "line": ref.line + 1, "found_by": ref.found_by, "outcome": outcome}
                    | {"expected": ref.expected, "shown": shown, "text": ref.text}
                )
                miss = (outcome, ref.expected)
                tally.misses[miss] += 1
                shown = f"  [shown: {shown}]" if outcome == "other API" else ""
                tally.examples.setdefault(miss, f"{path.name}:{ref.line + 1}: {ref.text}{shown}")
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    await stop_server(client)
    return tally


def _shares(counter: collections.Counter) -> str:
    total = sum(counter.values()) or 1
    return "  ".join(f"{o} {counter[o] / total:6.1%}" for o in OUTCOMES)


def report(tally: Tally, misses: int) -> None:
    total = sum(tally.outcomes.values())
    print(f"\n{total} references hovered: {_shares(tally.outcomes)}")
    for kind in ("import", "jedi", "name"):
        counter = tally.by_kind.get(kind)
        if counter:
            print(f"  found by {kind:<7}{sum(counter.values()):>6}: {_shares(counter)}")
    values = tally.latencies
    print(
        f"hover latency: p50 {percentile(values, 50):.1f} ms, p95 {percentile(values, 95):.1f} ms, "
        f"max {max(values, default=0):.0f} ms"
    )
    if tally.misses:
        print(f"\nmost frequent misses (of {sum(tally.misses.values())}):")
        for (outcome, expected), count in tally.misses.most_common(misses):
            print(f"  {count:>4}  {outcome:<10}{expected:<45}{tally.examples[(outcome, expected)]}")
    for line in tally.errors[:10]:
        print(f"  error: {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT / ".corpus", help="output of real-corpus.sh")
    parser.add_argument("--packages", nargs="*", help="packages of the corpus (default: all)")
    parser.add_argument("--files", type=int, default=4, help="files per package, those with the most torch code")
    parser.add_argument(
        "--launcher", choices=("module", "script"), default="module", help="python -m torchls, or torchls"
    )
    parser.add_argument("--misses", type=int, default=25, help="how many of the most frequent misses to list")
    parser.add_argument("--paths", nargs="*", type=Path, help="hover these files or folders instead of the corpus")
    parser.add_argument("--dump", type=Path, help="write every miss to this JSON file")
    args = parser.parse_args()
    if args.paths:
        return run(sorted({f.resolve() for p in args.paths for f in ([p] if p.is_file() else p.rglob("*.py"))}), args)
    packages = args.packages or sorted(
        p.name for p in args.corpus.iterdir() if p.is_dir() and not p.name.startswith(".")
    )
    if not packages:
        print(f"no corpus at {args.corpus}; run: bash ../shared/tools/real-corpus.sh {args.corpus}", file=sys.stderr)
        return 2
    compile_torchls()
    files: list[Path] = []
    for package in packages:
        files += pick_files(args.corpus, package, args.files, lambda text: text.count("torch.") + text.count("nn."))
    print(f"{len(files)} files from {', '.join(packages)}; finding their torch references")
    return run(files, args)


def run(files: list[Path], args: argparse.Namespace) -> int:
    root = args.corpus.resolve() if not args.paths else Path(os.path.commonpath([f.parent for f in files]))
    references = oracle_references(files, root)
    server = "torchls" if args.launcher == "module" else "torchls-script"
    SERVERS.setdefault("torchls-script", [str(Path(sys.executable).with_name("torchls"))])
    from torchls.kb.base import KnowledgeBase

    kb = KnowledgeBase.load()
    kb.read_identity()
    identical = kb.identity.same_object if kb.identity is not None else None

    def same(shown: str, expected: str) -> bool:
        """Another name of the expected object; or, where jedi knows only ``torch.nn.Module`` (it loses the class
        through methods typed ``-> T``, ``nn.Conv2d(...).requires_grad_(False)``), a torch layer class."""
        if identical is not None and identical(shown, expected):
            return True
        return expected == "torch.nn.Module" and Oracle._is_module_class(shown)

    tally = asyncio.run(hover_all(server, references, root, same))
    report(tally, args.misses)
    if args.dump:
        args.dump.write_text(json.dumps(tally.every_miss, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
