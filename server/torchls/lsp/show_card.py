"""The full card as a Markdown document: the ``torchls.showCard`` command and the "查看完整卡片" code action.

The command writes the entry's full card to a file (:mod:`torchls.cards`), asks the client to open it with
``window/showDocument`` where the client can, and returns the Markdown too (a client without showDocument, such
as Neovim 0.7, puts it in a buffer itself). Two ways to reach it:

- the compact hover card's last line, ``[完整卡片](command:torchls.showCard?...)``, for a client that announces it
  runs that command from Markdown links: ``{"experimental": {"commandLinks": ["torchls.showCard"]}}`` in its
  capabilities (the torchls VS Code extension does, and trusts that one command in hovers);
- the code action "查看完整卡片：<name>" on the symbol, for every client.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from torchls.kb.render import SHOW_CARD_COMMAND
from torchls.lsp.server import TorchLanguageServer

# Its own kind, outside `source.*` (which VS Code keeps out of the light bulb) and not a quick fix.
SHOW_CARD_KIND = "torchls.showCard"


def client_runs_card_links(ls: TorchLanguageServer) -> bool:
    """True when the client said it runs ``torchls.showCard`` from a Markdown link (see the module docstring)."""
    links = ls.client_experimental("commandLinks")
    return isinstance(links, list) and SHOW_CARD_COMMAND in links


async def actions(ls: TorchLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """The action "查看完整卡片：<name>" on a torch symbol that has a knowledge-base entry."""
    entry = await ls.entry_for_action(params, SHOW_CARD_KIND)
    if entry is None:
        return []
    title = f"查看完整卡片：{entry.name}"
    command = types.Command(title=title, command=SHOW_CARD_COMMAND, arguments=[{"name": entry.name}])
    return [types.CodeAction(title=title, kind=SHOW_CARD_KIND, command=command)]


def _requested_name(arguments: tuple[Any, ...]) -> str | None:
    """The entry's name from ``[{"name": ...}]`` (what the link and the action send) or ``["name"]``."""
    raw = arguments[0] if arguments else None
    if isinstance(raw, dict):
        raw = raw.get("name")
    return raw if isinstance(raw, str) and raw else None


def _client_shows_documents(ls: TorchLanguageServer) -> bool:
    window = ls.client_capabilities.window
    return bool(window and window.show_document and window.show_document.support)


async def show_card(ls: TorchLanguageServer, *arguments: Any) -> dict:
    """``torchls.showCard``: ``{"name", "markdown", "uri", "shown"}``, or ``{"error"}`` with a message shown."""
    from torchls.cards import find_entry, full_card

    session = ls.session
    name = _requested_name(arguments)
    if session is None or name is None:
        problem = f'{SHOW_CARD_COMMAND} 需要一个参数：{{"name": API 名}}' if session else "服务器还没有初始化。"
        ls.show(problem)
        return {"error": problem}
    entry = find_entry(session, name)
    if entry is None:
        problem = f"知识库里没有 `{name}` 的条目。"
        ls.show(problem)
        return {"error": problem}
    markdown, path = await full_card(session, entry)
    uri = path.as_uri() if path is not None else None
    shown = False
    if uri is not None and _client_shows_documents(ls):
        result = await ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True))
        shown = bool(result and result.success)
    if not shown and uri is not None:
        ls.show(f"{entry.name} 的完整卡片已写入 {path}", types.MessageType.Info)
    return {"name": entry.name, "markdown": markdown, "uri": uri, "shown": shown}


def register(server: TorchLanguageServer) -> None:
    server.command(SHOW_CARD_COMMAND)(show_card)
