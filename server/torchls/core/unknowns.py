"""Where the analysis gives up: the places a value that torch code needs became unknown, and why.

The rules say nothing about what the analysis does not know, so every unknown value is a finding that cannot be
made. ``torchls check --explain-unknown FILE`` lists them, so the next modelling gap is found by reading real code
rather than fixtures. Only values that torch code uses count: the arguments and receivers of torch calls, layers
and models applied to data, tensor methods. A value counts as unknown when nothing is known of it, or when it is a
tensor whose shape is not known at all. Each one is followed back, through names, attributes, arithmetic and the
arguments of calls, to the first place where known inputs gave an unknown result (or where there were no inputs):
that place, the *give-up*, is reported once with the reason and how many torch uses depend on it.
"""

from __future__ import annotations

import ast
import builtins
import collections
from collections.abc import Iterator
from dataclasses import dataclass

from torchls.core.control_flow import ancestors, position
from torchls.core.rules.loop.flow import bindings, bound_value, is_parameter, parent, reaching_bindings, scope_of
from torchls.core.text import SourceText
from torchls.core.values import ModuleValue, TensorValue, Value
from torchls.core.values_at import FileValues

_BUILTINS = frozenset(dir(builtins))
_MAX_DEPTH = 16  # links followed from a use back to its give-up (a chain of names through a long function)

# Why a value became unknown, with the Chinese label the report prints.
REASONS = {
    "unmodelled-call": "调用的结果没有建模",
    "unmodelled-method": "方法的结果没有建模",
    "outside-torch": "torch 之外的调用",
    "user-function": "文件里函数的返回值未知",
    "parameter": "参数的值未知",
    "paths-disagree": "几处赋值（分支或循环的各次迭代）给出的值不一致",
    "attribute": "属性的值未知",
    "imported": "从别的模块导入",
    "unbound": "找不到这个名字的赋值（模块级以外的全局名、exec 之类）",
    "expression": "这种表达式没有建模",
}


@dataclass(frozen=True, slots=True)
class GiveUp:
    """One place where known inputs gave an unknown value (or where a value came from nowhere the file shows)."""

    line: int  # 1-based
    column: int  # 1-based, in code points
    expression: str
    reason: str  # a key of REASONS
    detail: str  # what was called, which parameter, which lines assign it
    uses: int  # torch uses that depend on it

    def text(self, path: str) -> str:
        return (
            f"{path}:{self.line}:{self.column}: `{self.expression}` 未知：{REASONS[self.reason]}"
            f"（{self.detail}）；影响 {self.uses} 处 torch 用法"
        )


def explain_unknown(tree: ast.Module, source: SourceText) -> tuple[list[GiveUp], bool]:
    """The give-ups of a file, in source order, and whether the interpreter stopped on the file altogether."""
    values = FileValues(tree, source, every_node=True)
    if values.failed:
        return [], True
    tracer = _Tracer(values)
    counts: collections.Counter[ast.AST] = collections.Counter()
    reasons: dict[ast.AST, tuple[str, str]] = {}
    for use in tracer.torch_uses(tree):
        found = tracer.give_up(use, 0, set())
        if found is not None:
            node, reason, detail = found
            counts[node] += 1
            reasons[node] = (reason, detail)
    give_ups = []
    for node, uses in counts.items():
        span = source.span_from_ast(node)
        if span is None:
            continue
        reason, detail = reasons[node]
        text = _short(ast.unparse(node))
        give_ups.append(GiveUp(span.start.line + 1, span.start.column + 1, text, reason, detail, uses))
    give_ups.sort(key=lambda g: (g.line, g.column))
    return give_ups, False


def summary(give_ups: list[GiveUp]) -> str:
    """How many give-ups of each reason, and the torch uses they cost."""
    by_reason: collections.Counter[str] = collections.Counter()
    uses: collections.Counter[str] = collections.Counter()
    for found in give_ups:
        by_reason[found.reason] += 1
        uses[found.reason] += found.uses
    lines = [f"{len(give_ups)} 处分析放弃的地方，影响 {sum(uses.values())} 处 torch 用法："]
    for reason, count in by_reason.most_common():
        lines.append(f"  {reason:<18} {count:>5} 处  影响 {uses[reason]:>5}  {REASONS[reason]}")
    return "\n".join(lines)


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _lacking(value: Value) -> bool:
    """Nothing is known of the value, or it is a tensor whose shape is not known at all."""
    if value is None:
        return True
    return isinstance(value, TensorValue) and value.shape is None and value.tail is None


