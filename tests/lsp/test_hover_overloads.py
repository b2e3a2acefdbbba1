"""A hover on the callee of a call shows the overload that call calls, chosen and spelled as signature help does
(:mod:`torchls.overload_choice`), whatever jedi's state: asked twice before the warm-up ends and twice after,
the card's first signature is the matching overload with no private alias of torch's stubs. A method reached
through ``.data`` of a tensor or a layer's weight is the tensor's.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import hover, open_document, server_config, utf16_position, vscode_initialize, wait_until_warm

SOURCE = """\
import torch
import torch.nn.functional as F

x = torch.randn(8, 3, 4)
t = torch.randn(4, 10)
flat = x.view(x.size(0), -1)
values, indices = torch.max(t, 1)
probabilities = F.softmax(x, dim=-1)
half = x.data.to(torch.float16)
layer = torch.nn.Linear(4, 2)
layer.weight.data.normal_(0, 0.02)
"""

# (line, callee, what the first signature must contain, what it must not)
CASES = [
    ("flat =", "view", r"^torch\.Tensor\.view\(\*", r"dtype"),
    ("torch.max(t, 1)", "max", r"^torch\.max\(input\b[^)]*\bdim\b", r"\bother\b"),
    ("F.softmax", "softmax", r"^torch\.nn\.functional\.softmax\(input\b[^)]*\bdim\b", r"_stacklevel"),
    # A method through ``.data`` is a tensor's (not ``torch.nn.Module.to``), ``self`` not shown: it is bound.
    ("half =", "to", r"^torch\.Tensor\.to\((?!self)", r"Module"),
    ("layer.weight.data", "normal_", r"^torch\.Tensor\.normal_\((?!self)", r"Module"),
]
# The private type aliases of torch's stubs, none of which may reach the user.
_PRIVATE_ALIAS = re.compile(r"(?<![\w.])_(?:int|bool|float|complex|dtype|device|layout|size\w*|ratio\w*)\b")


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-cache-"))))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    await lsp_client.initialize_session(vscode_initialize(root))
    path = root / "overloads.py"
    path.write_text(SOURCE, encoding="utf-8")
    lsp_client.uri = path.as_uri()  # type: ignore[attr-defined]
    await open_document(lsp_client, lsp_client.uri, SOURCE)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def _first_signature(result: types.Hover | None) -> tuple[str, str]:
    assert result is not None and isinstance(result.contents, types.MarkupContent)
    card = result.contents.value
    block = re.search(r"```python\n(.*?)\n```", card, re.S)
    assert block is not None, card
    return block.group(1).splitlines()[0], card


async def _hover_each_twice(client: LanguageClient, when: str) -> None:
    for line, callee, wanted, unwanted in CASES:
        for attempt in (1, 2):
            position = utf16_position(SOURCE, line, f"{callee}(")
            signature, card = _first_signature(await hover(client, client.uri, position))  # type: ignore[attr-defined]
            where = f"{callee}, {when}, hover {attempt}"
            assert re.search(wanted, signature), f"{where}: {signature!r}\n{card}"
            assert not re.search(unwanted, signature), f"{where}: {signature!r}\n{card}"
            assert not _PRIVATE_ALIAS.search(card), f"{where}: a private alias in\n{card}"


async def test_hover_shows_the_called_overload_cold_and_warm(client: LanguageClient):
    await _hover_each_twice(client, "jedi cold")
    await wait_until_warm(client)
    await _hover_each_twice(client, "jedi warm")
    await _signature_help_shows_the_same(client)


async def _signature_help_shows_the_same(client: LanguageClient) -> None:
    """One home: signature help inside the same call, before its closing parenthesis, has the hover's first
    signature active (the card leaves out private parameters such as ``_stacklevel``)."""
    from torchls.kb.render import public_parameters

    lines = SOURCE.splitlines()
    for line, callee, _, _ in CASES:
        row = next(number for number, text in enumerate(lines) if line in text)
        closing = types.Position(row, len(lines[row].rstrip()) - 1)
        help_ = await client.text_document_signature_help_async(
            types.SignatureHelpParams(text_document=types.TextDocumentIdentifier(client.uri), position=closing)  # type: ignore[attr-defined]
        )
        assert help_ is not None, callee
        active = help_.signatures[help_.active_signature or 0].label
        position = utf16_position(SOURCE, line, f"{callee}(")
        signature, _ = _first_signature(await hover(client, client.uri, position))  # type: ignore[attr-defined]
        assert signature == public_parameters(active), callee
