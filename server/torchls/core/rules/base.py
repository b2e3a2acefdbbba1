"""The base class of every rule, and the context a rule sees while the checker walks a file.

A rule is one class in one module. Its docstring is its documentation (what it checks, why it is a problem,
an example, the corrected example, whether its fix is safe); ``torchls rules`` and the README's rule table are
generated from it. A rule declares the node types it wants; the checker calls :meth:`Rule.visit` after it has
evaluated each such node, so :meth:`Context.value` already knows the values of its sub-expressions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from torchls.core.control_flow import ancestors, parent_table
from torchls.core.findings import Edit, Finding, Fix, Related, Severity
from torchls.core.text import Position, SourceText, Span
from torchls.core.values import InstanceValue, ModuleValue, OfClass, Origin, TensorValue, Value

if TYPE_CHECKING:
    from torchls.core.imports import FileImports
    from torchls.core.interpreter import ClassInfo

A = TypeVar("A", bound="Analysis")


class Rule:
    """Subclass, set the class attributes, implement :meth:`visit` (and maybe :meth:`finish`)."""

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, names the bad pattern: softmax-before-cross-entropy
    severity: ClassVar[Severity] = Severity.WARNING
    kb_entry: ClassVar[str | None] = None  # the knowledge-base card whose pitfall this rule enforces
    node_types: ClassVar[tuple[type[ast.AST], ...]] = ()
    fixable: ClassVar[bool] = False
    # Words the file must contain (any one of them) for this rule to possibly report: a file without them skips
    # the rule entirely. Keeps the checker fast on library code that never trains, loads or moves anything.
    requires_text: ClassVar[tuple[str, ...]] = ()
    # The bad pattern raises an exception at run time (rather than silently computing something wrong): inside a
    # `try` that catches it, the author expects the error, so the rule stays silent there.
    raises: ClassVar[bool] = False

    def visit(self, node: Any, ctx: Context) -> None:
        """Called once per node of :attr:`node_types`, after its sub-expressions were evaluated. A fresh instance
        checks each file, so what a rule keeps on ``self`` between :meth:`visit` and :meth:`finish` is that file's."""

    def finish(self, ctx: Context) -> None:
        """Called once after the whole file was walked, for rules that need to see all of it."""

    @classmethod
    def summary(cls) -> str:
        """The first line of the docstring: what the rule reports, in one Chinese sentence."""
        return (cls.__doc__ or "").strip().splitlines()[0]


class Analysis:
    """A fact about one file that rules share: ``ctx.analysis(Kind)`` computes it on first use, once per file.

    Subclass (usually as a dataclass) next to the logic that owns the fact and implement :meth:`compute`; a memo
    filled on demand (every field has a default) needs none. What it says must not depend on which rules run.
    """

    __slots__ = ()

    @classmethod
    def compute(cls: type[A], ctx: Context) -> A:
        return cls()


class WalkAnalysis(Analysis):
    """An analysis recorded during the interpreter's walk, because what it reads (the values at a node, the
    function being evaluated) is only known then. The checker runs each one in ``rules.WALK_ANALYSES`` at its
    :attr:`node_types` before the rules do, whichever rules are selected."""

    __slots__ = ()
    node_types: ClassVar[tuple[type[ast.AST], ...]] = ()

    def visit(self, node: Any, ctx: Context) -> None:
        """Called once per node of :attr:`node_types`, as :meth:`Rule.visit` is."""

    @property
    def code(self) -> str:
        """How the interpreter's log names this visitor when it fails (it names rules by code)."""
        return type(self).__name__


