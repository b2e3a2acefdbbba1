"""The "运行示例" code action and the ``torchls.runExample`` / ``torchls.cancelExample`` commands.

The action carries only the entry's name and the example's index: the command looks the code up in the
knowledge base, so nothing but a knowledge-base example ever runs, and only when the user picks the action. The
run is asynchronous (the server keeps answering), reported with a cancellable ``$/progress``; its summary goes to
``window/showMessage``, the whole output to ``window/logMessage`` (unless the client shows it itself: see
:func:`client_shows_output`), and the result is the command's return value.
One example runs at a time; a second request while one runs is refused with a message.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from lsprotocol import types

from torchls.lsp.server import TorchLanguageServer

log = logging.getLogger(__name__)

RUN_COMMAND = "torchls.runExample"
CANCEL_COMMAND = "torchls.cancelExample"
# Its own kind: VS Code keeps `source.*` actions out of the lightbulb, and this is not a quick fix either.
RUN_KIND = "torchls.runExample"

_MESSAGE_TYPES = {
    "ok": types.MessageType.Info,
    "failed": types.MessageType.Warning,
    "timeout": types.MessageType.Warning,
    "cancelled": types.MessageType.Info,
    "unavailable": types.MessageType.Warning,
    "error": types.MessageType.Error,
}


async def actions(ls: TorchLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """One action per runnable example of the torch symbol at the start of the requested range."""
    session = ls.session
    if session is None or not session.settings.run_example.enable:
        return []
    entry = await ls.entry_for_action(params, RUN_KIND)
    if entry is None or not entry.examples:
        return []
    from torchls.examples import offers

    interpreter = session.example_interpreter()
    info = session.runner.known(interpreter)
    if info is None:
        _probe_in_background(ls, interpreter)  # the next request knows the devices
    result = []
    for offer in offers(entry, session.settings.run_example.device, info):
        command = types.Command(
            title=offer.label,
            command=RUN_COMMAND,
            arguments=[{"name": offer.name, "index": offer.index, "device": offer.device}],
        )
        result.append(types.CodeAction(title=offer.label, kind=RUN_KIND, command=command))
    return result


def _probe_in_background(ls: TorchLanguageServer, interpreter: str | None) -> None:
    if ls.probe_task is not None and not ls.probe_task.done():
        return
    assert ls.session is not None

    async def probe() -> None:
        try:
            await ls.session.runner.probe(interpreter)  # type: ignore[union-attr]
        except Exception as error:  # reported when the user runs an example; nothing to say before
            log.info("probing %s for devices failed: %s", interpreter, error)

    ls.probe_task = asyncio.get_running_loop().create_task(probe())


def _request(arguments: tuple[Any, ...]) -> tuple[str, int, str | None] | str:
    """``(name, index, device)`` from the command's argument, or a Chinese message saying what is wrong."""
    raw = arguments[0] if arguments else None
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        return f'{RUN_COMMAND} 需要一个参数：{{"name": API 名, "index": 示例序号, "device": 可选的设备}}'
    index = raw.get("index", 0)
    device = raw.get("device")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        return f"示例序号应为非负整数，实际是 {index!r}"
    if device is not None and not isinstance(device, str):
        return f"设备应为字符串，实际是 {device!r}"
    return raw["name"], index, device


async def _progress(ls: TorchLanguageServer, title: str) -> str | None:
    """A cancellable progress report, when the client shows them; its token, or None."""
    window = ls.client_capabilities.window
    if not (window and window.work_done_progress):
        return None
    token = f"torchls-example-{uuid.uuid4()}"
    try:
        await ls.work_done_progress.create_async(token)
    except Exception as error:  # the client refused: run without a progress report
        log.info("the client did not create a progress token: %s", error)
        return None
    ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True, message="运行中…"))
    return token


