"""The state one editor session needs: settings, the knowledge base, the jedi resolver, parsed documents.

The LSP layer owns one Session and calls into it; the session knows nothing about LSP. Applying settings
returns the Chinese messages the user should see (bad values, broken knowledge files, a missing interpreter).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torchls.core.findings import Severity

if TYPE_CHECKING:
    from torchls.core.checker import CheckResult
    from torchls.core.values_at import FileValues
from torchls.check_worker import CheckWorker
from torchls.core.names import ModuleIndex
from torchls.core.parsing import parse_tolerant
from torchls.core.receivers import node_key
from torchls.core.text import SourceText
from torchls.kb.base import KnowledgeBase
from torchls.kb.files import file_manifest
from torchls.kb.identity import Identity
from torchls.project import ProjectModules
from torchls.resolve import Resolver, check_interpreter
from torchls.runner import Runner
from torchls.settings import Settings
from torchls.uris import path_of

log = logging.getLogger(__name__)
_MAX_REPORTED_KB_ERRORS = 5
_JEDI_HOVERS_KEPT = 512
_PARTIAL_INDEXES_KEPT = 8


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


@dataclass(slots=True)
class _IndexedDocument:
    version: int | None
    text: str
    index: ModuleIndex
    blanked_lines: frozenset[int]
    lines: list[str]  # of ``text``; the index may be of an earlier text (see Session.index_for_line)
    _values: FileValues | None = None
    _values_started: bool = False

    def values(self) -> FileValues:
        """The checker's analysis of this version (values by position), computed on first use."""
        if self._values is None:
            from torchls.core.values_at import FileValues  # the checker's modules: loaded on the first such hover

            values = FileValues(self.index.tree, SourceText(self.text))
            if self.index.source.text == self.text:  # not an earlier text's index (see Session.index_for_line)
                self.index.use_analysis(values.class_of)  # receivers from the checker's analysis from now on
            self._values = values
        return self._values

    def values_if_ready(self) -> FileValues | None:
        """The analysis when it is computed; else start computing it in a thread and answer None.

        Evaluating a long file takes tens of milliseconds: a hover does not wait for it, the next one uses it."""
        if self._values is None and not self._values_started:
            self._values_started = True
            threading.Thread(target=self.values, name="torchls-values", daemon=True).start()
        return self._values


def _attach(document: _IndexedDocument, receivers: dict) -> None:
    """Let the document's index read receivers from the checker's table (see core/receivers.py)."""
    if document.index.source.text == document.text:
        document.index.use_analysis(lambda node: receivers.get(node_key(node)))