@dataclass(slots=True)
class CallInfo:
    """A call, classified once: which torch function, tensor method or layer it calls, with argument values."""

    node: ast.Call
    qualname: str | None = None  # a torch name called directly: torch.randn, torch.nn.functional.softmax
    method: str | None = None  # x.view(...) -> "view"
    receiver: Value = None  # the value of x in x.view(...)
    module: ModuleValue | None = None  # calling a layer instance: self.fc(x)
    args: list[Value] = field(default_factory=list)
    kwargs: dict[str, Value] = field(default_factory=dict)
    starred: bool = False  # some positional argument is *unpacked: positions after it are unknown
    # Every *unpacked argument was a sequence the interpreter knows: ``args`` holds its parts, in order, so
    # positions are known although they no longer match ``node.args``.
    spliced: bool = False
    # Some **mapping argument is not a dict the interpreter knows: keywords beyond ``kwargs`` may be passed.
    unknown_keywords: bool = False
    # Calling an nn.Sequential: each layer it runs (nested Sequentials flattened) with the value that reached it.
    layer_inputs: tuple[tuple[ModuleValue, Value], ...] = ()

    def arg_node(self, index: int, name: str) -> ast.expr | None:
        """The expression passed as positional ``index`` or keyword ``name``."""
        for keyword in self.node.keywords:
            if keyword.arg == name:
                return keyword.value
        positional = [a for a in self.node.args if not isinstance(a, ast.Starred)]
        if any(isinstance(a, ast.Starred) for a in self.node.args[: index + 1]):
            return None
        return positional[index] if index < len(positional) else None

    def arg(self, index: int, name: str) -> Value:
        """The value passed as positional ``index`` or keyword ``name`` (None when absent or unknown)."""
        if name in self.kwargs:
            return self.kwargs[name]
        known_positions = self.spliced and not self.starred
        if not known_positions and any(isinstance(a, ast.Starred) for a in self.node.args[: index + 1]):
            return None
        return self.args[index] if index < len(self.args) else None

    def has_keyword(self, name: str) -> bool:
        return any(k.arg == name for k in self.node.keywords)


