"""Running a knowledge-base example from the editor, end to end: the code action, the command, its progress and
cancellation, what the user is told, and a server that keeps answering while an example runs."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
import torch
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import hover, open_document, server_config, utf16_position, vscode_initialize, wait_for

NO_CUDA = not torch.cuda.is_available()

SOURCE = """\
import torch.nn as nn

说明 = "损失 🎯"; criterion = nn.CrossEntropyLoss()
说明 = "慢 🐢"; slow = nn.PixelUnshuffle(2)
说明 = "不是 torch 🐍"; total = sum([1, 2])
"""

# A team knowledge folder: an entry whose example runs for two minutes unless stopped. It uses DEVICE, as team
# entries written before the device line (DEVICE_LINE) do: the runner still defines it for them.
SLOW_ENTRY = """\
name: torch.nn.PixelUnshuffle
kind: class
summary: 团队条目：把空间维度折进通道维；这里只用来测试长时间运行的示例。
examples:
  - title: 运行很久的示例
    code: |
      import os, time
      print("开始", DEVICE, os.getpid(), flush=True)
      time.sleep(120)
pitfalls:
  - text: 这个条目只用于测试。
see_also: [torch.nn.PixelShuffle]
"""


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-run-"))), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    team = root / "team-knowledge" / "torch" / "nn"
    team.mkdir(parents=True)
    (team / "PixelUnshuffle.yaml").write_text(SLOW_ENTRY, encoding="utf-8")
    options = {"knowledgePaths": ["team-knowledge"], "runExample": {"device": "cpu", "timeoutSeconds": 60}}
    await lsp_client.initialize_session(vscode_initialize(root, options))
    lsp_client.uri = (root / "example.py").as_uri()
    await open_document(lsp_client, lsp_client.uri, SOURCE)
    yield
    await lsp_client.shutdown_session()


async def _actions(client: LanguageClient, line_contains: str, symbol: str) -> list[types.CodeAction]:
    position = utf16_position(SOURCE, line_contains, symbol)
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(client.uri),
            range=types.Range(position, position),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return [action for action in result or [] if action.kind == "torchls.runExample"]


async def _execute(client: LanguageClient, arguments: dict) -> dict:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchls.runExample", arguments=[arguments])
    )


async def test_the_action_is_offered_per_example_and_runs_it(client: LanguageClient):
    actions = await _actions(client, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss")
    assert len(actions) == 2, [a.title for a in actions]  # the shipped entry has two examples
    assert all(a.title.startswith("在 cpu 上运行示例：torch.nn.CrossEntropyLoss（") for a in actions)
    command = actions[0].command
    assert command.command == "torchls.runExample"
    assert list(command.arguments) == [{"name": "torch.nn.CrossEntropyLoss", "index": 0, "device": "cpu"}]

    shown = len(client.messages)
    result = await _execute(client, command.arguments[0])
    assert result["status"] == "ok", result
    assert result["stdout"].strip() == "True torch.Size([4, 10])"
    assert result["device"] == "cpu" and result["torch_version"] == torch.__version__
    assert "nn.CrossEntropyLoss()" in result["code"]
    await wait_for(lambda: len(client.messages) > shown)
    assert "运行成功" in client.messages[-1].message
    assert any("torch.Size([4, 10])" in log.message and "示例代码" in log.message for log in client.log_messages)


async def test_no_action_where_there_is_no_example(client: LanguageClient):
    assert not await _actions(client, "total = sum", "sum")
    assert not await _actions(client, '说明 = "损失', "说明")


@pytest.mark.skipif(not NO_CUDA, reason="this machine has CUDA")
async def test_cuda_on_a_machine_without_it_is_explained_and_cpu_is_offered(client: LanguageClient):
    answered: list[types.ShowMessageRequestParams] = []

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def choose_cpu(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
        answered.append(params)
        return params.actions[0]

    result = await _execute(client, {"name": "torch.nn.CrossEntropyLoss", "index": 0, "device": "cuda"})
    assert result["status"] == "unavailable" and result["cpu_fallback"]
    assert "cuda" in result["summary"] and torch.__version__ in result["summary"]
    assert not result["stdout"]
    # The user accepts the offer: the same example runs on cpu.
    await wait_for(lambda: any("运行成功" in m.message for m in client.messages[-1:]), timeout=60)
    assert answered and answered[0].actions[0].title == "改在 cpu 上运行"


async def test_hover_answers_while_an_example_runs_and_the_progress_cancels_it(client: LanguageClient):
    tokens_before = set(client.progress_reports)
    run = asyncio.ensure_future(_execute(client, {"name": "torch.nn.PixelUnshuffle", "index": 0}))
    await wait_for(lambda: set(client.progress_reports) - tokens_before, message="no progress for the run")
    token = next(iter(set(client.progress_reports) - tokens_before))

    # The server keeps working: a hover comes back at once.
    answer = await asyncio.wait_for(
        hover(client, client.uri, utf16_position(SOURCE, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss")), 10
    )
    assert answer is not None and "交叉熵" in answer.contents.value
    # A second run is refused while this one is going.
    busy = await _execute(client, {"name": "torch.nn.CrossEntropyLoss", "index": 0})
    assert busy["status"] == "error" and "正在运行" in busy["summary"]

    await asyncio.sleep(1.0)  # let the example print its pid
    client.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(run, 30)
    assert result["status"] == "cancelled", result
    printed = next(log.message for log in reversed(client.log_messages) if "开始 cpu" in log.message)
    pid = int(printed.split("开始 cpu ", 1)[1].split()[0])
    assert not Path(f"/proc/{pid}").exists() or "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    reports = client.progress_reports[token]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].cancellable
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    idle = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchls.cancelExample", arguments=[])
    )
    assert idle["cancelled"] is False


async def test_the_timeout_setting_stops_a_long_example(client: LanguageClient):
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"torchls": {"runExample": {"timeoutSeconds": 2}}})
    )
    try:
        for _ in range(50):  # the setting applies once the server has read the change
            result = await _execute(client, {"name": "torch.nn.PixelUnshuffle", "index": 0})
            if result["status"] == "timeout":
                break
        assert result["status"] == "timeout", result
        assert "2 秒" in result["summary"] and "开始 cpu" in result["stdout"]
    finally:
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"torchls": {"runExample": {"timeoutSeconds": 60}}})
        )


async def test_bad_arguments_get_a_clear_message(client: LanguageClient):
    missing = await _execute(client, {"name": "torch.nn.CrossEntropyLoss", "index": 9})
    assert missing["status"] == "error" and "第 10 个示例" in missing["summary"]
    wrong = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="torchls.runExample", arguments=["torch.nn.Linear"])
    )
    assert wrong["status"] == "error" and "需要一个参数" in wrong["summary"]


async def test_the_switch_turns_the_action_off(client: LanguageClient):
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"torchls": {"runExample": {"enable": False}}})
    )
    try:
        for _ in range(100):
            if not await _actions(client, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss"):
                break
            await asyncio.sleep(0.05)
        assert not await _actions(client, "criterion = nn.CrossEntropyLoss", "CrossEntropyLoss")
    finally:
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"torchls": {"runExample": {"enable": True}}})
        )
