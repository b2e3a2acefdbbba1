"""Signature help end to end: the real server over stdio, real jedi, the installed torch and the shipped knowledge
base. Each case asserts the active signature's label and the name of the active parameter, read from the label
slice the server points at (in UTF-16 code units, as the client reads it).

Every call sits on a line with Chinese text and an emoji before it, so the UTF-16 position the client sends is
converted on every request.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import open_document, server_config, start_warm_in

CURSOR = "‸"

HEADER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers_mod import make_features

q = torch.randn(2, 8, 16)
k = torch.randn(2, 8, 16)
att = q @ k.transpose(1, 2)
m = torch.ones(8, 8, dtype=torch.bool)
x = torch.randn(4, 3, 32, 32)
output = torch.randn(4, 10)
"""

# Another module of the project: its function is unannotated and not in the file being edited, so only jedi can
# tell that ``make_features()`` returns a tensor.
HELPERS_MODULE = """\
import torch


def make_features(n):
    base = torch.zeros(n, 16)
    return base.relu()
"""

# The private type aliases of torch's stubs, none of which may reach the user.
_PRIVATE_ALIAS = re.compile(r"(?<![\w.])_(?:int|bool|float|complex|dtype|device|layout|size\w*|ratio\w*)\b")


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-cache-"))), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    (root / "helpers_mod.py").write_text(HELPERS_MODULE, encoding="utf-8")
    await start_warm_in(lsp_client, root)
    assert not [m.message for m in lsp_client.messages if "torch" in m.message], lsp_client.messages
    yield
    await lsp_client.shutdown_session()


def split_cursor(marked: str) -> tuple[str, types.Position]:
    """The text without the cursor mark, and the mark's UTF-16 position (computed independently of torchls)."""
    before, after = marked.split(CURSOR)
    lines = before.split("\n")
    return before + after, types.Position(len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2)


async def signature(client: LanguageClient, line: str) -> types.SignatureHelp:
    text, position = split_cursor(HEADER + line + "\n")
    client.documents += 1
    uri = (client.root / f"case_{client.documents}.py").as_uri()
    await open_document(client, uri, text)
    result = await client.text_document_signature_help_async(
        types.SignatureHelpParams(text_document=types.TextDocumentIdentifier(uri), position=position)
    )
    assert result is not None, f"no signature help at {line!r}"
    return result


def utf16_slice(text: str, start: int, end: int) -> str:
    units = text.encode("utf-16-le")
    return units[2 * start : 2 * end].decode("utf-16-le")


def shown(help_: types.SignatureHelp) -> tuple[str, str | None]:
    """The active signature's label and the name of its active parameter (None when none is active)."""
    signature = help_.signatures[help_.active_signature]
    index = signature.active_parameter if signature.active_parameter is not None else help_.active_parameter
    if index is None or not 0 <= index < len(signature.parameters):
        return signature.label, None
    start, end = signature.parameters[index].label
    piece = utf16_slice(signature.label, start, end)
    name = re.match(r"\**(\w+)", piece)
    assert name is not None, f"parameter label {piece!r} of {signature.label!r} does not start with a name"
    return signature.label, name.group(1)


def assert_readable(label: str) -> None:
    assert not _PRIVATE_ALIAS.search(label), f"a private torch type alias in {label!r}"


# ------------------------------------------------------------------------------------------ bound methods


async def test_a_bound_tensor_method_does_not_count_self(client: LanguageClient):
    label, active = shown(await signature(client, '说明 = "注意力权重 🎯"; p = att.softmax(‸'))
    assert label.startswith("torch.Tensor.softmax(dim: int"), label
    assert "self" not in label
    assert active == "dim"
    assert_readable(label)


async def test_second_argument_of_transpose_is_dim1(client: LanguageClient):
    label, active = shown(await signature(client, '说明 = "转置 🔁"; kt = k.transpose(1, ‸'))
    assert label.startswith("torch.Tensor.transpose(dim0: int, dim1: int)"), label
    assert active == "dim1"