async def run_command(ls: TorchLanguageServer, *arguments: Any) -> dict:
    """``torchls.runExample``: run one knowledge-base example; returns the result as JSON."""
    from torchls.runner import RunResult

    session = ls.session
    request = _request(arguments)
    if isinstance(request, str) or session is None:
        return _report(ls, RunResult("error", request if isinstance(request, str) else "服务器还没有初始化。"))
    name, index, device = request
    entry = session.kb.get(name)
    if entry is None or index >= len(entry.examples):
        return _report(ls, RunResult("error", f"知识库里没有 {name} 的第 {index + 1} 个示例。"))
    settings = session.settings.run_example
    if not settings.enable:
        return _report(ls, RunResult("error", "运行示例已在设置中关闭（torchls.runExample.enable）。"))
    if ls.example_task is not None and not ls.example_task.done():
        return _report(ls, RunResult("error", "已有一个示例正在运行；请等它结束，或用“取消”停止它之后再试。"))
    example = entry.examples[index]
    stop = asyncio.Event()
    task = asyncio.get_running_loop().create_task(
        session.runner.run(
            example.code,
            device=device or settings.device,
            interpreter=session.example_interpreter(),
            timeout=settings.timeout_seconds,
            memory_mb=settings.memory_limit_mb,
            stop=stop,
        )
    )
    ls.example_task, ls.example_stop = task, stop
    token = await _progress(ls, f"运行示例：{name}")
    if token is not None:  # the progress's cancel button stops the example
        ls.work_done_progress.tokens[token].add_done_callback(lambda done: stop.set() if done.cancelled() else None)
    try:
        result = await task
    finally:
        ls.example_task = ls.example_stop = None
        if token is not None:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="完成"))
            ls.work_done_progress.tokens.pop(token, None)
    if result.cpu_fallback:
        _offer_cpu(ls, name, index)
    return {**_report(ls, result, name, example.code), "name": name, "index": index}


def client_shows_output(ls: TorchLanguageServer) -> bool:
    """True when the client said it writes the command's result somewhere itself (``{"experimental":
    {"exampleOutput": "client"}}``, the torchls VS Code extension: its "torchls 示例" channel), so the output is not
    also logged to the server's channel."""
    return ls.client_experimental("exampleOutput") == "client"


def _report(ls: TorchLanguageServer, result, name: str | None = None, code: str | None = None) -> dict:
    ls.window_show_message(types.ShowMessageParams(type=_MESSAGE_TYPES[result.status], message=result.summary))
    if client_shows_output(ls):
        return {**result.to_json(), "code": code}
    parts = [f"[torchls] {result.summary}"]
    if code is not None:
        parts.append(f"--- 示例代码（{name}）---\n{code.rstrip()}")
    if result.stdout:
        parts.append(f"--- 输出 ---\n{result.stdout.rstrip()}")
    if result.stderr:
        parts.append(f"--- 错误输出 ---\n{result.stderr.rstrip()}")
    ls.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message="\n".join(parts)))
    return {**result.to_json(), "code": code}


def _offer_cpu(ls: TorchLanguageServer, name: str, index: int) -> None:
    """Ask, without blocking the command's answer, whether to run the same example on cpu instead."""
    window = ls.client_capabilities.window
    if not (window and window.show_message):
        return
    choice = "改在 cpu 上运行"

    async def ask() -> None:
        try:
            picked = await ls.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Warning,
                    message=f"{name} 的示例无法在所选设备上运行，要改在 cpu 上运行吗？",
                    actions=[types.MessageActionItem(title=choice)],
                )
            )
        except Exception as error:  # the client may not answer requests: nothing more to do
            log.info("showMessageRequest failed: %s", error)
            return
        if picked is not None and picked.title == choice:
            await run_command(ls, {"name": name, "index": index, "device": "cpu"})

    ls.background_tasks.add(task := asyncio.get_running_loop().create_task(ask()))
    task.add_done_callback(ls.background_tasks.discard)


async def cancel_command(ls: TorchLanguageServer, *_arguments: Any) -> dict:
    """``torchls.cancelExample``: stop the example that is running (for clients without a cancel button)."""
    if ls.example_stop is None or ls.example_task is None or ls.example_task.done():
        return {"cancelled": False, "message": "没有正在运行的示例。"}
    ls.example_stop.set()
    return {"cancelled": True, "message": "正在取消运行中的示例。"}


def register(server: TorchLanguageServer) -> None:
    server.command(RUN_COMMAND)(run_command)
    server.command(CANCEL_COMMAND)(cancel_command)
