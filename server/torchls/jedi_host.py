"""jedi in a process of its own, so that its work never holds the server's GIL.

jedi is pure Python and CPU-bound: reading torch's stubs at warm-up, parsing a 5,000-line file that was just
opened, listing the members of every class a file uses. Run on a thread of the server, each of those steps
holds the GIL for milliseconds at a time, and every hover and completion the event loop answers meanwhile waits
for it at each await (namespace completions that need no jedi at all took 100-300 ms). In a child process the
event loop keeps the GIL to itself and the operating system shares the cores.

Both sides live here: :class:`JediHost` is the child's jedi (one environment, one shared inference state) and
:func:`main` its request loop; :class:`HostProcess` is the server's handle on the child. Requests go one at a
time, as ``(method, arguments)`` frames on the child's stdin, answers come back on its stdout, as plain data only
(:mod:`torchls.jedi_wire`: this module is the child's ``__main__``, so no type defined here may cross). Both ends
are the same installed torchls. The child ends when its stdin closes, so it never outlives the server.

``jedi.settings.auto_import_modules`` must never include torch: importing torch into jedi's process empties
tensor completions and initialises CUDA.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import IO, Any

from torchls import memory, parso_guard
from torchls.docinfo import JediHit, SymbolDoc, parse_param_docs
from torchls.jedi_wire import WireError, read_frame, write_frame

log = logging.getLogger(__name__)

_STATE_MAX_AGE_SECONDS = 300.0  # how long jedi's view of modules on disk may be reused (see JediHost._share_state)
_MEMOS_KEPT = 4  # texts whose memoized inference is kept: the open documents' current versions, a snippet


class EnvironmentProblem(Exception):
    """The configured Python interpreter cannot be used; the message is for the user, in Chinese."""


class HostError(Exception):
    """The jedi process could not answer: it failed to start, died, or could not send its answer."""


class HostClosed(HostError):
    """The server is shutting down: no more requests go to the jedi process (an expected event, not a fault)."""


def interpreter_path(interpreter: str) -> str | None:
    path = interpreter if os.sep in interpreter else shutil.which(interpreter)
    if path is None or not Path(path).is_file() or not os.access(path, os.X_OK):
        return None
    return path


# Set by the VS Code extension, which runs torchls from the libraries bundled in its .vsix (first on PYTHONPATH).
BUNDLED_LIBS_ENV = "TORCHLS_BUNDLED_LIBS"


def project_env() -> dict[str, str] | None:
    """The environment for jedi's process in the project's interpreter: the server's own, less the bundled
    libraries on ``PYTHONPATH`` (in the project's ``sys.path`` they would make ``import yaml`` or ``attrs`` resolve
    to torchls's copies). None (inherit) when torchls does not run from a bundle."""
    bundled = os.environ.get(BUNDLED_LIBS_ENV)
    if not bundled:
        return None
    env = dict(os.environ)
    kept = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry and entry != bundled]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        env.pop("PYTHONPATH", None)
    env.pop(BUNDLED_LIBS_ENV)
    return env


def find_environment(interpreter: str | None) -> Any:
    """The jedi environment of ``interpreter`` (a path or a command on PATH), else the default one.

    Raises :class:`EnvironmentProblem` with a Chinese message when the interpreter is missing or broken.
    """
    import jedi

    if not interpreter:
        return jedi.get_default_environment()
    path = interpreter_path(interpreter)
    if path is None:
        raise EnvironmentProblem(f"找不到可执行的 Python 解释器：{interpreter}")
    try:
        return jedi.create_environment(path, safe=False, env_vars=project_env())
    except jedi.InvalidPythonEnvironment as error:
        raise EnvironmentProblem(f"无法使用 Python 解释器 {interpreter}：{error}") from error


def import_line(public_name: str) -> str:
    """``import torch.optim.lr_scheduler`` for ``torch.optim.lr_scheduler.StepLR``: makes any name reachable."""
    parts = public_name.split(".")
    module = [parts[0]]
    for part in parts[1:-1]:
        if part[:1].isupper():
            break
        module.append(part)
    return "import " + ".".join(module)


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
        name=_member_full_name(name),
        kind=name.type,
        signatures=tuple(signatures),
        param_names=tuple(params),
        param_docs=parse_param_docs(docstring),
        docstring=docstring,
    )


