"""The checker's abstract interpreter: one walk over a file that evaluates values and dispatches to rules.

Statements are evaluated in order, scope by scope, so a name's value is the one the straight-line code gives
it. After a branch or a loop, a name keeps its value only where every path agrees (:func:`values.merge`).
Methods of a class see ``self.x`` as what ``__init__`` assigned, and a user model's call returns what its
``forward`` returns. Whatever is not modelled here is unknown, and rules say nothing about unknown values.

Every expression node is evaluated exactly once; after a node is evaluated, the rules registered for its type
are called, so a rule reads the values of the node's parts from :class:`~torchls.core.rules.base.Context`.
"""

from torchls.core.interpreter.class_info import ClassInfo
from torchls.core.interpreter.driver import Interpreter

__all__ = ["ClassInfo", "Interpreter"]
