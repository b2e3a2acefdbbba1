"""Execution oracle for the analysis: what it claims about each tensor a name holds, against a real run.

    python bench/exec_oracle.py                    # the realistic pitfall programs (tests/fixtures/pitfalls)
    python bench/exec_oracle.py --paths A.py DIR   # other programs
    python bench/exec_oracle.py --kb               # the knowledge base's examples (CPU ones)
    python bench/exec_oracle.py --failed           # also list the runs that stopped early, and why

It exits 1 when any claim is contradicted (tests/rules/test_exec_oracle.py runs it in CI).

For every name a program reads or binds (outside comprehensions and lambdas) the analysis (core/values_at.py, the
one hover and the rules use) may claim a shape, trailing dims, dtype, device, ``requires_grad``, ``is_leaf`` or
contiguity. Each program then runs under real torch on the CPU in a forked child with a line tracer that records what
each such name actually holds, every time its line runs: a name read at the line's start, a name bound once its
statement is done. Each claim is then *agrees* (seen, and every run matches), *contradicts* (some run refutes a fact)
or *unknown* (its line never ran, or never held a tensor). A contradiction is a soundness bug of the analysis.
Coverage: of the places that held a tensor at run time, how many the analysis gave a full shape, a dtype, a device.

A device the code chooses at run time (``"cuda" if torch.cuda.is_available() else "cpu"``) is claimed as "the
accelerator": on a machine without one it is not checked. A ``cuda`` claim is checked only where CUDA ran.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from torchls.core.parsing import parse_tolerant
from torchls.core.text import SourceText
from torchls.core.values import ACCELERATOR, TensorValue
from torchls.core.values_at import FileValues

ROOT = Path(__file__).resolve().parent.parent
PITFALLS = ROOT / "tests" / "fixtures" / "pitfalls"
RUN_SECONDS = 60
_KEPT_OBSERVATIONS = 40  # distinct run-time values kept per place: enough to refute a claim made for every run
_NESTED_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)


@dataclass(frozen=True, slots=True)
class Place:
    """One occurrence of a name: where the tracer reads it, and in which function's frame."""

    name: str
    line: int  # 1-based, the line of the occurrence
    first: int  # its statement's lines: a bound name is read once the frame leaves them
    last: int
    stored: bool
    scope_line: int  # co_firstlineno of the frame that runs it; 0 for the module
    # A loop's target: read in the loop's body. The header runs once more when the loop ends, binding nothing, and
    # what the name holds then is what the body last made of it.
    body: tuple[int, int] | None = None


@dataclass(slots=True)
class ProgramResult:
    path: Path
    places: list[Place]
    claims: dict[int, TensorValue]  # place index -> what the analysis claims
    seen: dict[int, list[tuple]] = field(default_factory=dict)  # place index -> distinct run-time values
    failure: str | None = None  # the run did not finish (a buggy program may fail by design: what ran still counts)


