"""Parse once, walk once, dispatch to the selected rules, apply suppressions, sort.

``check_source`` is what the editor and ``torchls check`` both call, so they always agree.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from torchls.core.findings import Finding
from torchls.core.imports import file_imports
from torchls.core.interpreter import Interpreter
from torchls.core.noqa import suppressed_codes
from torchls.core.parsing import TOO_DEEP, parse_tolerant
from torchls.core.receivers import ClassOf, NodeKey, file_values, receiver_table
from torchls.core.rules import ALL_RULES, WALK_ANALYSES
from torchls.core.rules.base import Context, Rule, WalkAnalysis
from torchls.core.text import SourceText


@dataclass(frozen=True, slots=True)
class CheckResult:
    findings: list[Finding]
    syntax_error: str | None = None  # the first syntax error; lines that parse were still checked
    # With ``check(text, receivers=True)``: the classes the analysis proves, by node place (core/receivers.py).
    receivers: dict[NodeKey, ClassOf] | None = None


def _matches(code: str, prefixes: Iterable[str]) -> int:
    """The length of the longest prefix in ``prefixes`` that ``code`` starts with (0: none)."""
    return max((len(p) for p in prefixes if code.startswith(p)), default=0)


def select_rules(select: Sequence[str] = (), ignore: Sequence[str] = ()) -> list[type[Rule]]:
    """Rules enabled by code prefixes; the more specific of a matching select and ignore entry wins."""
    chosen = []
    for rule in ALL_RULES:
        selected = _matches(rule.code, select) if select else 0.5  # no select: everything, below any ignore
        if selected > _matches(rule.code, ignore):
            chosen.append(rule)
    return chosen


class Checker:
    """A reusable checker for one selection of rules."""

    def __init__(self, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> None:
        self.rule_classes = select_rules(select, ignore)

    def check(self, text: str, receivers: bool = False) -> CheckResult:
        """The findings in ``text``; ``receivers``: also the classes the analysis proves (for the editor)."""
        if "torch" not in text:  # every rule is about torch: files that never mention it cost nothing
            parsed_error = _syntax_error(text)
            return CheckResult([], parsed_error)
        parsed = parse_tolerant(text)
        source = SourceText(text)
        ctx = Context(source, file_imports(parsed.tree))
        rules = [
            cls()
            for cls in self.rule_classes
            if not cls.requires_text or any(word in text for word in cls.requires_text)
        ]
        # The walk analyses visit each node first: a rule there sees what they recorded up to and including it.
        recorders = [ctx.analysis(kind) for kind in WALK_ANALYSES]
        dispatch: dict[type[ast.AST], list[Rule | WalkAnalysis]] = {}
        for visitor in [*recorders, *rules]:
            for node_type in visitor.node_types:
                dispatch.setdefault(node_type, []).append(visitor)
        interpreter = Interpreter(ctx, dispatch)
        if receivers:
            interpreter.call_values = {}  # what the calls agree on, for hover (core/receivers.file_values)
        interpreter.run(parsed.tree)
        for rule in rules:
            ctx._current = rule
            rule.finish(ctx)
        findings = []
        seen = set()
        for finding in sorted(ctx.findings, key=lambda f: f.sort_key):
            key = (finding.code, finding.span)
            if key in seen or finding.span.start.line in parsed.blanked_lines:
                continue
            seen.add(key)
            codes = suppressed_codes(source.line(finding.span.start.line))
            if codes is not None and ("" in codes or any(finding.code.startswith(c) for c in codes)):
                continue
            findings.append(finding)
        table = receiver_table(file_values(interpreter.joined_values, interpreter.call_values)) if receivers else None
        return CheckResult(findings, parsed.error, table)


def check_source(text: str, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> CheckResult:
    return Checker(select, ignore).check(text)


def _syntax_error(text: str) -> str | None:
    try:
        ast.parse(text)
    except SyntaxError as error:
        return f"{error.lineno}: {error.msg}"
    except ValueError as error:
        return str(error)
    except (RecursionError, MemoryError):
        return TOO_DEEP
    return None
