"""What the editor's fast path (``core/names.py``) and the checker's interpreter each know about receivers.

For every ``receiver.member`` in the real corpus whose receiver is a name or attribute (``x.view``,
``self.fc.weight``, ``model.parameters``), this asks both engines what the receiver is and classifies the pair:

- ``agree``: both name the same torch class (a tensor, ``torch.nn.Linear``, ``torch.optim.Adam``...);
- ``fast path only`` / ``interpreter only``: one engine knows, the other does not;
- ``disagree``: both know and name different classes (the ones worth reading: listed with ``--show``).

It measures how far the interpreter is from serving hover's receivers on its own, and where names.py still
proves what the interpreter does not.

    python bench/receiver_agreement.py [CORPUS_DIR] [--show N]
"""

from __future__ import annotations

import argparse
import ast
import collections
import sys
import time
from pathlib import Path

from torchls.core import facts
from torchls.core.names import ModuleIndex
from torchls.core.parsing import parse_tolerant
from torchls.core.text import SourceText
from torchls.core.values_at import FileValues

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / ".corpus"


def interpreter_class(values: FileValues, node: ast.expr) -> str | None:
    """The torch class the interpreter's analysis gives ``node``, as hover reads it, in names.py's terms."""
    found = values.class_of(node)
    if found is None:
        return None
    qualname, user_class = found
    return user_class or facts.ATTRIBUTE_BASES.get(qualname, qualname)


def fast_path_class(index: ModuleIndex, node: ast.expr, source: SourceText) -> str | None:
    position = source.position_from_ast(node.lineno, node.col_offset)
    try:
        value = index.value_at(ast.unparse(node), position)
    except Exception:
        return "<error>"
    if value is None:
        return None
    if value.user_class is not None:
        return value.user_class
    return facts.ATTRIBUTE_BASES.get(value.qualname, value.qualname)


def compare_file(text: str, counts: collections.Counter, disagreements: list, fast_only: list | None = None) -> None:
    parsed = parse_tolerant(text)
    source = SourceText(text)
    index = ModuleIndex(parsed, source)
    values = FileValues(parsed.tree, source)
    if values.failed:
        counts["interpreter crashed (file)"] += 1
        return
    for node in ast.walk(parsed.tree):
        if not isinstance(node, ast.Attribute) or not isinstance(node.value, ast.Name | ast.Attribute):
            continue
        receiver = node.value
        if index.qualify(receiver) is not None:
            continue  # a module or a torch name (``torch.nn``): the import table answers, not inference
        mine = interpreter_class(values, receiver)
        theirs = fast_path_class(index, receiver, source)
        if mine is None and theirs is None:
            continue
        if mine is None:
            counts["fast path only"] += 1
            if fast_only is not None:
                fast_only.append((receiver.lineno, ast.unparse(node), theirs))
        elif theirs is None:
            counts["interpreter only"] += 1
        elif mine == theirs or (theirs == facts.MODULE and mine.startswith("torch.nn.")):
            counts["agree"] += 1
        else:
            counts["disagree"] += 1
            disagreements.append((receiver.lineno, ast.unparse(node), theirs, mine))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--show", type=int, default=0, help="print this many disagreements")
    parser.add_argument("--show-fast-only", type=int, default=0, help="print this many receivers only names.py knows")
    args = parser.parse_args()
    files = sorted(args.corpus.rglob("*.py"))
    if not files:
        print(f"no Python files under {args.corpus}: run ../shared/tools/real-corpus.sh first", file=sys.stderr)
        return 2
    counts: collections.Counter = collections.Counter()
    shown: list[str] = []
    fast_shown: list[str] = []
    fast_classes: collections.Counter = collections.Counter()
    started = time.perf_counter()
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "torch" not in text:
            continue
        disagreements: list = []
        fast_only: list = []
        compare_file(text, counts, disagreements, fast_only)
        fast_classes.update(c for _, _, c in fast_only)
        fast_shown += [f"{path}:{line}: `{expr}` fast path {c}" for line, expr, c in fast_only]
        shown += [f"{path}:{line}: `{expr}` fast path {a}, interpreter {b}" for line, expr, a, b in disagreements]
    total = sum(v for k, v in counts.items() if "crashed" not in k)
    print(
        f"{len(files)} files, {total} receivers that at least one engine knows ({time.perf_counter() - started:.0f} s)"
    )
    for key in ("agree", "interpreter only", "fast path only", "disagree"):
        print(f"  {key:17} {counts[key]:7}  {counts[key] / max(total, 1):6.1%}")
    if counts["interpreter crashed (file)"]:
        print(f"  interpreter crashed on {counts['interpreter crashed (file)']} files")
    for line in shown[: args.show]:
        print("   ", line)
    if args.show_fast_only:
        print("  receivers only the fast path knows, by class:", fast_classes.most_common(12))
        step = max(1, len(fast_shown) // args.show_fast_only)
        for line in fast_shown[::step][: args.show_fast_only]:
            print("   ", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
