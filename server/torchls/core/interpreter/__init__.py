"""The checker's abstract interpreter: one walk over a file that evaluates values and dispatches to rules.

Statements are evaluated in order, scope by scope, so a name's value is the one the straight-line code gives
it. After a branch or a loop, a name keeps its value only where every path agrees (:func:`values.merge`).
Methods of a class see ``self.x`` as what ``__init__`` assigned, and a user model's call returns what its
``forward`` returns. Whatever is not modelled here is unknown, and rules say nothing about unknown values.

Every expression node is evaluated exactly once; after a node is evaluated, the rules registered for its type
are called, so a rule reads the values of the node's parts from :class:`~torchls.core.rules.base.Context`.

The interpreter is one class, :class:`Interpreter`, composed of one mixin per job over the shared state of
:mod:`.base`:

- :mod:`.driver`: the composed class, the tables routing each node type to its handler, the walk over a file;
- :mod:`.statements`: assignments and binding, branches, loops, ``with``/``try``, merging envs;
- :mod:`.expressions`: names, containers, comprehensions, attributes, subscripts, arithmetic, comparisons;
- :mod:`.named_sizes`: the names code gives the dims it reads, and views written with them;
- :mod:`.calls`: building a call's arguments and dispatching on the callee; Python builtins; ``argparse``;
- :mod:`.torch_functions`: ``torch.*``/``F.*`` and other library callables, by qualified name;
- :mod:`.tensor_methods`: ``x.view``, ``x.to``, ``x.sum``, ... on an abstract tensor;
- :mod:`.modules`: torch layers, their methods, applying a layer, a ``Sequential`` or a user model;
- :mod:`.user_classes`: the file's classes, their instances and attributes (:mod:`.class_info`: what is kept);
- :mod:`.user_functions`: the file's functions, and calls of them evaluated for their arguments;
- :mod:`.data_pipelines`: datasets, loaders, and what iterating anything gives;
- :mod:`.numpy_arrays`: NumPy arrays' dtype and shape, which ``torch.from_numpy``/``torch.tensor`` keep;
- :mod:`.known_values` and :mod:`.torch_tables`: reading abstract values as Python, and torch's tables.
"""

from torchls.core.interpreter.class_info import ClassInfo
from torchls.core.interpreter.driver import Interpreter

__all__ = ["ClassInfo", "Interpreter"]
