"""The interpreter as one class: the jobs composed, the tables that route each node type to its handler,
and the walk over a file.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from torchls.core.interpreter.base import Env, InterpreterBase
from torchls.core.interpreter.calls import CallsMixin
from torchls.core.interpreter.data_pipelines import DataPipelinesMixin
from torchls.core.interpreter.expressions import ExpressionsMixin
from torchls.core.interpreter.modules import ModulesMixin
from torchls.core.interpreter.named_sizes import NamedSizesMixin
from torchls.core.interpreter.numpy_arrays import NumpyArraysMixin
from torchls.core.interpreter.statements import StatementsMixin
from torchls.core.interpreter.tensor_methods import TensorMethodsMixin
from torchls.core.interpreter.torch_functions import TorchFunctionsMixin
from torchls.core.interpreter.user_classes import UserClassesMixin
from torchls.core.interpreter.user_functions import UserFunctionsMixin
from torchls.core.rules.base import Context, Rule
from torchls.core.statements import assigned_names
from torchls.core.values import Value


class Interpreter(
    StatementsMixin,
    ExpressionsMixin,
    NamedSizesMixin,
    CallsMixin,
    TorchFunctionsMixin,
    TensorMethodsMixin,
    ModulesMixin,
    UserClassesMixin,
    UserFunctionsMixin,
    DataPipelinesMixin,
    NumpyArraysMixin,
    InterpreterBase,
):
    """The checker's abstract interpreter: every job's mixin over the shared state (see the package's docstring)."""

    def __init__(self, ctx: Context, dispatch: dict[type[ast.AST], list[Rule]]) -> None:
        super().__init__(ctx, dispatch)
        self._expr_table: dict[type[ast.AST], Callable[[Any, Env], Value]] = {
            ast.Name: self._name,
            ast.Constant: self._constant,
            ast.Tuple: self._sequence,
            ast.List: self._sequence,
            ast.Attribute: self._attribute,
            ast.Call: self._call,
            ast.BinOp: self._binop,
            ast.UnaryOp: self._unaryop,
            ast.Subscript: self._subscript,
            ast.IfExp: self._ifexp,
            ast.NamedExpr: self._namedexpr,
            ast.JoinedStr: self._joinedstr,
            ast.Compare: self._compare,
            ast.BoolOp: self._boolop,
            ast.Dict: self._dict,
        }
        self._stmt_table: dict[type[ast.AST], Callable[[Any, Env], None]] = {
            ast.Assign: self._assign,
            ast.AugAssign: self._augassign,
            ast.AnnAssign: self._annassign,
            ast.Expr: lambda node, env: self._discard(self.expr(node.value, env)),
            ast.Return: self._return,
            ast.If: self._if,
            ast.Assert: self._assert,
            ast.For: self._for,
            ast.AsyncFor: self._for,
            ast.While: self._while,
            ast.With: self._with,
            ast.AsyncWith: self._with,
            ast.Try: self._try,
            ast.FunctionDef: self._function,
            ast.AsyncFunctionDef: self._function,
            ast.ClassDef: self._class,
        }

    @staticmethod
    def _discard(_value: Value) -> None:
        return None

    def run(self, tree: ast.Module) -> None:
        counts: dict[str, int] = {}
        for stmt in tree.body:
            for target in assigned_names(stmt):
                counts[target] = counts.get(target, 0) + 1
        self.stable_globals = {name for name, count in counts.items() if count == 1}
        self.functions = {
            stmt.name: stmt
            for stmt in tree.body
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name in self.stable_globals
        }
        text = self.ctx.source.text
        self.default_device_changed = "set_default_device" in text or "set_default_tensor_type" in text
        self.ctx.classes = self.classes
        self.ctx.tree = tree
        self.block(tree.body, self.module_env)
        self._settle_unstable_reads()

    def _settle_unstable_reads(self) -> None:
        """Reads of attributes assigned more than once (``self.head`` that ``reset_classifier`` replaces) learn,
        once the whole file is walked, the class all their values share: for hover, after the rules have run."""
        values = self.joined_values
        collected = self.call_values
        for node, klass, name in self._unstable_reads:
            if node is None or values.get(node) is not None or (collected is not None and collected.get(node)):
                continue
            shared = klass.attribute_class(name)
            if shared is not None:
                values[node] = shared
