"""jedi for the server: the symbol under the cursor, what the user's torch says about a name, member lists.

jedi runs in a child process (:mod:`torchls.jedi_host`), so its CPU-bound work never holds the server's GIL.
Calls go to it one at a time from one worker thread owned by :class:`Resolver`, the requests a user waits for
before background work (warm-up, prefetching); callers get futures. What does not change while the user types
(member lists, signatures and docstrings) is kept here, readable from any thread without asking the child, and
saved to disk per environment. :meth:`Resolver.ready_plan` pays jedi's cold cost (seconds on torch) up front, in
the background, in small steps; :meth:`Resolver.read_signatures` then reads the knowledge base's signatures from
torch's sources in one pass, and :meth:`Resolver.signature_plan` leaves only what that could not read to jedi.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import queue
import re
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from torchls.docinfo import JediHit, SymbolDoc
from torchls.jedi_host import HostClosed, HostError, HostProcess, interpreter_path

log = logging.getLogger(__name__)
T = TypeVar("T")

# Code that makes jedi read the parts of torch hover and completion touch most, in the order users meet them.
_WARM_UP = (
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
    ("torch.dtype", True),
    ("torch.device", True),
    # The builtins' containers: a receiver the file shows (or jedi infers) is a dict is completed from the cache.
    ("builtins.dict", True),
    ("builtins.list", True),
    ("builtins.tuple", True),
    ("builtins.set", True),
    ("builtins.str", True),
)

# Listed after torchls is ready, at the start of the signatures' phase: what a guess by member name must not
# mistake for a tensor's where a file imports NumPy (see core/name_guess.py: no guess there until it is listed).
# NumPy's stubs take jedi about 3 s to read in a new environment, a fifth of the time to ready.
MEMBERS_LISTED_LATER = (("numpy.ndarray", True),)


def check_interpreter(interpreter: str | None) -> str | None:
    """A Chinese message when ``interpreter`` obviously cannot be used (cheap: no subprocess), else None."""
    if interpreter and interpreter_path(interpreter) is None:
        return f"找不到可执行的 Python 解释器：{interpreter}"
    return None


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
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

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
    """All jedi work for one Python environment: sent to the jedi process from one worker thread, with the
    answers that do not change while the user types kept here."""

    def __init__(self, interpreter: str | None = None) -> None:
        self.interpreter = interpreter
        self._worker = PriorityWorker("torchls-jedi")
        self._host = HostProcess(interpreter)
        self._docs: dict[str, SymbolDoc | None] = {}
        self.warm = threading.Event()
        # Set once jedi has read torch and listed the indexed namespaces, before the rest of the warm-up (every
        # entry's signature: 20 s in a new environment): from then on completion may ask jedi and wait for it.
        self.listed = threading.Event()
        self.problem: str | None = None  # set when the configured interpreter could not be used
        self._members: dict[str, tuple[str, ...]] = {}  # "qualname|instance" -> member names
        self._kinds: dict[str, str] = {}  # "qualname|instance|member" -> jedi's type of the member
        self._members_file: Path | None = None
        self._environment: tuple[str, list[str]] | None = None  # the interpreter and its sys.path, once known
        self._torch_version: object = _UNKNOWN
        self._parsed: set[object] = set()  # documents jedi has parsed (by path): later versions parse quickly

    # -------------------------------------------------------------------------------- thread plumbing

    def submit(self, function: Callable[..., T], *args: Any, background: bool = False) -> Future[T]:
        """Run ``function(*args)`` on the worker thread; ``background`` work (warm-up, prefetching) waits while
        any request a user is waiting for is queued."""
        return self._worker.submit(function, *args, background=background)

    def close(self) -> None:
        self._worker.shutdown()
        self._host.close()

    # -------------------------------------------------- everything below runs on the worker thread

    def _ask(self, method: str, *args: object, failed: Any = None) -> Any:
        """The jedi process's answer, or ``failed`` (logged) when it could not give one: callers treat that as
        jedi knowing nothing, as they do for jedi's own failures."""
        try:
            return self._host.call(method, *args)
        except HostClosed as error:  # shutting down: requests still queued end here
            log.debug("%s: %s", method, error)
            return failed
        except HostError as error:
            log.warning("%s", error)
            return failed

    def _environment_info(self) -> tuple[str, list[str]]:
        """The environment's interpreter and sys.path, asked once; sets ``problem`` for a broken interpreter.
        Only the worker thread asks the jedi process: elsewhere it is what is known so far."""
        if self._environment is None and threading.current_thread() is self._worker.thread:
            info = self._ask("environment_info")
            if info is None:
                return "", []  # asked again next time: the process may start then
            executable, sys_path, problem = info
            self._environment = executable, sys_path
            self.problem = problem
        return self._environment or ("", [])

    def forget_inference(self) -> None:
        """Drop what jedi inferred about every module: after files change on disk (a save, a checkout)."""
        self._ask("forget_inference")

    def freeze(self) -> None:
        """After the warm-up: keep jedi's long-lived objects out of its garbage collections."""
        self._ask("freeze")

    def ready_plan(self) -> list[tuple[str, Callable[[], object]]]:
        """Warm-up as small steps ``(label, step)``: the caller runs each on the worker thread and can report
        progress between them, and user requests queued meanwhile wait for one step at most. jedi reads torch's
        stubs and modules (the seconds-long cold cost) and lists the indexed namespaces: from then on completion
        and hover answer at their usual speed."""
        members = self.member_plan()
        steps: list[tuple[str, Callable[[], object]]] = [members[0]]  # what an earlier session saved, first
        steps.extend((f"jedi 正在读取 {label}", partial(self._ask, "infer_end", code)) for code, label in _WARM_UP)
        steps.extend(members[1:])  # the indexed namespaces' members, then saved
        return steps

    def read_signatures(self, names: Iterable[str]) -> int:
        """Read the signatures of the ``names`` not known yet straight from the installed torch's sources, in one
        short child process (:mod:`torchls.installed_signatures`), not through jedi: in a new environment jedi
        would spend about a minute parsing the modules they live in. Runs on any thread but the worker's, which
        stays free for the user's requests meanwhile. Returns how many it read."""
        from torchls.installed_signatures import read_in_child

        wanted = [name for name in names if name not in self._docs]
        version_file = self._torch_version_file() if wanted else None
        if version_file is None:
            return 0
        read = read_in_child(version_file.parent.parent, wanted)
        for name, doc in read.items():
            self._docs.setdefault(name, doc)
        log.info("read %d of %d signatures from the sources of torch", len(read), len(wanted))
        return len(read)

    def signature_plan(self, names: Iterable[str]) -> list[tuple[str, Callable[[], object]]]:
        """The live signatures of ``names`` (the knowledge-base entries) that :meth:`read_signatures` left to jedi,
        cached and saved so that hover cards do not wait for them; a hover on an entry not read yet reads its
        signature first, ahead of these steps."""
        names = list(names)
        described: list[tuple[str, Callable[[], object]]] = [
            (f"读取成员：{q}", partial(self.members, q, i)) for q, i in MEMBERS_LISTED_LATER
        ]
        unread = [name for name in names if name not in self._docs]
        described.extend((f"读取签名：{name}", partial(self.describe, name)) for name in unread)
        if names:
            described.append(("保存签名缓存", self.save_members))  # the next start skips what was read here
        return described

    def member_plan(self) -> list[tuple[str, Callable[[], object]]]:
        """Warm-up steps for completion: load the members kept on disk, read the indexed namespaces, save.
        Cheap when the disk already had them."""
        steps: list[tuple[str, Callable[[], object]]] = [("读取补全缓存", self.load_members)]
        steps.extend((f"读取成员：{q}", partial(self.members, q, i)) for q, i in INDEXED_MEMBERS)
        steps.append(("保存补全缓存", self.save_members))
        steps.append(("补全就绪", self.listed.set))
        return steps

    def warm_up(self, names: Iterable[str] = ()) -> None:
        """Run the whole warm-up on the calling thread's behalf, waiting for it (command line, tests)."""
        names = list(names)
        for _label, step in self.ready_plan():
            self.submit(step).result()
        self.read_signatures(names)
        for _label, step in self.signature_plan(names):
            self.submit(step).result()
        self.warm.set()

    def torch_problem(self) -> str | None:
        """After the warm-up: a Chinese message when jedi cannot read torch in the environment, else None.

        Without it completion quietly shrinks to the knowledge base's names, and the user never learns why."""
        executable = self._environment_info()[0] or self.interpreter or "?"
        if self.torch_version() is None:
            return (
                f"在 Python 环境 {executable} 里找不到 torch：补全只能列出知识库里的名字，"
                "悬停卡片也没有已安装版本的签名。"
                "请在这个环境里安装 torch，或在设置 torchls.interpreter 里选择装有 torch 的解释器。"
            )
        if not self._members.get(self._member_key("torch", False)):
            return f"jedi 没能读取 {executable} 里的 torch（原因见 torchls 的输出日志）：补全只能列出知识库里的名字。"
        return None

    # ------------------------------------------------------------------------------------ members

    @staticmethod
    def _member_key(qualname: str, instance: bool) -> str:
        return f"{qualname}|{int(instance)}"

    def cached_members(self, qualname: str, instance: bool) -> tuple[str, ...] | None:
        """Member names computed earlier (any thread), without asking jedi."""
        return self._members.get(self._member_key(qualname, instance))

    def member_kind(self, qualname: str, instance: bool, member: str) -> str | None:
        return self._kinds.get(f"{self._member_key(qualname, instance)}|{member}")

    def members(self, qualname: str, instance: bool) -> tuple[str, ...]:
        """The public members of a module or class (``instance``: of an instance of it), as jedi completes them."""
        key = self._member_key(qualname, instance)
        if key in self._members:
            return self._members[key]
        listed = self._ask("list_members", qualname, instance)
        if listed is None:
            return ()  # not remembered: the next request asks jedi again
        names, kinds = listed
        for member, kind in kinds.items():
            self._kinds[f"{key}|{member}"] = kind
        self._members[key] = names
        return names

    def _torch_version_file(self) -> Path | None:
        """``torch/version.py`` of the environment's torch, the first on its sys.path."""
        for entry in self._environment_info()[1]:
            candidate = Path(entry) / "torch" / "version.py"
            if candidate.is_file():
                return candidate
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
            if path is not None or self._environment is not None:
                self._torch_version = found  # not remembered before the jedi process has said
            return found
        return self._torch_version  # type: ignore[return-value]

    def _environment_key(self) -> str:
        """Identifies the environment's torch: interpreter and the mtime of torch/version.py on its sys.path."""
        version = self._torch_version_file()
        stamp = f"{version}:{version.stat().st_mtime_ns}" if version is not None else ""
        return f"{self._environment_info()[0]}|{stamp}"

    def load_members(self) -> None:
        """Members and kinds an earlier session saved for this same environment and torch."""
        import hashlib
        import json

        from torchls.cache_files import cache_dir

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

        from torchls.cache_files import write_atomically

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

    @staticmethod
    def _document_key(text: str, path: str | None) -> object:
        return path if path else ("unsaved", hash(text))

    def has_parsed(self, text: str, path: str | None) -> bool:
        """True once jedi has parsed some version of this document: asking it now costs little (parso re-parses
        only what changed). Before that, the first request pays for the whole file (most of a second)."""
        return self._document_key(text, path) in self._parsed

    def _asked_about(self, text: str, path: str | None) -> None:
        self._parsed.add(self._document_key(text, path))

    def complete_at(self, text: str, path: str | None, line: int, column: int) -> list[tuple[str, str, str]]:
        """jedi's completions at a place in a document, as (name, kind, full name)."""
        try:
            return self._ask("complete_at", text, path, line, column, failed=[])
        finally:
            self._asked_about(text, path)

    def receiver_types(self, text: str, path: str | None, line: int, column: int) -> list[tuple[str, bool]]:
        """What the name ending just before ``column`` holds, as jedi infers it: ``(full name, is an instance)``
        for each possibility. Far cheaper than listing completions (40 ms, not 300 ms, on a tensor), and the
        members of torch classes are cached already."""
        try:
            return self._ask("receiver_types", text, path, line, column, failed=[])
        finally:
            self._asked_about(text, path)

    def preparse(self, text: str, path: str | None) -> None:
        """Parse a document into jedi's cache (a long file takes parso most of a second), so that the first
        request that needs jedi in it does not pay for it; later edits re-parse only what changed."""
        self._ask("preparse", text, path)
        self._asked_about(text, path)

    def cached_doc(self, public_name: str) -> SymbolDoc | None:
        """A doc computed earlier, without asking jedi (safe to call from any thread)."""
        return self._docs.get(public_name)

    def describe(self, public_name: str) -> SymbolDoc | None:
        """What the installed torch says about a public name (signatures, English parameter docs)."""
        if public_name in self._docs:
            return self._docs[public_name]
        try:
            doc = self._host.call("describe", public_name)
        except HostError as error:
            log.log(logging.DEBUG if isinstance(error, HostClosed) else logging.WARNING, "%s", error)
            return None  # not remembered: jedi did not say it knows nothing
        self._docs[public_name] = doc  # type: ignore[assignment]
        return doc  # type: ignore[return-value]

    def resolve_at(self, text: str, path: str | None, line: int, column: int) -> JediHit | None:
        """The torch symbol at 0-based ``line`` and code-point ``column``, as jedi sees it; None if not torch."""
        try:
            return self._ask("resolve_at", text, path, line, column)
        finally:
            self._asked_about(text, path)