class Session:
    def __init__(self, settings: Settings | None = None, workspace_root: str | None = None) -> None:
        self.settings = Settings()
        self.workspace_root = workspace_root
        self._kb: KnowledgeBase | None = None  # loaded after `initialize` answered (see ensure_knowledge)
        self._loaded_manifests: dict[Path, tuple] = {}  # the team folders' files when the knowledge was loaded
        self.knowledge_messages: list[str] = []  # problems found by the last load, not yet shown
        self.resolver = Resolver()
        # The interpreter's torch names per object (kb.identity), built in a thread; until then no climbs.
        self.identity: Identity | None = None
        self.identity_future: Future[Identity | None] = Future()  # the build in progress; see _build_identity
        self.identity_future.set_result(None)
        self._interpreter: str | None = None
        self._check_worker = CheckWorker()  # its process starts with the first check
        self._documents: dict[str, _IndexedDocument] = {}
        self._checked: dict[str, tuple] = {}  # uri -> (version, text, receiver classes) from the last check
        # Versions being indexed now, on the indexing thread or the event loop: a second caller waits for the first.
        self._indexing: dict[str, tuple[int | None, str, threading.Event]] = {}
        self._indexing_lock = threading.Lock()
        # jedi's answer for each hovered place, by (uri, version, line, column): asked once, served to later hovers.
        self.jedi_hovers: OrderedDict[tuple, Future] = OrderedDict()
        self._partial_indexes: OrderedDict[tuple, tuple] = OrderedDict()  # see partial_index
        self.completion_lists: dict[tuple, list] = {}  # built completion lists; they depend on the knowledge base
        self.prefetched: set[str] = set()  # documents whose torch classes' members were asked of jedi
        self.project = ProjectModules()  # what the project's other modules export, read as the fast path needs it
        self.runner = Runner()  # runs knowledge-base examples; remembers what each interpreter's torch has
        self.startup_messages = self.apply_settings(settings or Settings(), force=True, load_knowledge=False)

    @property
    def kb(self) -> KnowledgeBase:
        if self._kb is None:
            self.knowledge_messages = self.reload_knowledge()
        return self._kb  # type: ignore[return-value]

    def ensure_knowledge(self) -> list[str]:
        """Load the knowledge base if it is not loaded yet; returns the problems not shown yet."""
        _ = self.kb
        messages, self.knowledge_messages = self.knowledge_messages, []
        return messages

    # ------------------------------------------------------------------------------------- settings

    def apply_settings(self, settings: Settings, force: bool = False, load_knowledge: bool = True) -> list[str]:
        """Switch to ``settings``; reload only what changed. Returns messages for the user.

        ``load_knowledge=False`` leaves the knowledge base to be loaded on first use (``initialize`` answers first).
        """
        messages: list[str] = []
        previous, self.settings = self.settings, settings
        if force or settings.knowledge_paths != previous.knowledge_paths:
            if load_knowledge:
                messages.extend(self.reload_knowledge())
            else:
                self._kb = None
        if force or settings.interpreter != previous.interpreter:
            interpreter = settings.interpreter
            problem = check_interpreter(interpreter)
            if problem:
                messages.append(f"{problem}；torchls 改用默认的 Python 环境读取 torch。")
                interpreter = None
            self.resolver.close()
            self.resolver = Resolver(interpreter)
            self._interpreter = interpreter
            self._build_identity(forget=True)
        return messages

    def _build_identity(self, forget: bool) -> None:
        """Read (or build: seconds, it imports torch) the identity table of the interpreter's torch in a thread,
        for the namespaces of the knowledge base (so it must be loaded). ``forget``: the old table is another
        torch's; otherwise it serves until the new one is in place. Without any table nothing climbs."""
        if forget:
            self.identity = None
            if self._kb is not None:
                self._kb.identity = None
        if self._kb is None:
            return  # built when the knowledge base is loaded: its entries name the modules to import
        interpreter, namespaces = self._interpreter, self._kb.namespaces
        future: Future[Identity | None] = Future()

        def build() -> None:
            from torchls.kb import identity

            try:
                table = identity.load(interpreter, namespaces)
            except Exception as error:  # best effort: without the table nothing climbs, nothing breaks
                log.warning("could not build the identity table: %s", error)
                table = None
            if future is self.identity_future:  # neither the interpreter nor the knowledge changed meanwhile
                self.identity = table
                if self._kb is not None:
                    self._kb.identity = table
            future.set_result(table)

        self.identity_future = future
        threading.Thread(target=build, name="torchls-identity", daemon=True).start()

    def knowledge_folders(self) -> list[Path]:
        folders = []
        for raw in self.settings.knowledge_paths:
            path = Path(raw).expanduser()
            if not path.is_absolute() and self.workspace_root:
                path = Path(self.workspace_root) / path
            folders.append(path)
        return folders

    def _team_manifests(self) -> dict[Path, tuple]:
        """What the configured knowledge folders hold now (file, mtime, size), to notice edits."""
        return {folder: file_manifest(folder) if folder.is_dir() else () for folder in self.knowledge_folders()}

    def knowledge_changed(self) -> bool:
        """True when a file in a configured knowledge folder was added, edited or removed since the last load
        (the shipped folder does not change under a running server)."""
        return self._kb is not None and self._team_manifests() != self._loaded_manifests

    def reload_knowledge(self) -> list[str]:
        """Load the shipped and configured knowledge folders; report broken files without losing the rest."""
        self._loaded_manifests = self._team_manifests()
        self._kb = KnowledgeBase.load(self.knowledge_folders())
        self._kb.identity = self.identity
        self._build_identity(forget=False)  # the entries' modules may have changed: read them too
        self.completion_lists.clear()
        errors = self._kb.errors
        if not errors:
            return []
        shown = "\n".join(str(e) for e in errors[:_MAX_REPORTED_KB_ERRORS])
        hidden = len(errors) - _MAX_REPORTED_KB_ERRORS
        more = f"\n……另有 {hidden} 处问题" if hidden > 0 else ""
        return [f"知识库中有 {len(errors)} 处问题，相关条目已跳过，其余条目正常使用：\n{shown}{more}"]

    # ------------------------------------------------------------------------------------ diagnostics

    def check_in_background(self, text: str) -> Future[CheckResult]:
        """The findings for a document's text under the current settings, computed in the checking process
        (empty when diagnostics are off)."""
        if not self.settings.diagnostics.enable:
            from torchls.core.checker import CheckResult

            done: Future[CheckResult] = Future()
            done.set_result(CheckResult([]))
            return done
        diagnostics = self.settings.diagnostics
        return self._check_worker.submit(text, diagnostics.select, diagnostics.ignore)

    def severity_name(self, code: str, severity: Severity) -> str:
        """``error``/``warning``/``information``/``hint`` for a finding, after the user's overrides."""
        overrides = [(prefix, level) for prefix, level in self.settings.diagnostics.severity if code.startswith(prefix)]
        if overrides:
            return max(overrides, key=lambda pair: len(pair[0]))[1]
        return {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "information"}[severity]

    # ------------------------------------------------------------------------------------ documents

    def partial_index(self, uri: str, text: str, version: int | None, line: int, with_init: bool) -> tuple:
        """A partial index of the block around ``line`` (core/first_look.py), kept for the next hovers in the same
        block of the same version while the full index is not built yet."""
        from torchls.core.first_look import kept_lines, partial_index

        key = (uri, version, hash(text), kept_lines(text, line, with_init))
        found = self._partial_indexes.get(key)
        if found is None:
            found = self._partial_indexes[key] = partial_index(text, line, with_init)
            while len(self._partial_indexes) > _PARTIAL_INDEXES_KEPT:
                self._partial_indexes.popitem(last=False)
        return found

    def remember_jedi_hover(self, key: tuple, future: Future) -> None:
        """Keep jedi's answer for a hover place, for the next hover there. Only the newest place's request may wait
        in jedi's queue: one that has not started yet when the user hovers elsewhere is cancelled (the pointer
        moved on), so a sweep over a file does not queue minutes of jedi work ahead of the place they stop at; a
        later hover at a cancelled place asks again."""
        for older, pending in list(self.jedi_hovers.items()):
            if not pending.running() and pending.cancel():
                del self.jedi_hovers[older]
        self.jedi_hovers[key] = future
        while len(self.jedi_hovers) > _JEDI_HOVERS_KEPT:
            self.jedi_hovers.popitem(last=False)

    def indexed(self, uri: str, text: str, version: int | None) -> _IndexedDocument | None:
        """The index of this document version if it is built already, without building it."""
        cached = self._documents.get(uri)
        return cached if cached is not None and cached.version == version and cached.text == text else None

    def index(self, uri: str, text: str, version: int | None) -> _IndexedDocument:
        """The parsed index of a document version, built once per version: a caller that finds it being built
        (the indexing thread starts on ``didOpen``) waits for that build rather than doing the same work again."""
        while True:
            with self._indexing_lock:
                cached = self.indexed(uri, text, version)
                if cached is not None:
                    return cached
                building = self._indexing.get(uri)
                if building is None or building[0] != version or building[1] != text:
                    done = threading.Event()
                    self._indexing[uri] = (version, text, done)
                    break
            building[2].wait()
        try:
            return self._build_index(uri, text, version)
        finally:
            with self._indexing_lock:
                if self._indexing.get(uri, (None, None, None))[2] is done:
                    del self._indexing[uri]
            done.set()

    def _build_index(self, uri: str, text: str, version: int | None) -> _IndexedDocument:
        parsed = parse_tolerant(text)
        location = self.project.locate(path_of(uri))
        module, returns = None, None
        if location is not None:
            module = (location.module, location.is_package)
            returns = functools.partial(self.project.returns, location.root)
        source = SourceText(text)
        index = ModuleIndex(parsed, source, module, returns)
        document = _IndexedDocument(version, text, index, parsed.blanked_lines, source.lines)
        self._documents[uri] = document
        checked = self._checked.get(uri)
        if checked is not None and checked[:2] == (version, text):
            _attach(document, checked[2])
        return document

    def use_checked_analysis(self, uri: str, version: int | None, text: str, receivers: dict | None) -> None:
        """The receiver classes the checking process proved for this version (``CheckResult.receivers``): its
        index answers receivers from them, now if it is built, else once it is."""
        if receivers is None:
            return
        self._checked[uri] = (version, text, receivers)
        document = self.indexed(uri, text, version)
        if document is not None:
            _attach(document, receivers)

    def index_for_line(self, uri: str, text: str, version: int | None, line: int) -> _IndexedDocument:
        """For completion and signature help on ``line``: the index of an earlier text of the document when the
        two differ on that line only (the user is typing on it), else :meth:`index`.

        What they ask the index about code on ``line`` depends on earlier lines only (bindings before it, the
        enclosing function, where the statement starts), so an index of a text that differs only on that line
        answers the same, without parsing and indexing the whole file again on each keystroke (250 ms for a
        5,000-line file, most of it in ``ast.parse``). Hover, which needs the line's own names, uses
        :meth:`index`.
        """
        cached = self._documents.get(uri)
        if cached is None or (cached.version == version and cached.text == text):
            return self.index(uri, text, version)
        lines = SourceText(text).lines
        old = cached.lines
        if (
            len(lines) != len(old)
            or not 0 <= line < len(lines)
            or (old[line].strip() and _indentation(lines[line]) != _indentation(old[line]))  # moved to another block
            or lines[:line] != old[:line]
            or lines[line + 1 :] != old[line + 1 :]
        ):
            return self.index(uri, text, version)
        return _IndexedDocument(version, text, cached.index, cached.blanked_lines, lines)

    def prepare_jedi(self, document: _IndexedDocument, text: str, path: str | None) -> None:
        """jedi's background work for a document just opened and indexed: the English docs of the torch names it
        uses that the knowledge base lacks, so that a hover on one finds them cached."""
        if "torch" not in text:
            return
        resolver = self.resolver
        for qualname in sorted(document.index.torch_names()):
            if self.kb.lookup(qualname) is None and resolver.cached_doc(qualname) is None:
                resolver.submit(resolver.describe, qualname, background=True)

    def forget(self, uri: str) -> None:
        self._documents.pop(uri, None)
        self._checked.pop(uri, None)
        self.prefetched.discard(uri)

    def example_interpreter(self) -> str | None:
        """The interpreter examples run in: its own setting, else the project's (``interpreter``)."""
        return self.settings.run_example.interpreter or self.settings.interpreter

    def close(self) -> None:
        self.resolver.close()
        self._check_worker.close()
