"""How much of the torch a project (or a usage table) calls has a knowledge-base entry.

``torchls kb coverage PATH...`` counts the torch APIs each file uses, as the fast path of hover names them (import
aliases resolved, tensor methods where the receiver is known to be a tensor), and lists those without an entry,
most used first: the entries worth writing next. ``--usage FILE`` reads counts from a CSV with ``api`` and
``count`` columns instead (the shipped ``torch_api_usage.csv`` format).
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from torchls.core.names import ModuleIndex
from torchls.core.parsing import parse_tolerant
from torchls.core.text import SourceText
from torchls.kb import canonical
from torchls.kb.base import KnowledgeBase


@dataclass(frozen=True, slots=True)
class Coverage:
    """Uses counted per public API name, and which of them the knowledge base covers."""

    counts: Counter[str]
    covered: frozenset[str]
    unreadable: tuple[str, ...] = ()  # files that could not be read or decoded

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def covered_uses(self) -> int:
        return sum(count for name, count in self.counts.items() if name in self.covered)

    @property
    def share(self) -> float:
        """Covered uses over all uses; 1.0 when nothing was counted."""
        return self.covered_uses / self.total if self.total else 1.0

    def missing(self) -> list[tuple[str, int]]:
        """APIs without an entry, most used first (ties by name)."""
        return sorted(
            ((name, count) for name, count in self.counts.items() if name not in self.covered),
            key=lambda pair: (-pair[1], pair[0]),
        )


def count_file_uses(text: str) -> Counter[str]:
    """The torch APIs one file's text uses, by the name the fast path gives (not yet public names)."""
    index = ModuleIndex(parse_tolerant(text), SourceText(text))
    return Counter(name for _, name in index.torch_references())


def project_coverage(files: Iterable[Path], kb: KnowledgeBase) -> Coverage:
    counts: Counter[str] = Counter()
    unreadable = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            unreadable.append(str(path))
            continue
        counts.update(count_file_uses(text))
    return _coverage(counts, kb, tuple(unreadable))


def usage_table_coverage(path: Path, kb: KnowledgeBase) -> Coverage:
    """Coverage of a usage CSV (columns ``api`` and ``count``); raises ValueError on a table without them."""
    counts: Counter[str] = Counter()
    with path.open(encoding="utf-8", newline="") as stream:
        reader = csv.DictReader(stream)
        if not reader.fieldnames or not {"api", "count"} <= set(reader.fieldnames):
            raise ValueError(f"{path} 需要 api 和 count 两列，实际是：{', '.join(reader.fieldnames or [])}")
        for row in reader:
            try:
                counts[row["api"]] += int(row["count"])
            except (TypeError, ValueError):
                raise ValueError(f"{path} 第 {reader.line_num} 行：count 不是整数：{row['count']!r}") from None
    return _coverage(counts, kb, fold=False)  # the table names public APIs already; every row counts


def _coverage(raw: Counter[str], kb: KnowledgeBase, unreadable: tuple[str, ...] = (), fold: bool = True) -> Coverage:
    """With ``fold``, first fold the counted names onto public names (``torch.nn.modules.linear.Linear`` ->
    ``torch.nn.Linear``) and drop namespaces (``torch.nn`` used as a value is not an API to document)."""
    counts: Counter[str] = Counter()
    for name, count in raw.items():
        public = kb.public_name(name) if fold else name
        if not fold or public not in canonical.PUBLIC_NAMESPACES:
            counts[public] += count
    covered = frozenset(name for name in counts if kb.lookup(name) is not None)
    return Coverage(counts, covered, unreadable)