class _Tracer:
    def __init__(self, values: FileValues) -> None:
        self.values = values
        self.ctx = values.context
        tree = self.ctx.tree
        self.functions = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        # names the file calls (``f(...)``, ``obj.f(...)``, and ``model(...)`` for a model's forward)
        self.called = {_called_name(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(self.value(node.func), ModuleValue):
                user_class = self.value(node.func).user_class  # type: ignore[union-attr]
                if user_class:
                    self.called.add(user_class)

    def value(self, node: ast.AST) -> Value:
        return self.values.value_of(node)

    # ------------------------------------------------------------------------------------------ the torch uses

    def torch_uses(self, tree: ast.Module) -> Iterator[ast.expr]:
        """The expressions torch code uses whose value is unknown: arguments of torch calls, data given to layers
        and models, receivers and arguments of tensor methods."""
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            inputs: list[ast.expr] = list(node.args)
            if _lacking(self.value(node)):  # a keyword (``generator=g``, ``dtype=...``) counts where it cost the result
                inputs += [k.value for k in node.keywords]
            qualname = self.ctx.qualify(func)
            callee = self.value(func)
            receiver = self.value(func.value) if isinstance(func, ast.Attribute) else None
            torch_call = qualname is not None and qualname.startswith("torch.")
            if not (torch_call or isinstance(callee, ModuleValue) or isinstance(receiver, TensorValue)):
                continue
            for use in (part for given in inputs for part in _elements(given)):
                if not isinstance(use, ast.Constant | ast.JoinedStr) and _lacking(self.value(use)):
                    yield use

    # ------------------------------------------------------------------------------------------ following back

    def give_up(self, node: ast.AST, depth: int, seen: set[int]) -> tuple[ast.AST, str, str] | None:
        """The first place on the way back from ``node`` where known inputs gave an unknown value."""
        if depth > _MAX_DEPTH or id(node) in seen:
            return None
        seen.add(id(node))
        if isinstance(node, ast.Name):
            return self._name(node, depth, seen)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, depth, seen)
        if isinstance(node, ast.Call):
            return self._call(node, depth, seen)
        if isinstance(node, ast.Starred | ast.NamedExpr):
            return self.give_up(node.value, depth + 1, seen)
        parts = [p for p in _operands(node) if _lacking(self.value(p)) and not isinstance(p, ast.Constant)]
        for part in parts:
            found = self.give_up(part, depth + 1, seen)
            if found is not None:
                return found
        if isinstance(node, ast.IfExp) and not parts:
            return node, "paths-disagree", "条件表达式的两个分支"
        return node, "expression", type(node).__name__

    def _name(self, node: ast.Name, depth: int, seen: set[int]) -> tuple[ast.AST, str, str] | None:
        name = node.id
        scope = scope_of(node, self.ctx)
        if is_parameter(scope, name):
            return node, "parameter", self._parameter(scope, name)
        reaching = reaching_bindings(name, self._read_point(node), self.ctx)
        stores = reaching or bindings(scope, name, self.ctx) or bindings(self.ctx.tree, name, self.ctx)
        if not stores:
            if name in _BUILTINS:
                return node, "outside-torch", f"builtins.{name}"
            return node, "unbound", name
        if isinstance(stores[0], ast.alias):
            module = getattr(parent(stores[0], self.ctx), "module", None) or stores[0].name
            return node, "imported", f"{name} 来自 {module}"
        if len(stores) > 1:
            lines = "、".join(str(position(s)[0]) for s in stores[:4])
            values = [self._bound(s) for s in stores]
            if all(v is not None and not _lacking(self.value(v)) for v in values):
                return node, "paths-disagree", f"{name} 在第 {lines} 行赋值"
            for bound in values:
                if bound is not None and _lacking(self.value(bound)):
                    return self.give_up(bound, depth + 1, seen)
            return node, "paths-disagree", f"{name} 在第 {lines} 行赋值"
        bound = self._bound(stores[0])
        if bound is None:
            return node, "expression", f"{name} 的赋值方式（第 {position(stores[0])[0]} 行）"
        if not _lacking(self.value(bound)):
            # known where it was bound, unknown here: another path (a loop's next iteration, a branch) widened it
            return node, "paths-disagree", f"{name} 在第 {position(stores[0])[0]} 行赋值，到这里已不确定"
        return self.give_up(bound, depth + 1, seen)

    def _read_point(self, node: ast.Name) -> ast.AST:
        """Where a read happens for the bindings that reach it: ``x`` in ``x = f(x)`` reads before the statement
        binds (the statement's own target begins before the read)."""
        for holder in ancestors(node, self.ctx.parents()):
            if isinstance(holder, ast.Assign | ast.AnnAssign | ast.AugAssign):
                return holder
            if isinstance(holder, ast.stmt):
                break
        return node

    def _parameter(self, function: ast.AST, name: str) -> str:
        """``Net.__init__ 的参数 dim：文件里没有调用它``, or that the calls the file makes disagree."""
        title = getattr(function, "name", "lambda")
        holder = parent(function, self.ctx)
        called_as = title
        if isinstance(holder, ast.ClassDef):
            called_as = holder.name if title in ("__init__", "forward", "__call__") else title
            title = f"{holder.name}.{title}"
        if called_as in self.called:
            return f"{title} 的参数 {name}：文件里的调用给出的值不一致或未知"
        return f"{title} 的参数 {name}：文件里没有调用它"

    def _bound_anywhere(self, name: str) -> bool:
        return bool(bindings(self.ctx.tree, name, self.ctx))

    def _bound(self, store: ast.AST) -> ast.expr | None:
        """What a binding gives its name: the assigned value, or the iterable of a ``for`` target."""
        if not isinstance(store, ast.Name):
            return None
        value = bound_value(store, self.ctx)
        if value is not None:
            return value
        holder = parent(store, self.ctx)
        while isinstance(holder, ast.Tuple | ast.List):
            holder = parent(holder, self.ctx)
        if isinstance(holder, ast.For | ast.comprehension):
            return holder.iter
        if isinstance(holder, ast.Assign | ast.AnnAssign):
            return holder.value
        if isinstance(holder, ast.withitem):
            return holder.context_expr
        return None

    def _attribute(self, node: ast.Attribute, depth: int, seen: set[int]) -> tuple[ast.AST, str, str] | None:
        base = self.value(node.value)
        if base is None and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
            qualname = self.ctx.qualify(node)
            if qualname is not None:
                return node, "imported", qualname
            return self.give_up(node.value, depth + 1, seen)
        described = _described(base) if base is not None else "self"
        return node, "attribute", f"{described} 的 .{node.attr}"

    def _call(self, node: ast.Call, depth: int, seen: set[int]) -> tuple[ast.AST, str, str] | None:
        func = node.func
        qualname = self.ctx.qualify(func)
        callee = self.value(func)
        arguments = [a.value if isinstance(a, ast.Starred) else a for a in node.args]
        arguments += [k.value for k in node.keywords]
        arguments = [part for a in arguments for part in _elements(a)]
        unknown_arguments = [a for a in arguments if not isinstance(a, ast.Constant) and _lacking(self.value(a))]
        if qualname is not None:
            for argument in unknown_arguments:
                found = self.give_up(argument, depth + 1, seen)
                if found is not None:
                    return found
            kind = "unmodelled-call" if qualname.startswith("torch.") else "outside-torch"
            return node, kind, qualname
        if isinstance(callee, ModuleValue):  # a layer or a model applied to its inputs
            for argument in unknown_arguments:
                found = self.give_up(argument, depth + 1, seen)
                if found is not None:
                    return found
            if callee.user_class is not None:
                return node, "user-function", f"{callee.user_class}.forward"
            return node, "unmodelled-call", f"{_described(callee)} 的调用"
        if isinstance(func, ast.Name) and func.id in _BUILTINS and not self._bound_anywhere(func.id):
            return node, "outside-torch", f"builtins.{func.id}"
        if isinstance(func, ast.Name) and func.id in self.functions:
            return node, "user-function", func.id
        if isinstance(func, ast.Name) and func.id in self.classes:
            return node, "expression", f"{func.id}(...) 的实例"
        if isinstance(func, ast.Attribute):
            receiver = self.value(func.value)
            if _lacking(receiver) and not (isinstance(func.value, ast.Name) and func.value.id == "self"):
                return self.give_up(func.value, depth + 1, seen)
            for argument in unknown_arguments:
                found = self.give_up(argument, depth + 1, seen)
                if found is not None:
                    return found
            if isinstance(receiver, ModuleValue) and receiver.user_class is not None:
                return node, "user-function", f"{receiver.user_class}.{func.attr}"
            described = _described(receiver) if receiver is not None else "self"
            return node, "unmodelled-method", f"{described}.{func.attr}"
        if callee is None:
            return self.give_up(func, depth + 1, seen)
        for argument in unknown_arguments:
            found = self.give_up(argument, depth + 1, seen)
            if found is not None:
                return found
        return node, "unmodelled-call", _described(callee)


def _elements(expr: ast.expr) -> list[ast.expr]:
    """A tuple or list written out stands for its elements (``torch.cat((a, b))``)."""
    if isinstance(expr, ast.Tuple | ast.List):
        return [part for element in expr.elts for part in _elements(element)]
    return [expr.value if isinstance(expr, ast.Starred) else expr]


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _operands(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.Subscript):
        return [node.value, node.slice]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [e.value if isinstance(e, ast.Starred) else e for e in node.elts]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.IfExp):
        return [node.body, node.orelse]
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    return []


def _described(value: Value) -> str:
    if isinstance(value, TensorValue):
        return "Tensor"
    if isinstance(value, ModuleValue):
        return value.user_class or value.qualname.removeprefix("torch.")
    return type(value).__name__.removesuffix("Value") or "值"