def _member_full_name(name: Any) -> str:
    """jedi's full name, with an attribute that a method assigns named as the class's member: jedi calls
    ``self.training = mode`` in ``Module.train`` ``...Module.train.training`` and the tensor's ``data``
    ``torch._tensor.Tensor.__setstate__.data``; users know them as ``Module.training`` and ``Tensor.data``."""
    full_name = name.full_name or name.name
    try:
        if name.type != "statement":
            return full_name
        method = name.parent()
        owner = method.parent() if method is not None and method.type == "function" else None
        if owner is not None and owner.type == "class" and owner.full_name:
            return f"{owner.full_name}.{name.name}"
    except Exception as error:  # jedi's tree walking fails on odd stubs; its own name is still an answer
        log.debug("no owner for %s: %s", full_name, error)
    return full_name


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


def _one_api(names: list[Any]) -> bool:
    """True when jedi's torch names are one API (overloads, a stub and its source). An attribute read through
    ``Module.__getattr__`` is typed "Tensor or Module": ``self.pe.to`` is then ``Tensor.to`` or ``Module.to``, and
    picking the first would show another API's card; no answer is better."""
    return len({_member_full_name(name) for name in names}) == 1


def read_torch_extensions_from_stubs() -> bool:
    """Make jedi read torch's compiled modules (``torch._C`` and its submodules) from their ``.pyi`` stubs only.

    To inspect a compiled module jedi imports it in its environment's helper process, and importing ``torch._C``
    imports all of torch: 230 MB held for the session, and seconds of CPU. torch ships stubs for these modules
    (with their docstrings), and jedi reads signatures, members and docstrings from the stubs anyway: checked
    here, ``torch.cat``, ``Tensor.view``, ``nn.Linear`` and a tensor's 737 completions come out the same either
    way. Patches a private jedi function, so it is guarded: False (nothing changed) when jedi no longer has it.
    """
    from jedi.inference import imports

    load = getattr(imports, "_load_builtin_module", None)
    if load is None or getattr(load, "torchls_stub_only", False):
        return load is not None
    try:
        parameters = list(inspect.signature(load).parameters)
    except (TypeError, ValueError):
        parameters = []
    if parameters[:2] != ["inference_state", "import_names"]:
        log.info("jedi's _load_builtin_module changed (%s): torch's compiled modules are imported", parameters)
        return False

    def load_unless_torch(inference_state: Any, import_names: Any = None, *args: Any, **kwargs: Any) -> Any:
        if import_names and import_names[0] == "torch":
            return None  # as if not importable: jedi then takes the stub alone
        return load(inference_state, import_names, *args, **kwargs)

    load_unless_torch.torchls_stub_only = True  # type: ignore[attr-defined]
    imports._load_builtin_module = load_unless_torch
    return True


