"""jedi, behind one worker thread: the symbol under the cursor, and what the user's torch says about a name.

jedi is not thread safe and is slow on torch when cold (seconds for the first ``torch.randn`` while it reads
torch's stubs), so every jedi call runs in one single-worker executor owned by :class:`Resolver`; callers get
futures. :meth:`Resolver.warm_up` pays the cold cost up front, in the background.

``jedi.settings.auto_import_modules`` must never include torch: importing torch into jedi's process empties
tensor completions and initialises CUDA.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import queue
import re
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from torchls import parso_guard
from torchls.docinfo import SymbolDoc, parse_param_docs

if TYPE_CHECKING:
    import jedi

# jedi is imported where it is first used, on the jedi thread: importing it costs ~0.1 s that the `initialize`
# response should not wait for.

log = logging.getLogger(__name__)
T = TypeVar("T")

# Code that makes jedi read the parts of torch hover and completion touch most, in the order users meet them.
_STATE_MAX_AGE_SECONDS = 300.0  # how long jedi's view of modules on disk may be reused (see Resolver._share_state)
_MEMOS_KEPT = 4  # texts whose memoized inference is kept: the open documents' current versions, a snippet

_WARM_UP_SNIPPETS = (
    ("import torch\ntorch.randn(2, 3).view", "torch._C._VariableFunctions / TensorBase"),
    ("import torch.nn as nn\nnn.Linear(2, 3).parameters", "torch.nn"),
    ("import torch.nn.functional as F\nF.relu", "torch.nn.functional"),
    ("import torch.optim as optim\noptim.AdamW", "torch.optim"),
    ("import torch.utils.data as data\ndata.DataLoader", "torch.utils.data"),
)


# Namespaces and classes whose members completion lists most: read by jedi during warm-up and kept on disk per
# environment, so `torch.` and `x.` answer without jedi from the next start on.
INDEXED_MEMBERS = (
    ("torch", False),
    ("torch.nn", False),
    ("torch.nn.functional", False),
    ("torch.optim", False),
    ("torch.optim.lr_scheduler", False),
    ("torch.utils.data", False),
    ("torch.nn.init", False),
    ("torch.nn.utils", False),
    ("torch.cuda", False),
    ("torch.amp", False),
    ("torch.autograd", False),
    ("torch.linalg", False),
    ("torch.jit", False),
    ("torch.fft", False),
    ("torch.special", False),
    ("torch.distributed", False),
    ("torch.backends", False),
    ("torch.utils.checkpoint", False),
    ("torch.distributions", False),
    ("torch.Tensor", True),
    ("torch.nn.Module", True),
    ("torch.optim.Optimizer", True),
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


def _doc_from_json(saved: dict | None) -> SymbolDoc | None:
    """A SymbolDoc as :meth:`Resolver.save_members` wrote it (None: jedi did not know the name)."""
    if saved is None:
        return None
    return SymbolDoc(
        name=saved["name"],
        kind=saved["kind"],
        signatures=tuple(saved["signatures"]),
        param_names=tuple(saved["param_names"]),
        param_docs=dict(saved["param_docs"]),
        docstring=saved["docstring"],
    )


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


def _definition_kind(completion: Any) -> str:
    """function / class / property / variable from the syntax of a completion's definition, without inference.

    ``Completion.type`` infers every name (6 ms apiece: 7 s for ``torch.``); the definition's own syntax node says
    the same for nearly all of them at no cost. Empty when it cannot tell (re-exports): callers fall back.
    """
    try:
        tree_name = completion._name.tree_name  # jedi's definition site; a private attribute, hence the guard
        definition = tree_name.parent if tree_name is not None else None
    except Exception:
        return ""
    if definition is None:
        return ""
    if definition.type == "classdef":
        return "class"
    if definition.type == "funcdef":
        decorated = definition.parent
        if decorated is not None and decorated.type == "decorated" and "property" in decorated.get_code():
            return "property"
        return "function"
    if definition.type in ("expr_stmt", "annassign", "trailer"):  # trailer: ``self.weight = ...`` in __init__
        return "statement"
    return ""


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


class PriorityWorker:
    """One thread running submitted calls in order, the foreground ones before any background one.

    jedi is not thread-safe, so all of it runs on one thread; a plain executor would make a keystroke's request
    wait behind seconds of warm-up or prefetching queued before it.
    """

    _FOREGROUND, _BACKGROUND = 1, 2

    def __init__(self, name: str) -> None:
        self._queue: queue.PriorityQueue[tuple[int, int, Future | None, Callable | None, tuple]] = queue.PriorityQueue()
        self._order = itertools.count()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, function: Callable[..., T], *args: Any, background: bool = False) -> Future[T]:
        future: Future[T] = Future()
        if self._closed:
            future.cancel()
            return future
        priority = self._BACKGROUND if background else self._FOREGROUND
        self._queue.put((priority, next(self._order), future, function, args))
        return future

    def _run(self) -> None:
        while True:
            _, _, future, function, args = self._queue.get()
            if future is None or function is None:
                return
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while queued: a stale request
            try:
                result = function(*args)
            except BaseException as error:  # handed to whoever waits on the future
                future.set_exception(error)
            else:
                future.set_result(result)

    def shutdown(self) -> None:
        """Cancel what is queued and stop the thread after the call now running, without waiting for it."""
        self._closed = True
        while True:
            try:
                _, _, future, _, _ = self._queue.get_nowait()
            except queue.Empty:
                break
            if future is not None:
                future.cancel()
        self._queue.put((0, -1, None, None, ()))


_UNKNOWN = object()
_VERSION_LINE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


class Resolver:
    """All jedi work for one Python environment, serialised on one worker thread."""

    def __init__(self, interpreter: str | None = None) -> None:
        self.interpreter = interpreter
        self._worker = PriorityWorker("torchls-jedi")
        self._environment: Any = None
        self._docs: dict[str, SymbolDoc | None] = {}
        self.warm = threading.Event()
        self.problem: str | None = None  # set when the configured interpreter could not be used
        self._members: dict[str, tuple[str, ...]] = {}  # "qualname|instance" -> member names
        self._kinds: dict[str, str] = {}  # "qualname|instance|member" -> jedi's type of the member
        self._members_file: Path | None = None
        self._state: Any = None  # jedi's InferenceState, shared by requests (see _share_state)
        self._state_since = 0.0
        self._memos: OrderedDict[tuple[str | None, int], dict] = OrderedDict()  # per text: jedi's memoized results
        self._torch_version: object = _UNKNOWN

    # -------------------------------------------------------------------------------- thread plumbing

    def submit(self, function: Callable[..., T], *args: Any, background: bool = False) -> Future[T]:
        """Run ``function(*args)`` on the jedi thread; ``background`` work (warm-up, prefetching) waits while
        any request a user is waiting for is queued."""
        return self._worker.submit(function, *args, background=background)

    def close(self) -> None:
        self._worker.shutdown()

    # -------------------------------------------------------- everything below runs on the jedi thread

    def environment(self) -> Any:
        """The jedi environment; a broken interpreter falls back to the default one and sets ``problem``."""
        if self._environment is None:
            import jedi

            parso_guard.install()  # before jedi parses anything: a broken cache folder must not empty its answers
            try:
                self._environment = find_environment(self.interpreter)
            except EnvironmentProblem as problem:
                self.problem = f"{problem}；torchls 改用默认的 Python 环境读取 torch。"
                self._environment = jedi.get_default_environment()
        return self._environment

    def _script(self, text: str, path: str | None) -> jedi.Script:
        import jedi

        script = jedi.Script(text, path=path, environment=self.environment())
        self._share_state(script, text, path)
        return script

    def forget_inference(self) -> None:
        """Drop what jedi inferred about every module: after files change on disk (a save, a checkout)."""
        self._state = None
        self._memos.clear()

    def _share_state(self, script: Any, text: str, path: str | None) -> None:
        """Give the script the inference state of the scripts before it.

        jedi starts each Script with an empty state, so every request infers torch's modules again (150 ms a
        request on a large file). The state's module cache holds what does not change while the user types:
        torch, the libraries, the project's other files (the state is renewed every few minutes and after a
        save, so their edits are seen). What it memoizes about the document's own syntax tree is dropped whenever
        the text changes (kept per text for the last few texts, so requests in an unchanged document share it):
        parso reuses unchanged nodes between versions, so an old answer could otherwise outlive the edit that
        changed it.
        """
        state, now = self._state, time.monotonic()
        if state is None or now - self._state_since > _STATE_MAX_AGE_SECONDS:
            state = self._state = script._inference_state
            self._state_since = now
            self._memos.clear()
        key = (path, hash(text))
        try:
            memo = self._memos.pop(key, None)
            if memo is None:
                memo = {}
                state.inferred_element_counts.clear()
            self._memos[key] = memo
            while len(self._memos) > _MEMOS_KEPT:
                self._memos.popitem(last=False)
            state.memoize_cache = memo
            state.reset_recursion_limitations()
            own = script._inference_state
            state.script_path, state.project = own.script_path, own.project  # its sys.path comes from these
            script._inference_state = state
        except AttributeError as error:  # a jedi without these internals: every script keeps its own state
            log.info("cannot share jedi's inference state: %s", error)
            self._state = None

    def warm_up_plan(self, names: Iterable[str] = ()) -> list[tuple[str, Callable[[], object]]]:
        """Warm-up as small steps ``(label, step)``: the caller runs each on the jedi thread and can report
        progress between them, and user requests queued meanwhile wait for one step at most.

        First jedi reads torch's stubs and modules (the seconds-long cold cost), then the live signatures of
        ``names`` (the knowledge-base entries) are cached so hover cards never wait for them.
        """
        members = self.member_plan()
        steps: list[tuple[str, Callable[[], object]]] = [members[0]]  # what an earlier session saved, first
        steps.extend((f"jedi 正在读取 {label}", partial(self._infer_end, code)) for code, label in _WARM_UP_SNIPPETS)
        steps.extend(members[1:])  # the indexed namespaces' members, then saved
        described = [(f"读取签名：{name}", partial(self.describe, name)) for name in names]
        steps.extend(described)
        if described:
            steps.append(("保存签名缓存", self.save_members))  # the next start skips what was read here
        return steps

    def member_plan(self) -> list[tuple[str, Callable[[], object]]]:
        """Warm-up steps for completion: load the members kept on disk, read the indexed namespaces, save.
        Cheap when the disk already had them."""
        steps: list[tuple[str, Callable[[], object]]] = [("读取补全缓存", self.load_members)]
        steps.extend((f"读取成员：{q}", partial(self.members, q, i)) for q, i in INDEXED_MEMBERS)
        steps.append(("保存补全缓存", self.save_members))
        return steps

    def warm_up(self, names: Iterable[str] = ()) -> None:
        """Run the whole warm-up plan on the calling thread's behalf, waiting for it (command line, tests)."""
        for _label, step in self.warm_up_plan(names):
            self.submit(step).result()
        self.warm.set()

    def torch_problem(self) -> str | None:
        """After the warm-up: a Chinese message when jedi cannot read torch in the environment, else None.

        Without it completion quietly shrinks to the knowledge base's names, and the user never learns why."""
        executable = getattr(self.environment(), "executable", "?")
        if self.torch_version() is None:
            return (
                f"在 Python 环境 {executable} 里找不到 torch：补全只能列出知识库里的名字，"
                "悬停卡片也没有已安装版本的签名。"
                "请在这个环境里安装 torch，或在设置 torchls.interpreter 里选择装有 torch 的解释器。"
            )
        if not self._members.get(self._member_key("torch", False)):
            return f"jedi 没能读取 {executable} 里的 torch（原因见 torchls 的输出日志）：补全只能列出知识库里的名字。"
        return None

    def _infer_end(self, code: str) -> None:
        lines = code.splitlines()
        try:
            self._script(code, None).infer(len(lines), len(lines[-1]))
        except Exception as error:
            log.info("warm-up of %r failed: %s", code, error)

    # ------------------------------------------------------------------------------------ members

    @staticmethod
    def _member_key(qualname: str, instance: bool) -> str:
        return f"{qualname}|{int(instance)}"

    def cached_members(self, qualname: str, instance: bool) -> tuple[str, ...] | None:
        """Member names computed earlier (any thread), without touching jedi."""
        return self._members.get(self._member_key(qualname, instance))

    def member_kind(self, qualname: str, instance: bool, member: str) -> str | None:
        return self._kinds.get(f"{self._member_key(qualname, instance)}|{member}")

    def members(self, qualname: str, instance: bool) -> tuple[str, ...]:
        """The public members of a module or class (``instance``: of an instance of it), as jedi completes them."""
        key = self._member_key(qualname, instance)
        if key in self._members:
            return self._members[key]
        import_line = _import_line(qualname)
        code = f"{import_line}\n_value: {qualname}\n_value." if instance else f"{import_line}\n{qualname}."
        lines = code.splitlines()
        try:
            completions = self._script(code, None).complete(len(lines), len(lines[-1]))
            names = tuple(c.name for c in completions if not c.name.startswith("__"))
            for completion in completions:
                kind = _definition_kind(completion)
                if kind:
                    self._kinds[f"{key}|{completion.name}"] = kind
        except Exception as error:
            log.warning("jedi could not list members of %s: %s", qualname, error)
            return ()  # not remembered: the next request asks jedi again
        self._members[key] = names
        return names

    def _torch_version_file(self) -> Path | None:
        """``torch/version.py`` of the environment's torch, the first on its sys.path."""
        try:
            for entry in self.environment().get_sys_path():
                version = Path(entry) / "torch" / "version.py"
                if version.is_file():
                    return version
        except Exception as error:
            log.info("could not read the environment's sys.path: %s", error)
        return None

    def torch_version(self) -> str | None:
        """The environment's torch version (``2.13.0+cpu``), read from its ``torch/version.py`` without importing
        torch; None when there is no torch or the file says nothing readable. Read once per resolver."""
        if self._torch_version is _UNKNOWN:
            path = self._torch_version_file()
            found = None
            if path is not None:
                try:
                    match = _VERSION_LINE.search(path.read_text(encoding="utf-8", errors="replace"))
                    found = match.group(1) if match else None
                except OSError as error:
                    log.info("could not read %s: %s", path, error)
            self._torch_version = found
        return self._torch_version  # type: ignore[return-value]

    def _environment_key(self) -> str:
        """Identifies the environment's torch: interpreter and the mtime of torch/version.py on its sys.path."""
        version = self._torch_version_file()
        stamp = f"{version}:{version.stat().st_mtime_ns}" if version is not None else ""
        return f"{getattr(self.environment(), 'executable', '')}|{stamp}"

    def load_members(self) -> None:
        """Members and kinds an earlier session saved for this same environment and torch."""
        import hashlib
        import json

        from torchls.kb.cache import cache_dir

        key = self._environment_key()
        digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]
        self._members_file = cache_dir() / f"members-{digest}.json"
        try:
            saved = json.loads(self._members_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if saved.get("key") != key:
            return
        for name, members in saved.get("members", {}).items():
            if members:
                self._members.setdefault(name, tuple(members))
        for name, kind in saved.get("kinds", {}).items():
            self._kinds.setdefault(name, kind)
        for name, doc in saved.get("docs", {}).items():
            try:
                self._docs.setdefault(name, _doc_from_json(doc))
            except (TypeError, KeyError):
                continue  # a doc saved by another version of torchls: read again when asked

    def save_members(self) -> None:
        import json

        from torchls.kb.cache import write_atomically

        if self._members_file is None:
            return
        if not self._members.get(self._member_key("torch", False)):
            # jedi listed nothing in torch: it cannot see torch (or failed), and what it described is empty too.
            log.info("not saving the completion cache: jedi listed no members of torch")
            return
        docs = {name: dataclasses.asdict(doc) if doc is not None else None for name, doc in self._docs.items()}
        # An empty listing is what jedi gives when it cannot see torch at all; kept on disk it would empty
        # completion in every later session, so only real listings are saved.
        members = {key: names for key, names in self._members.items() if names}
        payload = {"key": self._environment_key(), "members": members, "kinds": self._kinds, "docs": docs}
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        write_atomically(self._members_file, data, "completion cache")

    def complete_at(self, text: str, path: str | None, line: int, column: int) -> list[tuple[str, str, str]]:
        """jedi's completions at a place in a document, as (name, kind, full name).

        Kinds come from the definitions' syntax; only a short list pays for jedi's inference of the rest.
        """
        try:
            completions = self._script(text, path).complete(line + 1, column)
        except Exception as error:
            log.info("jedi could not complete at %s:%s:%s: %s", path, line, column, error)
            return []
        with_kinds = len(completions) <= 80
        out = []
        for completion in completions:
            if completion.name.startswith("__"):
                continue
            kind = _definition_kind(completion)
            try:
                if not kind and with_kinds:
                    kind = completion.type
                full_name = completion.full_name or ""
            except Exception:
                full_name = ""
            out.append((completion.name, kind, full_name))
        return out

    def receiver_types(self, text: str, path: str | None, line: int, column: int) -> list[tuple[str, bool]]:
        """What the name ending just before ``column`` holds, as jedi infers it: ``(full name, is an instance)``
        for each possibility, ``None`` left out. Far cheaper than listing completions (40 ms, not 300 ms, on a
        tensor), and the members of torch classes are cached already."""
        try:
            names = self._script(text, path).infer(line + 1, column)
        except Exception as error:
            log.info("jedi could not infer at %s:%s:%s: %s", path, line, column, error)
            return []
        return [
            (name.full_name or "", name.type == "instance")
            for name in names
            if (name.full_name or "") != "builtins.NoneType"
        ]

    def preparse(self, text: str, path: str | None) -> None:
        """Parse a document into jedi's cache (a long file takes parso most of a second), so that the first
        request that needs jedi in it does not pay for it; later edits re-parse only what changed."""
        try:
            self._script(text, path)
        except Exception as error:
            log.info("jedi could not parse %s: %s", path, error)

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