async def test_second_argument_of_masked_fill_is_value(client: LanguageClient):
    label, active = shown(await signature(client, '说明 = "遮罩 🙈"; att2 = att.masked_fill(m, ‸'))
    assert label.startswith("torch.Tensor.masked_fill(mask: Tensor, value:"), label
    assert active == "value"


def assert_the_file_cannot_tell(root: Path, line: str, receiver: str) -> None:
    """The fast path (the file's own analysis, across the project's modules) does not know ``receiver``: so the
    server must ask jedi, and the test below covers that path rather than the static one."""
    from torchls.core.text import Position
    from torchls.session import Session

    text, position = split_cursor(HEADER + line + "\n")
    index = Session(workspace_root=str(root)).index((root / "probe.py").as_uri(), text, 1).index
    assert index.value_at(receiver, Position(position.line, 0)) is None


async def test_a_tensor_only_jedi_knows_is_bound_too(client: LanguageClient):
    """``make_features`` lives in another module of the project and has no annotation: the receiver is jedi's."""
    line = 'f = make_features(3)\n说明 = "特征 🧪"; y = f.transpose(0, ‸'
    assert_the_file_cannot_tell(client.root, line, "f")
    label, active = shown(await signature(client, line))
    assert label.startswith("torch.Tensor.transpose(dim0: int, dim1: int)"), label
    assert active == "dim1"


# ------------------------------------------------------------------------------------------ overloads


async def test_view_after_an_int_picks_the_star_size_overload(client: LanguageClient):
    label, active = shown(await signature(client, '说明 = "展平 📐"; flat = x.view(-1, ‸'))
    assert label.startswith("torch.Tensor.view(*size: int | SymInt)"), label
    assert active == "size"


async def test_view_with_a_dtype_picks_the_dtype_overload(client: LanguageClient):
    label, active = shown(await signature(client, '说明 = "按位重解释 🔬"; bits = x.view(torch.int32‸'))
    assert label.startswith("torch.Tensor.view(dtype: torch.dtype)"), label
    assert active == "dtype"


async def test_torch_max_second_argument_is_dim(client: LanguageClient):
    label, active = shown(await signature(client, '说明 = "预测类别 🏷️"; _, pred = torch.max(output, ‸'))
    assert label.startswith("torch.max(input: Tensor, dim: int, keepdim: bool=False"), label
    assert active == "dim"


async def test_torch_max_with_a_tensor_second_argument_is_other(client: LanguageClient):
    label, active = shown(await signature(client, '说明 = "逐元素最大 ⚖️"; big = torch.max(output, other=output, ‸'))
    assert label.startswith("torch.max(input: Tensor, other: Tensor"), label
    assert active == "out"


# ------------------------------------------------------------------------------------------ keywords written


async def test_a_keyword_already_written_is_skipped(client: LanguageClient):
    label, active = shown(await signature(client, '说明 = "上采样 🖼️"; up = F.interpolate(x, scale_factor=2, ‸'))
    assert label.startswith("torch.nn.functional.interpolate(input: Tensor, size:"), label
    assert active == "size"


async def test_a_keyword_already_written_is_skipped_across_lines(client: LanguageClient):
    line = '说明 = "上采样 🖼️"; up = F.interpolate(\n    x,  # 特征图 🖼️\n    scale_factor=2,  # 放大 2 倍 🔍\n    ‸'
    label, active = shown(await signature(client, line))
    assert label.startswith("torch.nn.functional.interpolate("), label
    assert active == "size"


async def test_conv2d_next_unwritten_parameter_is_stride(client: LanguageClient):
    label, active = shown(await signature(client, '说明 = "卷积 🧱"; conv = nn.Conv2d(3, 64, kernel_size=3, ‸'))
    assert label.startswith("torch.nn.Conv2d(in_channels: int, out_channels: int, kernel_size: int | tuple[int, int]")
    assert active == "stride"
    assert_readable(label)
    # Not the fourth parameter because it is the fourth argument: ``padding`` is given, ``stride`` is not.
    _, active = shown(await signature(client, '说明 = "卷积 🧱"; conv = nn.Conv2d(3, 64, 3, padding=1, ‸'))
    assert active == "stride"