class JediHost:
    """jedi for one Python environment; every method runs in the child process, one request at a time."""

    def __init__(self, interpreter: str | None = None) -> None:
        self.interpreter = interpreter
        self._environment: Any = None
        self.problem: str | None = None  # set when the configured interpreter could not be used
        self._state: Any = None  # jedi's InferenceState, shared by requests (see _share_state)
        self._state_since = 0.0
        self._memos: OrderedDict[tuple[str | None, int], dict] = OrderedDict()  # per text: jedi's memoized results

    def environment(self) -> Any:
        """The jedi environment; a broken interpreter falls back to the default one and sets ``problem``."""
        if self._environment is None:
            import jedi

            parso_guard.install()  # before jedi parses anything: a broken cache folder must not empty its answers
            read_torch_extensions_from_stubs()
            try:
                self._environment = find_environment(self.interpreter)
            except EnvironmentProblem as problem:
                self.problem = f"{problem}；torchls 改用默认的 Python 环境读取 torch。"
                self._environment = jedi.get_default_environment()
        return self._environment

    def environment_info(self) -> tuple[str, list[str], str | None]:
        """The environment's interpreter, its sys.path (empty when it cannot be read) and any problem."""
        environment = self.environment()
        try:
            sys_path = list(environment.get_sys_path())
        except Exception as error:  # a broken interpreter: torch's version file is then simply not found
            log.info("could not read the environment's sys.path: %s", error)
            sys_path = []
        return str(getattr(environment, "executable", "")), sys_path, self.problem

    def _script(self, text: str, path: str | None) -> Any:
        import jedi

        script = jedi.Script(text, path=path, environment=self.environment())
        self._share_state(script, text, path)
        return script

    def forget_inference(self) -> None:
        """Drop what jedi inferred about every module: after files change on disk (a save, a checkout)."""
        self._state = None
        self._memos.clear()

    def freeze(self) -> None:
        """After the warm-up: jedi now holds millions of long-lived objects (torch's parsed stubs); a full garbage
        collection walking them all stalls requests for half a second at random moments. Keep them out of it."""
        memory.settle()

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

    def infer_end(self, code: str) -> None:
        """Infer the last name of ``code``: makes jedi read the modules it reaches (warm-up)."""
        lines = code.splitlines()
        try:
            self._script(code, None).infer(len(lines), len(lines[-1]))
        except Exception as error:
            log.info("warm-up of %r failed: %s", code, error)

    def list_members(self, qualname: str, instance: bool) -> tuple[tuple[str, ...], dict[str, str]] | None:
        """The public members of a module or class (``instance``: of an instance of it) and the kinds its
        definitions' syntax tells, as jedi completes them; None when jedi failed."""
        reach = import_line(qualname)
        code = f"{reach}\n_value: {qualname}\n_value." if instance else f"{reach}\n{qualname}."
        lines = code.splitlines()
        try:
            completions = self._script(code, None).complete(len(lines), len(lines[-1]))
            names = tuple(c.name for c in completions if not c.name.startswith("__"))
            kinds = {c.name: kind for c in completions if (kind := _definition_kind(c))}
        except Exception as error:
            log.warning("jedi could not list members of %s: %s", qualname, error)
            return None
        return names, kinds

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
        memory.settle()  # the new tree lives as long as the document is open: out of later collections

    def describe(self, public_name: str) -> SymbolDoc | None:
        """What the installed torch says about a public name (signatures, English parameter docs)."""
        code = f"{import_line(public_name)}\n{public_name}"
        lines = code.splitlines()
        try:
            # Not filtered to torch: ``torch.pi`` is ``math.pi`` and ``torch.jit.Final`` is ``typing.Final``.
            names = self._script(code, None).goto(len(lines), len(lines[-1]), follow_imports=True)
            if names:
                return _symbol_doc(names[0])
        except Exception as error:
            log.info("jedi could not describe %s: %s", public_name, error)
        return None

    def resolve_at(self, text: str, path: str | None, line: int, column: int) -> JediHit | None:
        """The torch symbol at 0-based ``line`` and code-point ``column``, as jedi sees it; None if not torch."""
        lines = text.splitlines() or [""]
        if line >= len(lines) or column > len(lines[line]):
            return None
        try:
            script = self._script(text, path)
            defined = [n for n in script.goto(line + 1, column, follow_imports=True) if _is_torch(n)]
            definitions = [n for n in defined if n.type != "instance"]
            if definitions:
                return JediHit(_symbol_doc(definitions[0]), is_instance=False) if _one_api(definitions) else None
            inferred = [n for n in script.infer(line + 1, column) if _is_torch(n)]
            if inferred and _one_api(inferred):
                return JediHit(_symbol_doc(inferred[0]), is_instance=inferred[0].type == "instance")
        except Exception as error:  # jedi has internal errors on broken code; no hover is the right answer
            log.info("jedi failed at %s:%s:%s: %s", path, line, column, error)
        return None


# ------------------------------------------------------------------------------------------ the wire


_METHODS = frozenset(
    "environment_info forget_inference freeze infer_end list_members complete_at receiver_types preparse "
    "describe resolve_at".split()
)


def serve(host: JediHost, requests: IO[bytes], answers: IO[bytes]) -> None:
    """Answer requests until the server closes the pipe. A failing method answers with its error, never ends
    the loop; a server that has gone (its pipe closed, or broken while an answer was written) ends it quietly:
    that is how a restart during the warm-up looks from here."""
    try:
        _answer_requests(host, requests, answers)
    except (BrokenPipeError, ConnectionResetError):
        log.debug("jedi host: the server has gone")


