"""Shared helpers for the end-to-end LSP tests: starting the real server and finding positions in text."""

from __future__ import annotations

import sys
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER_COMMAND = [sys.executable, "-m", "torchls", "serve"]
# The two ways editors start the server: the module and the console script (pip writes it beside python).
LAUNCHERS = {
    "python -m torchls": [sys.executable, "-m", "torchls"],
    "torchls": [str(Path(sys.executable).with_name("torchls"))],
}


def _recording_client() -> LanguageClient:
    """pytest-lsp's client, also recording the document version of each publishDiagnostics."""
    from pygls.protocol import default_converter
    from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.diagnostic_versions[params.uri] = params.version

    def converter():
        # lsprotocol reads every code action that has a `command` as a bare Command, dropping a CodeAction's kind
        # and title; editors tell them apart by the type of `command` (a string only in a bare Command).
        from typing import Union

        converter = default_converter()

        def command_or_action(value, _type):
            kind = types.Command if isinstance(value.get("command"), str) else types.CodeAction
            return converter.structure(value, kind)

        converter.register_structure_hook(Union[types.Command, types.CodeAction], command_or_action)  # noqa: UP007
        return converter

    client = LanguageClient(converter_factory=converter)
    client.diagnostic_versions = {}
    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish})
    return client


def server_config(cache_dir: Path, command: list[str] = SERVER_COMMAND) -> ClientServerConfig:
    """The real server over stdio (started with ``command``), with its knowledge cache in a private folder."""
    import os

    env = {**os.environ, "TORCHLS_CACHE_DIR": str(cache_dir)}
    return ClientServerConfig(server_command=command, server_env=env, client_factory=_recording_client)


def utf16_position(text: str, line_contains: str, symbol: str, offset: int = 1) -> types.Position:
    """The UTF-16 position ``offset`` code points into ``symbol`` on the first line containing ``line_contains``.

    Computed independently of torchls (by encoding the prefix), so the test checks the server's conversion.
    """
    lines = text.splitlines()
    line = next(i for i, content in enumerate(lines) if line_contains in content)
    start = lines[line].index(symbol, lines[line].index(line_contains))
    prefix = lines[line][: start + offset]
    return types.Position(line, len(prefix.encode("utf-16-le")) // 2)


async def open_document(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )


async def hover(client: LanguageClient, uri: str, position: types.Position) -> types.Hover | None:
    return await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri), position=position)
    )


def vscode_capabilities() -> types.ClientCapabilities:
    """pytest-lsp's record of VS Code's capabilities, with ``labelDetailsSupport`` (announced since 1.63) and
    notebook synchronization (since 1.72, with vscode-languageclient 8), which the record predates."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.text_document.completion.completion_item.label_details_support = True  # type: ignore[union-attr]
    if capabilities.notebook_document is None:
        capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
            synchronization=types.NotebookDocumentSyncClientCapabilities(execution_summary_support=True)
        )
    return capabilities


def vscode_initialize(root: Path, options: object = None) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=vscode_capabilities(),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=options,
    )


async def start_warm_in(client: LanguageClient, root: Path) -> None:
    """Initialize like VS Code in the workspace ``root`` and wait for the warm-up. Tests name their documents
    ``root/case_N.py`` with ``client.documents`` counting them."""
    await client.initialize_session(vscode_initialize(root))
    client.root = root  # type: ignore[attr-defined]
    client.documents = 0  # type: ignore[attr-defined]
    await wait_until_warm(client)


async def open_in_warm_workspace(client: LanguageClient, tmp_path_factory, name: str, source: str) -> list:
    """Initialize like VS Code in a new workspace, open ``source`` there as ``name`` (``client.example_uri``) and
    wait for the warm-up, so cases that need jedi do not race its cold start; returns the warm-up's reports."""
    root = tmp_path_factory.mktemp("workspace")
    await client.initialize_session(vscode_initialize(root))
    path = root / name
    path.write_text(source, encoding="utf-8")
    client.example_uri = path.as_uri()  # type: ignore[attr-defined]
    await open_document(client, client.example_uri, source)  # type: ignore[attr-defined]
    return await wait_until_warm(client)


async def wait_until_warm(client: LanguageClient, timeout: float = 180.0) -> list:
    """Wait for the server's warm-up ``$/progress`` to end, and the reading of signatures it begins before it ends
    (so a test sees every entry's live signature); returns the warm-up token's reports."""
    import asyncio

    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        ended = {token: reports for token, reports in client.progress_reports.items() if _ended(reports)}
        warm_up = [reports for token, reports in ended.items() if str(token).startswith("torchls-warmup-")]
        if warm_up and len(ended) == len(client.progress_reports):
            return warm_up[0]
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the server never finished warming up")
        await asyncio.sleep(0.1)


def _ended(reports: list) -> bool:
    return bool(reports) and isinstance(reports[-1], types.WorkDoneProgressEnd)


async def wait_for(condition, timeout: float = 30.0, message: str = "timed out waiting for the server") -> None:
    import asyncio

    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(message)
        await asyncio.sleep(0.02)


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (UTF-16 positions) to ``text``, as an editor does; independent of torchls's own code."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        before = sum(len(line) + 1 for line in lines[: position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        units = 0
        for index, char in enumerate(line):
            if units >= position.character:
                return before + index
            units += 2 if ord(char) > 0xFFFF else 1
        return before + len(line)

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = offset(edit.range.start), offset(edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
        lines = text.split("\n")
    return text


async def start_server(command: list[str], env: dict[str, str], cwd: Path | None = None) -> LanguageClient:
    """The recording client, connected over stdio to a server started with ``command`` in ``cwd`` with exactly
    ``env`` (for a server installed elsewhere than this checkout, such as the wheel's)."""
    client = _recording_client()
    await client.start_io(*command, env=env, cwd=cwd)
    return client


def frame(message: dict) -> bytes:
    """A JSON-RPC message as it goes over stdio."""
    import json

    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_message(stream) -> dict:
    """The next message the server wrote on ``stream`` (raw bytes, so nothing the server writes is hidden)."""
    import json

    length = None
    while True:
        line = stream.readline()
        assert line, "the server closed its output"
        if not line.strip():
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.lower() == "content-length":
            length = int(value)
    assert length is not None
    return json.loads(stream.read(length))