# ------------------------------------------------------------------------------------------ what is claimed


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _scope_line(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> int | None:
    """The frame a name runs in, as its code object's first line; None inside a comprehension or lambda."""
    child, node = node, parents.get(node)
    while node is not None:
        if isinstance(node, _NESTED_SCOPES):
            return None
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if child in node.body:
                return min([node.lineno] + [d.lineno for d in node.decorator_list])
            return _scope_line(node, parents)  # a default, an annotation or a decorator: the outer frame runs it
        if isinstance(node, ast.ClassDef) and child in node.body:
            return None  # a class body: its own frame, rarely a tensor
        if isinstance(node, ast.Module):
            return 0
        child, node = node, parents.get(node)
    return None


def _statement_lines(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> tuple[int, int] | None:
    """The lines the frame runs for the statement holding ``node``: a compound statement's header only."""
    node = parents.get(node)
    while node is not None and not isinstance(node, ast.stmt):
        node = parents.get(node)
    if node is None:
        return None
    if isinstance(node, ast.For | ast.AsyncFor | ast.While | ast.If | ast.With | ast.AsyncWith):
        header = node.body[0].lineno - 1 if node.body else node.lineno
        return node.lineno, max(node.lineno, header)
    if isinstance(node, ast.Try | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.lineno, node.lineno
    return node.lineno, node.end_lineno or node.lineno


def claims_of(text: str) -> tuple[list[Place], dict[int, TensorValue]]:
    """Every name occurrence the tracer can read, and what the analysis claims about those that are tensors."""
    parsed = parse_tolerant(text)
    if parsed.error is not None:
        return [], {}  # a program that does not parse does not run either
    tree = parsed.tree
    values = FileValues(tree, SourceText(text))
    parents = _parents(tree)
    claimed = {id(node): value for node, value in values.items() if isinstance(value, TensorValue)}
    places: list[Place] = []
    claims: dict[int, TensorValue] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name) or isinstance(node.ctx, ast.Del):
            continue
        scope = _scope_line(node, parents)
        lines = _statement_lines(node, parents)
        if scope is None or lines is None:
            continue
        if isinstance(node.ctx, ast.Load) and _bound_in_statement(node, parents):
            continue  # ``x = (y := f(x))``: read after a binding on the same line; which value is ambiguous
        places.append(
            Place(node.id, node.lineno, *lines, isinstance(node.ctx, ast.Store), scope, _loop_body(node, parents))
        )
        if id(node) in claimed:
            claims[len(places) - 1] = claimed[id(node)]
    return places, claims


def _loop_body(name: ast.Name, parents: dict[ast.AST, ast.AST]) -> tuple[int, int] | None:
    """The lines of the body of the ``for`` loop whose target binds ``name``; None for any other name."""
    node: ast.AST | None = name
    while node is not None and not isinstance(node, ast.stmt):
        child, node = node, parents.get(node)
        if isinstance(node, ast.For | ast.AsyncFor) and child is node.target and node.body:
            return node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
    return None


def _bound_in_statement(name: ast.Name, parents: dict[ast.AST, ast.AST]) -> bool:
    node = name
    while node is not None and not isinstance(node, ast.stmt):
        node = parents.get(node)
    return node is not None and any(
        isinstance(other, ast.NamedExpr) and isinstance(other.target, ast.Name) and other.target.id == name.id
        for other in ast.walk(node)
    )


# ------------------------------------------------------------------------------------------ what runs


def _observe(value: object) -> tuple:
    import torch

    if isinstance(value, torch.Tensor):
        try:
            return (
                "tensor",
                tuple(value.shape),
                str(value.dtype),
                value.device.type,
                value.requires_grad,
                value.is_leaf,
                value.is_contiguous(),
            )
        except Exception:  # a tensor subclass or a functorch wrapper that refuses a query
            return ("tensor?",)
    return ("other", type(value).__name__)


def _trace_program(path: Path, places: list[Place]) -> tuple[dict[int, list[tuple]], str | None]:
    """Run ``path`` in this process with a line tracer; what each place held, and why the run stopped early."""
    filename = str(path)
    reads: dict[tuple[int, int], list[int]] = collections.defaultdict(list)  # (scope, line) -> places read there
    binds: dict[tuple[int, int], list[int]] = collections.defaultdict(list)  # (scope, first line) -> bound there
    for index, place in enumerate(places):
        (binds[(place.scope_line, place.first)] if place.stored else reads[(place.scope_line, place.line)]).append(
            index
        )
    seen: dict[int, set[tuple]] = collections.defaultdict(set)

    def record(index: int, frame) -> None:
        found = seen[index]
        if len(found) < _KEPT_OBSERVATIONS:
            name = places[index].name
            local = frame.f_locals
            if name in local:
                found.add(_observe(local[name]))
            elif name in frame.f_globals:
                found.add(_observe(frame.f_globals[name]))

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != filename:
            return None
        scope = 0 if frame.f_code.co_name == "<module>" else frame.f_code.co_firstlineno
        pending: list[int] = []

        def local(frame, event, arg):
            line = frame.f_lineno
            if event == "line":
                still = []
                for index in pending:
                    place = places[index]
                    if place.first <= line <= place.last:
                        still.append(index)
                    elif place.body is None or place.body[0] <= line <= place.body[1]:
                        record(index, frame)
                pending[:] = still
                for index in reads.get((scope, line), ()):
                    record(index, frame)
                for index in binds.get((scope, line), ()):
                    if index not in pending:
                        pending.append(index)
            elif event == "exception":
                pending[:] = [i for i in pending if not places[i].first <= line <= places[i].last]
            elif event == "return":
                for index in pending:
                    if places[index].body is None:
                        record(index, frame)
                pending.clear()
            return local

        return local

    import runpy

    failure = None
    sys.settrace(tracer)
    try:
        runpy.run_path(filename, run_name="__main__")
    except BaseException as error:  # a buggy program fails by design; what ran before still counts
        failure = f"{type(error).__name__}: {str(error).splitlines()[0][:160] if str(error) else ''}"
    finally:
        sys.settrace(None)
    return {index: sorted(found, key=repr) for index, found in seen.items()}, failure


class OutOfTime(Exception):
    """The program ran past its time: what it ran until then still counts."""


def _out_of_time(signum, frame) -> None:
    raise OutOfTime


def start_child(path: Path, places: list[Place], answer: Path, seconds: float = RUN_SECONDS) -> int:
    """Fork a child that runs :func:`_trace_program` and writes what it saw to ``answer``; its pid. Each program
    gets torch's state fresh and a time limit, past which it stops where it is (what ran until then counts)."""
    pid = os.fork()
    if pid != 0:
        return pid
    status = 0  # the child: run, write what it saw, exit without running the parent's cleanup
    try:
        import torch

        torch.set_num_threads(1)  # small tensors: one thread is faster, and children run side by side
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.chdir(path.parent)
        sys.argv = [str(path)]
        signal.signal(signal.SIGALRM, _out_of_time)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        seen, failure = _trace_program(path, places)
        signal.setitimer(signal.ITIMER_REAL, 0)
        answer.write_text(json.dumps({"seen": seen, "failure": failure}), encoding="utf-8")
    except BaseException:
        status = 1
    finally:
        os._exit(status)


def child_answer(answer: Path, status: int) -> tuple[dict[int, list[tuple]], str | None]:
    if not answer.exists():
        return {}, f"the run ended without an answer (wait status {status}: a crash)"
    data = json.loads(answer.read_text(encoding="utf-8"))
    seen = {int(k): [tuple(_untuple(v)) for v in values] for k, values in data["seen"].items()}
    return seen, data["failure"]


def check_programs(files: list[Path], scratch: Path, seconds: float, jobs: int, done=None) -> list[ProgramResult]:
    """Every program's claims and run, ``jobs`` children at a time; ``done(result)`` as each one finishes."""
    waiting = list(files)
    running: dict[int, tuple[ProgramResult, Path]] = {}
    results: list[ProgramResult] = []
    while waiting or running:
        while waiting and len(running) < jobs:
            path = waiting.pop(0).resolve()
            places, claims = claims_of(path.read_text(encoding="utf-8"))
            answer = scratch / f"answer-{len(results) + len(running)}-{path.stem}.json"
            running[start_child(path, places, answer, seconds)] = (ProgramResult(path, places, claims), answer)
        pid, status = os.wait()
        if pid not in running:
            continue
        result, answer = running.pop(pid)
        result.seen, result.failure = child_answer(answer, status)
        results.append(result)
        if done is not None:
            done(result)
    return sorted(results, key=lambda r: str(r.path))


def _untuple(observation: list) -> tuple:
    return tuple(tuple(x) if isinstance(x, list) else x for x in observation)


# ------------------------------------------------------------------------------------------ the verdicts


def contradiction(claim: TensorValue, observed: tuple) -> str | None:
    """Why the run refutes the claim, or None. Facts the run cannot show (an accelerator on a CPU) are skipped."""
    if observed[0] == "other":
        return None if observed[1] == "NoneType" else f"a {observed[1]}, not a tensor"
    if observed[0] != "tensor":
        return None
    _, shape, dtype, device, requires_grad, is_leaf, contiguous = observed
    if claim.shape is not None and not _dims_agree(claim.shape, shape):
        return f"shape {_dims(claim.shape)}, ran {_dims(shape)}"
    tail = shape[max(0, len(shape) - len(claim.tail or ())) :]
    if claim.shape is None and claim.tail and not _dims_agree(claim.tail, tail):
        return f"trailing dims {_dims(claim.tail)}, ran {_dims(shape)}"
    if claim.dtype is not None and claim.dtype != dtype:
        return f"dtype {claim.dtype}, ran {dtype}"
    if claim.device is not None and claim.device != ACCELERATOR:
        claimed = claim.device.split(":")[0]
        if claimed != device and not (claimed == "cuda" and device != "cuda"):  # no CUDA here: not checked
            return f"device {claim.device}, ran {device}"
    if claim.requires_grad is not None and claim.requires_grad != requires_grad:
        return f"requires_grad {claim.requires_grad}, ran {requires_grad}"
    if claim.is_leaf is not None and claim.is_leaf != is_leaf:
        return f"is_leaf {claim.is_leaf}, ran {is_leaf}"
    if claim.contiguous is not None and claim.contiguous != contiguous:
        return f"contiguous {claim.contiguous}, ran {contiguous}"
    return None


def _dims_agree(claimed: tuple, ran: tuple) -> bool:
    return len(claimed) == len(ran) and all(c is None or c == r for c, r in zip(claimed, ran, strict=True))


def _dims(dims) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


@dataclass
class Tally:
    claims: int = 0
    agree: int = 0
    contradict: int = 0
    unknown: int = 0
    tensor_places: int = 0  # places that held a tensor at run time
    with_shape: int = 0  # ... of which the analysis claimed a full shape
    with_dtype: int = 0
    with_device: int = 0
    failed_runs: list[str] = field(default_factory=list)
    contradictions: list[str] = field(default_factory=list)

    def add(self, result: ProgramResult, root: Path) -> None:
        where = result.path.relative_to(root) if result.path.is_relative_to(root) else result.path
        if result.failure:
            self.failed_runs.append(f"{where}: {result.failure}")
        for index, place in enumerate(result.places):
            observed = result.seen.get(index, [])
            tensors = [o for o in observed if o[0] == "tensor"]
            claim = result.claims.get(index)
            if tensors:
                self.tensor_places += 1
                if claim is not None:
                    self.with_shape += claim.shape is not None and None not in claim.shape
                    self.with_dtype += claim.dtype is not None
                    self.with_device += claim.device is not None
            if claim is None:
                continue
            self.claims += 1
            reasons = {r for o in observed if (r := contradiction(claim, o))}
            if reasons:
                self.contradict += 1
                self.contradictions.append(f"{where}:{place.line}: {place.name}: {'; '.join(sorted(reasons))}")
            elif tensors:
                self.agree += 1
            else:
                self.unknown += 1


def kb_example_files(directory: Path) -> list[Path]:
    """The knowledge base's CPU examples, each written to a file as a user would paste it."""
    from torchls.kb.base import KnowledgeBase

    files = []
    kb = KnowledgeBase.load(use_cache=False)
    for name in sorted(kb.entries):
        entry = kb.get(name)
        for number, example in enumerate(entry.examples if entry is not None else ()):
            if example.device not in ("any", "cpu"):
                continue  # needs a GPU this machine may not have
            target = directory / f"{name}.{number}.py"
            target.write_text(example.code, encoding="utf-8")
            files.append(target)
    return files


def report(tally: Tally, programs: int) -> None:
    decided = tally.agree + tally.contradict
    print(f"{programs} programs; {tally.claims} claims about tensors")
    print(
        f"  agree {tally.agree}, contradict {tally.contradict}, unknown {tally.unknown}"
        f" (agreement {tally.agree / decided:.1%} of the claims a run decided)"
        if decided
        else "  no claim was decided by a run"
    )
    if tally.tensor_places:
        share = 100 / tally.tensor_places
        print(
            f"coverage: {tally.tensor_places} places held a tensor at run time; the analysis knew the full shape of"
            f" {tally.with_shape * share:.1f}%, the dtype of {tally.with_dtype * share:.1f}%,"
            f" the device of {tally.with_device * share:.1f}%"
        )
    print(f"runs that stopped early: {len(tally.failed_runs)} (buggy programs fail by design)")
    for line in tally.contradictions:
        print("  CONTRADICTS", line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", nargs="*", type=Path, help="programs or folders (default: the pitfall corpus)")
    parser.add_argument("--kb", action="store_true", help="the knowledge base's CPU examples instead")
    parser.add_argument("--failed", action="store_true", help="list the runs that stopped early")
    parser.add_argument("--seconds", type=float, default=RUN_SECONDS, help="time limit per program (what ran counts)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="programs run side by side")
    parser.add_argument("--progress", action="store_true", help="print each program's time as it finishes")
    parser.add_argument("--shard", help="K/N: only every N-th program, starting at the K-th (0-based): for the tests")
    args = parser.parse_args(argv)
    import torch  # noqa: F401  (imported once here: every forked child shares it)

    with tempfile.TemporaryDirectory() as scratch:
        if args.kb:
            root = Path(scratch)
            files = kb_example_files(root)
        else:
            root = PITFALLS if not args.paths else Path(os.path.commonpath([p.resolve() for p in args.paths]))
            sources = args.paths or [PITFALLS]
            files = sorted({f.resolve() for p in sources for f in ([p] if p.is_file() else p.rglob("*.py"))})
        if args.shard:
            index, count = (int(part) for part in args.shard.split("/"))
            files = files[index::count]
        started = time.perf_counter()

        def progress(result: ProgramResult) -> None:
            if args.progress:
                print(f"{time.perf_counter() - started:6.1f} s  {result.path}", file=sys.stderr, flush=True)

        tally = Tally()
        for result in check_programs(files, Path(scratch), args.seconds, args.jobs, progress):
            tally.add(result, root.resolve())
    report(tally, len(files))
    if args.failed:
        for line in tally.failed_runs:
            print("  stopped:", line)
    return 1 if tally.contradict else 0


if __name__ == "__main__":
    raise SystemExit(main())