class Context:
    """What rules see: source positions, names, values, the enclosing scope, and a way to report."""

    def __init__(self, source: SourceText, imports: FileImports) -> None:
        self.source = source
        self.imports = imports.table  # what each imported name means where no function rebinds it
        self._imports = imports
        self.values: dict[ast.AST, Value] = {}
        self.calls: dict[ast.Call, CallInfo] = {}
        self.findings: list[Finding] = []
        self.function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        self.klass: ClassInfo | None = None
        self.grad_enabled = True
        self.autocast = False  # inside ``with torch.autocast(...)``: operations may compute in a lower precision
        # What the interpreter learns about the whole file: its classes by name, and the shape problems it found
        # at a node, as (kind, message), which the shape rules report.
        self.classes: dict[str, ClassInfo] = {}
        self.shape_problems: dict[ast.AST, tuple[str, str]] = {}
        self.tree: ast.Module = ast.Module(body=[], type_ignores=[])
        # While a model's forward is evaluated again for one call's arguments: that call, added to each finding.
        self.call_site: Origin | None = None
        # The calls of the file's functions being evaluated for their arguments, innermost last (the call of the
        # function whose body is being walked is the last one, when that body is evaluated for a call).
        self.calls_in_progress: list[ast.AST | None] = []
        self.guarded = 0  # > 0 inside the body of a `try` whose handlers catch runtime errors
        self._current: Rule | None = None
        self._parents: dict[ast.AST, ast.AST] | None = None
        self._analyses: dict[type[Analysis], Analysis] = {}

    # ------------------------------------------------------------------------------ names and values

    def qualify(self, expr: ast.AST) -> str | None:
        """``F.softmax`` -> ``torch.nn.functional.softmax`` through the file's imports (not inside a function
        whose parameter or assignment rebinds ``F``)."""
        if isinstance(expr, ast.Name):
            if expr.id in self._imports.shadowing:
                return self._imports.qualname(expr.id, ancestors(expr, self.parents()))
            return self.imports.get(expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.qualify(expr.value)
            return f"{base}.{expr.attr}" if base else None
        return None

    def value(self, node: ast.AST | None) -> Value:
        return self.values.get(node) if node is not None else None  # type: ignore[arg-type]

    def user_class_of(self, value: Value) -> ClassInfo | None:
        """The file's class that ``value`` is an instance of (a model, a dataset, any class of the file)."""
        if isinstance(value, ModuleValue | OfClass) and value.user_class is not None:
            return self.classes.get(value.user_class)
        if isinstance(value, InstanceValue) and isinstance(value.arg("class"), str):
            return self.classes.get(value.arg("class"))
        return None

    def tensor(self, node: ast.AST | None) -> TensorValue | None:
        value = self.value(node)
        return value if isinstance(value, TensorValue) else None

    def call(self, node: ast.Call) -> CallInfo:
        return self.calls.get(node) or CallInfo(node)

    def parents(self) -> dict[ast.AST, ast.AST]:
        """Child -> parent for the whole file, built on first use and shared by every rule."""
        if self._parents is None:
            self._parents = parent_table(self.tree)
        return self._parents

    def analysis(self, kind: type[A]) -> A:
        """The file's ``kind`` analysis, computed on first use and shared by every rule."""
        found = self._analyses.get(kind)
        if found is None:
            found = self._analyses[kind] = kind.compute(self)
        return found  # type: ignore[return-value]

    def module_alias(self, module: str = "torch.nn") -> str:
        """How this file spells ``module`` (``nn`` after ``import torch.nn as nn``), for fixes that add code."""
        for local, qualname in self.imports.items():
            if qualname == module:
                return local
        for local, qualname in self.imports.items():
            if module.startswith(qualname + "."):
                return local + module[len(qualname) :]
        return module

    # ------------------------------------------------------------------------------ positions

    def span(self, node: ast.AST) -> Span:
        span = self.source.span_from_ast(node)
        assert span is not None, f"{type(node).__name__} has no position"
        return span

    def name_span(self, node: ast.AST) -> Span:
        """The identifier a finding should underline: the attribute name of ``x.view``, the callee of a call."""
        if isinstance(node, ast.Call):
            return self.name_span(node.func)
        if isinstance(node, ast.Attribute):
            end = self.source.position_from_ast(node.end_lineno or node.lineno, node.end_col_offset or 0)
            return Span(Position(end.line, end.column - len(node.attr)), end)
        return self.span(node)

    def text(self, node: ast.AST) -> str:
        """The source text of a node."""
        span = self.span(node)
        if span.start.line == span.end.line:
            return self.source.line(span.start.line)[span.start.column : span.end.column]
        lines = [self.source.line(i) for i in range(span.start.line, span.end.line + 1)]
        lines[-1] = lines[-1][: span.end.column]
        lines[0] = lines[0][span.start.column :]
        return "\n".join(lines)

    def replace(self, node: ast.AST, new_text: str) -> Edit:
        return Edit(self.span(node), new_text)

    def replace_name(self, node: ast.AST, new_name: str) -> Edit:
        """Rename the identifier of ``node`` (the ``view`` of ``x.view``), leaving the rest untouched."""
        return Edit(self.name_span(node), new_name)

    def insert_after(self, node: ast.AST, text: str) -> Edit:
        end = self.span(node).end
        return Edit(Span(end, end), text)

    # ------------------------------------------------------------------------------ reporting

    def report(
        self,
        where: ast.AST | Span,
        message: str,
        fix: Fix | None = None,
        related: Iterable[Related] = (),
        rule: type[Rule] | Rule | None = None,
    ) -> None:
        rule = rule or self._current
        assert rule is not None, "report() outside a rule"
        if rule.raises and self.guarded:
            return  # `try: torch.mm(a, a) except RuntimeError: ...` expects the error
        span = where if isinstance(where, Span) else self.name_span(where)
        related = tuple(related) + self.related(self.call_site)
        self.findings.append(Finding(rule.code, message, span, rule.severity, fix, related))

    def related(self, origin: Origin | None) -> tuple[Related, ...]:
        """The "see also" place a value's origin gives, if any."""
        if origin is None:
            return ()
        span = self.source.span_from_ast(origin.node)
        return (Related(span, origin.what),) if span is not None else ()
