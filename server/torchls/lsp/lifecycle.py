"""initialize / initialized / configuration changes / shutdown, and the jedi warm-up with ``$/progress``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from lsprotocol import types

from torchls import memory
from torchls.lsp import completion, diagnostics
from torchls.lsp.server import TorchLanguageServer
from torchls.settings import Settings, parse_settings

if TYPE_CHECKING:
    from torchls.resolve import Resolver

log = logging.getLogger(__name__)
KNOWLEDGE_POLL_SECONDS = 1.0  # how often team knowledge folders are checked for edits


def _workspace_root(params: types.InitializeParams) -> str | None:
    from pygls.uris import to_fs_path

    if params.workspace_folders:
        return to_fs_path(params.workspace_folders[0].uri)
    if params.root_uri:
        return to_fs_path(params.root_uri)
    return params.root_path


def _apply(ls: TorchLanguageServer, raw: object) -> bool:
    """Apply raw client settings; report problems. True when the jedi environment changed."""
    assert ls.session is not None
    settings, problems = parse_settings(raw, ls.session.settings)
    before = ls.session.resolver
    previous = ls.session.settings
    problems.extend(ls.session.apply_settings(settings))
    for problem in problems:
        ls.show(problem)
    if settings.diagnostics != previous.diagnostics or settings.knowledge_paths != previous.knowledge_paths:
        diagnostics.recheck_all(ls)
    return ls.session.resolver is not before


def client_tells_missing_torch(ls: TorchLanguageServer) -> bool:
    """True when the client checks the interpreter for torch itself and tells the user (``{"experimental":
    {"missingTorch": "client"}}``, the torchls VS Code extension), so the server's own notification would repeat
    it."""
    return ls.client_experimental("missingTorch") == "client"


def _supports_configuration(ls: TorchLanguageServer) -> bool:
    workspace = ls.client_capabilities.workspace
    return bool(workspace and workspace.configuration)


async def _pull_configuration(ls: TorchLanguageServer) -> object | None:
    try:
        result = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section="torchls")])
        )
    except Exception as error:  # a client that advertises but fails the request: keep current settings
        log.info("workspace/configuration failed: %s", error)
        return None
    return result[0] if result else None


async def _begin_progress(ls: TorchLanguageServer, kind: str, title: str, message: str) -> str | None:
    """A ``$/progress`` token begun with ``title``, or None when the client takes no progress reports."""
    window = ls.client_capabilities.window
    if not (window and window.work_done_progress):
        return None
    token = f"torchls-{kind}-{uuid.uuid4().hex[:8]}"
    try:
        await ls.work_done_progress.create_async(token)
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, message=message, percentage=0))
    except Exception as error:
        log.info("client refused a progress token: %s", error)
        return None
    return token


async def _run_steps(
    ls: TorchLanguageServer, resolver: Resolver, steps: list[tuple[str, Callable[[], object]]], token: str | None
) -> None:
    """Run warm-up ``steps`` one by one at background priority (a user's request goes first), reporting on
    ``token``; stops when the interpreter changes (a new warm-up has started) or the jedi process fails."""
    session = ls.session
    for index, (label, step) in enumerate(steps):
        if session is None or resolver is not session.resolver:
            break
        try:
            await asyncio.wrap_future(resolver.submit(step, background=True))
        except Exception as error:  # executor closed or jedi failure: warm-up is best effort
            log.info("warm-up step %s failed: %s", label, error)
            break
        if token and (index % 10 == 0 or index == len(steps) - 1):
            ls.work_done_progress.report(
                token, types.WorkDoneProgressReport(message=label, percentage=(index + 1) * 100 // len(steps))
            )


async def warm_up(ls: TorchLanguageServer) -> None:
    """Pay jedi's cold cost in the background, one small step at a time, reporting ``$/progress``.

    Two reports: "torchls 预热" until torch is read and completion's namespaces are listed (torchls is then
    ready), and "torchls 读取签名" while the knowledge-base entries' live signatures are read and saved (in a new
    environment most of the time; a hover on an entry not read yet reads its own first)."""
    session = ls.session
    assert session is not None
    resolver = session.resolver
    token = await _begin_progress(ls, "warmup", "torchls 预热", "正在读取 torch")
    await _run_steps(ls, resolver, resolver.ready_plan(), token)
    resolver.warm.set()
    if resolver is session.resolver:
        await completion.prepare_lists(ls)  # the first ``torch.`` after warm-up does not build them
    # jedi now holds millions of long-lived objects (torch's parsed stubs); a full garbage collection walking
    # them all would stall its requests for half a second at random moments. Freeze them out of collections,
    # and the server's own long-lived objects (the knowledge base) too.
    resolver.submit(resolver.freeze, background=True)
    memory.settle()
    if resolver is session.resolver:
        if resolver.problem:
            ls.show(resolver.problem)
        try:
            torch_problem = await asyncio.wrap_future(resolver.submit(resolver.torch_problem, background=True))
        except Exception as error:  # the executor closed: the interpreter changed meanwhile
            log.info("could not check torch in the environment: %s", error)
            torch_problem = None
        if torch_problem and client_tells_missing_torch(ls) and resolver.torch_version() is None:
            # The client already said so, with a way to choose another interpreter: only the log gets it.
            ls.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=torch_problem))
        elif torch_problem:
            ls.show(torch_problem)
    names = sorted(session.kb.entries) if resolver is session.resolver else []
    # Begun before the first report ends, so a client never sees a moment with no torchls progress open.
    signatures_token = await _begin_progress(ls, "signatures", "torchls 读取签名", "正在读取知识库条目的签名")
    # Ready means names climb to their public cards too: that needs the identity table (a subprocess, usually
    # done before jedi is; read from the cache after the first start).
    with contextlib.suppress(Exception):
        await asyncio.wrap_future(session.identity_future)
    if token:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="torchls 已就绪"))
    # Off jedi's worker thread: the user's requests keep going to jedi while the sources are read.
    if signatures_token:
        report = types.WorkDoneProgressReport(message="从 torch 的源码读取签名", percentage=0)
        ls.work_done_progress.report(signatures_token, report)
    try:
        await asyncio.get_running_loop().run_in_executor(None, resolver.read_signatures, names)
    except Exception:  # jedi describes them all then, as before
        log.exception("reading the signatures from torch's sources failed")
    await _run_steps(ls, resolver, resolver.signature_plan(names), signatures_token)
    resolver.submit(resolver.freeze, background=True)  # what the signatures added, too
    if signatures_token:
        ls.work_done_progress.end(signatures_token, types.WorkDoneProgressEnd(message="签名已读取"))


async def watch_knowledge(ls: TorchLanguageServer) -> None:
    """Reload the knowledge base when a file in a team knowledge folder changes, without a restart.

    Polling (a directory walk of the team folders every :data:`KNOWLEDGE_POLL_SECONDS`) works in every editor and
    also sees edits made outside it (``git pull``); the shipped folder is never walked.
    """
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(KNOWLEDGE_POLL_SECONDS)
        session = ls.session
        if session is None or not session.settings.knowledge_paths:
            continue
        try:
            if not await loop.run_in_executor(None, session.knowledge_changed):
                continue
            # On the event loop: requests read the knowledge base and its derived lists there (cached: ~tens of ms).
            problems = session.reload_knowledge()
        except Exception:  # a watcher that dies silently would be worse than one noisy log line
            log.exception("reloading team knowledge failed")
            continue
        if session is not ls.session:
            continue  # the server restarted its session meanwhile
        for message in problems:
            ls.show(message)
        ls.window_log_message(
            types.LogMessageParams(
                type=types.MessageType.Info, message=f"团队知识库有改动，已重新加载（共 {len(session.kb)} 个条目）"
            )
        )


def _start_background(ls: TorchLanguageServer, work: Callable[[TorchLanguageServer], Awaitable[None]]) -> None:
    task = asyncio.get_running_loop().create_task(work(ls))
    ls.background_tasks.add(task)
    task.add_done_callback(ls.background_tasks.discard)


def _start_warm_up(ls: TorchLanguageServer) -> None:
    _start_background(ls, warm_up)


def register(server: TorchLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def on_initialize(ls: TorchLanguageServer, params: types.InitializeParams) -> None:
        settings, problems = parse_settings(params.initialization_options, Settings())
        # The answer needs no session: it is made on first use, once the client has its capabilities.
        ls.planned_session = (settings, _workspace_root(params))
        # initialize may not send notifications before its response: keep the messages for `initialized`.
        ls.pending_messages = list(problems)

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: TorchLanguageServer, params: types.InitializedParams) -> None:
        session = ls.session  # made here, before anything else can wait on the event loop
        assert session is not None
        for message in [*ls.pending_messages, *session.ensure_knowledge()]:
            ls.show(message)
        ls.pending_messages = []
        if _supports_configuration(ls):
            pulled = await _pull_configuration(ls)
            if pulled is not None:
                _apply(ls, pulled)
        _start_warm_up(ls)
        _start_background(ls, watch_knowledge)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_configuration(ls: TorchLanguageServer, params: types.DidChangeConfigurationParams) -> None:
        if ls.session is None:
            return
        raw = params.settings
        if (not raw or raw == {"torchls": None}) and _supports_configuration(ls):
            raw = await _pull_configuration(ls)
        if raw is not None and _apply(ls, raw):
            _start_warm_up(ls)

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: TorchLanguageServer, params: None) -> None:
        if ls.session is not None:
            ls.session.close()