def _answer_requests(host: JediHost, requests: IO[bytes], answers: IO[bytes]) -> None:
    while True:
        try:
            method, args = read_frame(requests)  # type: ignore[misc]
        except (EOFError, OSError):
            return
        except (WireError, TypeError, ValueError) as error:  # read whole: the next frame is still in step
            write_frame(answers, ("error", f"unreadable request: {error}"))
            continue
        if method not in _METHODS:
            write_frame(answers, ("error", f"unknown method {method!r}"))
            continue
        try:
            reply: tuple[str, object] = ("ok", getattr(host, method)(*args))
        except Exception as error:
            log.exception("jedi host: %s failed", method)
            reply = ("error", f"{type(error).__name__}: {error}")
        try:
            write_frame(answers, reply)
        except WireError as error:  # refused before anything was written
            log.error("jedi host: the answer of %s is not plain data: %s", method, error)
            write_frame(answers, ("error", f"the answer of {method} could not be sent: {error}"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchls.jedi_host", description="torchls 的 jedi 子进程")
    parser.add_argument("--interpreter", default=None)
    parser.add_argument("--log-level", type=int, default=logging.WARNING)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s: %(message)s"
    )
    # Answers own the real stdout; anything else printed (by jedi, a library) goes to stderr instead.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        serve(JediHost(args.interpreter), sys.stdin.buffer, answers)
    except KeyboardInterrupt:  # the editor stopped the whole process group: nothing to report
        return 130
    finally:
        with contextlib.suppress(OSError):  # the server has gone: what was left unsent no longer matters
            answers.close()
    return 0


class HostProcess:
    """The server's handle on the jedi process: started on the first call, started again after it dies.

    Calls come from one thread at a time (the resolver's worker); :meth:`close` may come from any thread.
    """

    def __init__(self, interpreter: str | None) -> None:
        self.interpreter = interpreter
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()  # the process handle: taken by calls and by close
        self._exchange = threading.Lock()  # one request and its answer at a time on the pipes
        self._closed = False

    def _start(self) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "torchls.jedi_host", "--log-level", str(logging.getLogger().level)]
        if self.interpreter:
            command += ["--interpreter", self.interpreter]
        try:
            # stderr is inherited: the host's log lines join the server's, in the editor's output panel.
            return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        except OSError as error:
            raise HostError(f"could not start the jedi process: {error}") from error

    def call(self, method: str, *args: object) -> object:
        """The host's answer to ``method(*args)``; raises :class:`HostError` when it cannot give one."""
        with self._exchange:
            return self._call(method, args)

    def _call(self, method: str, args: tuple) -> object:
        with self._lock:
            if self._closed:
                raise HostClosed("the resolver is closed")
            if self._process is None or self._process.poll() is not None:
                if self._process is not None:
                    log.warning("the jedi process ended (exit code %s); starting it again", self._process.returncode)
                self._process = self._start()
            process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            write_frame(process.stdin, (method, args))
            status, value = read_frame(process.stdout)  # type: ignore[misc]
        except WireError as error:  # the frame was read whole: the pipes are still in step
            raise HostError(f"the jedi process sent an answer to {method} that is not plain data: {error}") from error
        except (OSError, EOFError, ValueError, TypeError) as error:
            raise HostError(f"the jedi process did not answer {method}: {error!r}") from error
        if status != "ok":
            raise HostError(f"the jedi process failed in {method}: {value}")
        return value

    def close(self) -> None:
        """End the process: closing its stdin ends its loop; one that does not end soon is killed."""
        with self._lock:
            self._closed = True
            process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()
        except OSError:
            pass
        # Reaped on a thread: the caller (the event loop, on an interpreter change) must not wait for it.
        threading.Thread(target=_reap, args=(process,), name="torchls-jedi-reaper", daemon=True).start()


def _reap(process: subprocess.Popen[bytes]) -> None:
    """Wait for a host whose stdin was closed; kill one still busy with a long request after a few seconds."""
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


if __name__ == "__main__":
    sys.exit(main())
