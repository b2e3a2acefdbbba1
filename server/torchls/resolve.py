"""jedi, behind one worker thread: the symbol under the cursor, and what the user's torch says about a name.

jedi is not thread safe and is slow on torch when cold (seconds for the first ``torch.randn`` while it reads
torch's stubs), so every jedi call runs in one single-worker executor owned by :class:`Resolver`; callers get
futures. :meth:`Resolver.warm_up` pays the cold cost up front, in the background.

``jedi.settings.auto_import_modules`` must never include torch: importing torch into jedi's process empties
tensor completions and initialises CUDA.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from torchls.docinfo import SymbolDoc, parse_param_docs

if TYPE_CHECKING:
    import jedi

# jedi is imported where it is first used, on the jedi thread: importing it costs ~0.1 s that the `initialize`
# response should not wait for.

log = logging.getLogger(__name__)
T = TypeVar("T")

# Code that makes jedi read the parts of torch hover and completion touch most, in the order users meet them.
_WARM_UP_SNIPPETS = (
    ("import torch\ntorch.randn(2, 3).view", "torch._C._VariableFunctions / TensorBase"),
    ("import torch.nn as nn\nnn.Linear(2, 3).parameters", "torch.nn"),
    ("import torch.nn.functional as F\nF.relu", "torch.nn.functional"),
    ("import torch.optim as optim\noptim.AdamW", "torch.optim"),
    ("import torch.utils.data as data\ndata.DataLoader", "torch.utils.data"),
)


class EnvironmentProblem(Exception):
    """The configured Python interpreter cannot be used; the message is for the user, in Chinese."""


@dataclass(frozen=True, slots=True)
class JediHit:
    """What jedi found under the cursor."""

    doc: SymbolDoc
    is_instance: bool  # the cursor is on a value whose class is ``doc.name`` (``self.fc`` -> Linear)


def _interpreter_path(interpreter: str) -> str | None:
    path = interpreter if os.sep in interpreter else shutil.which(interpreter)
    if path is None or not Path(path).is_file() or not os.access(path, os.X_OK):
        return None
    return path


def check_interpreter(interpreter: str | None) -> str | None:
    """A Chinese message when ``interpreter`` obviously cannot be used (cheap: no subprocess), else None."""
    if interpreter and _interpreter_path(interpreter) is None:
        return f"找不到可执行的 Python 解释器：{interpreter}"
    return None


def find_environment(interpreter: str | None) -> Any:
    """The jedi environment of ``interpreter`` (a path or a command on PATH), else the default one.

    Raises :class:`EnvironmentProblem` with a Chinese message when the interpreter is missing or broken.
    """
    import jedi

    if not interpreter:
        return jedi.get_default_environment()
    path = _interpreter_path(interpreter)
    if path is None:
        raise EnvironmentProblem(f"找不到可执行的 Python 解释器：{interpreter}")
    try:
        return jedi.create_environment(path, safe=False)
    except jedi.InvalidPythonEnvironment as error:
        raise EnvironmentProblem(f"无法使用 Python 解释器 {interpreter}：{error}") from error


def _symbol_doc(name: Any) -> SymbolDoc:
    signatures: list[str] = []
    params: list[str] = []
    try:
        for signature in name.get_signatures():
            signatures.append(signature.to_string())
            for param in signature.params:
                if param.name not in params and param.name not in ("self", "*", "/"):
                    params.append(param.name)
    except Exception as error:  # jedi raises assorted errors on odd stubs; a card without signature is fine
        log.debug("no signatures for %s: %s", name.full_name, error)
    try:
        docstring = name.docstring(raw=True)
    except Exception:
        docstring = ""
    return SymbolDoc(
        name=name.full_name or name.name,
        kind=name.type,
        signatures=tuple(signatures),
        param_names=tuple(params),
        param_docs=parse_param_docs(docstring),
        docstring=docstring,
    )


def _is_torch(name: Any) -> bool:
    full_name = name.full_name or ""
    return full_name == "torch" or full_name.startswith("torch.")


def _import_line(public_name: str) -> str:
    """``import torch.optim.lr_scheduler`` for ``torch.optim.lr_scheduler.StepLR``: makes any name reachable."""
    parts = public_name.split(".")
    module = [parts[0]]
    for part in parts[1:-1]:
        if part[:1].isupper():
            break
        module.append(part)
    return "import " + ".".join(module)


class Resolver:
    """All jedi work for one Python environment, serialised on one worker thread."""

    def __init__(self, interpreter: str | None = None) -> None:
        self.interpreter = interpreter
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchls-jedi")
        self._environment: Any = None
        self._docs: dict[str, SymbolDoc | None] = {}
        self.warm = threading.Event()
        self.problem: str | None = None  # set when the configured interpreter could not be used

    # -------------------------------------------------------------------------------- thread plumbing

    def submit(self, function: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``function(*args)`` on the jedi thread."""
        return self._executor.submit(function, *args)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -------------------------------------------------------- everything below runs on the jedi thread

    def environment(self) -> Any:
        """The jedi environment; a broken interpreter falls back to the default one and sets ``problem``."""
        if self._environment is None:
            import jedi

            try:
                self._environment = find_environment(self.interpreter)
            except EnvironmentProblem as problem:
                self.problem = f"{problem}；torchls 改用默认的 Python 环境读取 torch。"
                self._environment = jedi.get_default_environment()
        return self._environment

    def _script(self, text: str, path: str | None) -> jedi.Script:
        import jedi

        return jedi.Script(text, path=path, environment=self.environment())

    def warm_up_plan(self, names: Iterable[str] = ()) -> list[tuple[str, Callable[[], object]]]:
        """Warm-up as small steps ``(label, step)``: the caller runs each on the jedi thread and can report
        progress between them, and user requests queued meanwhile wait for one step at most.

        First jedi reads torch's stubs and modules (the seconds-long cold cost), then the live signatures of
        ``names`` (the knowledge-base entries) are cached so hover cards never wait for them.
        """
        steps: list[tuple[str, Callable[[], object]]] = [
            (f"jedi 正在读取 {label}", partial(self._infer_end, code)) for code, label in _WARM_UP_SNIPPETS
        ]
        steps.extend((f"读取签名：{name}", partial(self.describe, name)) for name in names)
        return steps

    def warm_up(self, names: Iterable[str] = ()) -> None:
        """Run the whole warm-up plan on the calling thread's behalf, waiting for it (command line, tests)."""
        for _label, step in self.warm_up_plan(names):
            self.submit(step).result()
        self.warm.set()

    def _infer_end(self, code: str) -> None:
        lines = code.splitlines()
        try:
            self._script(code, None).infer(len(lines), len(lines[-1]))
        except Exception as error:
            log.info("warm-up of %r failed: %s", code, error)

    def cached_doc(self, public_name: str) -> SymbolDoc | None:
        """A doc computed earlier, without touching jedi (safe to call from any thread)."""
        return self._docs.get(public_name)

    def describe(self, public_name: str) -> SymbolDoc | None:
        """What the installed torch says about a public name (signatures, English parameter docs)."""
        if public_name in self._docs:
            return self._docs[public_name]
        code = f"{_import_line(public_name)}\n{public_name}"
        lines = code.splitlines()
        doc = None
        try:
            # Not filtered to torch: ``torch.pi`` is ``math.pi`` and ``torch.jit.Final`` is ``typing.Final``.
            names = self._script(code, None).goto(len(lines), len(lines[-1]), follow_imports=True)
            if names:
                doc = _symbol_doc(names[0])
        except Exception as error:
            log.info("jedi could not describe %s: %s", public_name, error)
        self._docs[public_name] = doc
        return doc

    def resolve_at(self, text: str, path: str | None, line: int, column: int) -> JediHit | None:
        """The torch symbol at 0-based ``line`` and code-point ``column``, as jedi sees it; None if not torch."""
        lines = text.splitlines() or [""]
        if line >= len(lines) or column > len(lines[line]):
            return None
        script = self._script(text, path)
        try:
            for name in script.goto(line + 1, column, follow_imports=True):
                if _is_torch(name) and name.type != "instance":
                    return JediHit(_symbol_doc(name), is_instance=False)
            for name in script.infer(line + 1, column):
                if _is_torch(name):
                    return JediHit(_symbol_doc(name), is_instance=name.type == "instance")
        except Exception as error:  # jedi has internal errors on broken code; no hover is the right answer
            log.info("jedi failed at %s:%s:%s: %s", path, line, column, error)
        return None
