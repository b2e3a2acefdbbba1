"""Notebooks in the editor (LSP 3.17 notebookDocument/*), end to end through the real server: the code cells are
one program, so a model defined in one cell is known in another; findings land in the cell they are in, with
related locations in other cells and quick fixes that edit the cell; a change moves them, and a cell removed from
the notebook or the notebook closed is cleared. Cells hold Chinese text and an emoji before the symbols."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import (
    apply_text_edits,
    hover,
    server_config,
    utf16_position,
    vscode_initialize,
    wait_for,
    wait_until_warm,
)

IMPORTS = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
MODEL = (
    "# 模型定义 🧠\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Linear(16, 4)\n\n"
    "    def forward(self, x):\n"
    "        return self.fc(x)\n\n\n"
    "model = Net()\n"
)
MARKDOWN = "## 训练 🚀\n先看一个批次。"
TRAIN = (
    "%matplotlib inline\n"
    "x = torch.randn(8, 16)\n"
    '说明 = "中文 😵"; loss = nn.CrossEntropyLoss()(F.softmax(model(x), dim=1), torch.randint(0, 4, (8,)))\n'
    "model.fc.weight\n"
)


@pytest_lsp.fixture(config=server_config(Path(tempfile.mkdtemp(prefix="torchls-cache-"))), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("notebooks")
    result = await lsp_client.initialize_session(vscode_initialize(root))
    lsp_client.root = root
    lsp_client.sync = result.capabilities.notebook_document_sync
    await wait_until_warm(lsp_client)
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, name: str, sources: list[tuple[str, str]]) -> tuple[str, list[str]]:
    """Open a notebook of ``(kind, source)`` cells as VS Code does; returns its URI and its cells' URIs."""
    uri = (client.root / name).as_uri()
    cells = [f"vscode-notebook-cell:{client.root / name}#cell{index}" for index in range(len(sources))]
    kinds = {"code": types.NotebookCellKind.Code, "markdown": types.NotebookCellKind.Markup}
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=kinds[k], document=c) for (k, _), c in zip(sources, cells, strict=True)],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=c, language_id="python" if k == "code" else "markdown", version=1, text=s)
                for (k, s), c in zip(sources, cells, strict=True)
            ],
        )
    )
    return uri, cells


async def _findings(client: LanguageClient, cell: str, count: int) -> list[types.Diagnostic]:
    await wait_for(lambda: len(client.diagnostics.get(cell, ())) == count, message=f"{count} findings in {cell}")
    return list(client.diagnostics[cell])


async def test_the_server_announces_jupyter_notebooks(client: LanguageClient):
    [selector] = client.sync.notebook_selector
    assert selector.notebook == "jupyter-notebook" and [c.language for c in selector.cells] == ["python"]


async def test_a_finding_lands_in_its_cell_with_related_places_and_a_fix(client: LanguageClient):
    _, cells = _open(
        client, "train.ipynb", [("code", IMPORTS), ("code", MODEL), ("markdown", MARKDOWN), ("code", TRAIN)]
    )
    [diagnostic] = await _findings(client, cells[3], 1)
    assert diagnostic.code == "TL301"
    # In the cell's own lines (after the masked magic), in UTF-16 after the Chinese text and the emoji
    assert diagnostic.range.start == utf16_position(TRAIN, "loss = nn", "CrossEntropyLoss", offset=0)
    assert diagnostic.range.start.line == 2
    [related] = diagnostic.related_information
    assert related.location.uri == cells[3]
    assert related.location.range.start == utf16_position(TRAIN, "loss = nn", "F.softmax", offset=0)
    assert not client.diagnostics.get(cells[0]) and not client.diagnostics.get(cells[1])
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(cells[3]),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    fix = next(a for a in actions if isinstance(a, types.CodeAction) and a.is_preferred)
    [(edited_uri, edits)] = fix.edit.changes.items()
    assert edited_uri == cells[3]
    fixed = apply_text_edits(TRAIN, edits)
    assert "CrossEntropyLoss()(model(x), " in fixed and "F.softmax" not in fixed, fixed


async def test_hover_in_one_cell_knows_what_another_cell_defined(client: LanguageClient):
    _, cells = _open(client, "hover.ipynb", [("code", IMPORTS), ("code", MODEL), ("code", TRAIN)])
    await _findings(client, cells[2], 1)  # checked: hover reads the analysis of the whole notebook
    answer = await hover(client, cells[2], utf16_position(TRAIN, "model.fc.weight", "fc"))
    assert answer is not None and "Linear" in answer.contents.value, answer
    on_torch = await hover(client, cells[2], utf16_position(TRAIN, "loss = nn", "softmax"))
    assert on_torch is not None and "softmax" in on_torch.contents.value
    assert on_torch.range is not None and on_torch.range.start.line == 2  # in the cell, not in the program
    assert await hover(client, cells[2], types.Position(0, 3)) is None  # the magic line is not Python


async def test_an_edit_moves_and_clears_findings_cell_by_cell(client: LanguageClient):
    uri, cells = _open(client, "edit.ipynb", [("code", IMPORTS), ("code", MODEL), ("code", TRAIN)])
    await _findings(client, cells[2], 1)
    fixed = TRAIN.replace("F.softmax(model(x), dim=1)", "model(x)")
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=uri, version=2),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=cells[2], version=2),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
                        )
                    ]
                )
            ),
        )
    )
    await _findings(client, cells[2], 0)
    client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=uri),
            cell_text_documents=[types.TextDocumentIdentifier(c) for c in cells],
        )
    )
    await wait_for(lambda: not any(client.diagnostics.get(c) for c in cells), message="cells not cleared")


def _structure(client: LanguageClient, uri: str, version: int, start: int, delete: int, new: list[tuple[str, str]]):
    """Insert cells ``new`` (URI, source) at ``start`` after deleting ``delete`` cells, as VS Code sends it."""
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=uri, version=version),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    structure=types.NotebookDocumentCellChangeStructure(
                        array=types.NotebookCellArrayChange(
                            start=start,
                            delete_count=delete,
                            cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=c) for c, _ in new],
                        ),
                        did_open=[
                            types.TextDocumentItem(uri=c, language_id="python", version=1, text=s) for c, s in new
                        ],
                    )
                )
            ),
        )
    )


async def test_the_cause_in_an_earlier_cell_and_cell_insertions_and_deletions(client: LanguageClient):
    probabilities = '说明 = "概率 🎲"; probs = F.softmax(torch.randn(4, 3), dim=1)'
    loss = "loss = nn.CrossEntropyLoss()(probs, torch.tensor([0, 1, 2, 0]))"
    uri, cells = _open(client, "cells.ipynb", [("code", IMPORTS), ("code", probabilities), ("code", loss)])
    [diagnostic] = await _findings(client, cells[2], 1)
    [related] = diagnostic.related_information
    assert related.location.uri == cells[1]  # the softmax was made in the cell before
    assert related.location.range.start == utf16_position(probabilities, "probs =", "F.softmax", offset=0)

    # A cell inserted between them rebinds probs to logits: the finding goes; deleting that cell brings it back.
    inserted = f"{cells[1]}-inserted"
    _structure(client, uri, 2, 2, 0, [(inserted, "probs = torch.randn(4, 3)  # logits again")])
    await _findings(client, cells[2], 0)
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=uri, version=3),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    structure=types.NotebookDocumentCellChangeStructure(
                        array=types.NotebookCellArrayChange(start=2, delete_count=1),
                        did_close=[types.TextDocumentIdentifier(inserted)],
                    )
                )
            ),
        )
    )
    [again] = await _findings(client, cells[2], 1)
    assert again.code == "TL301"


async def test_completion_and_signature_help_in_a_cell_read_the_imports_of_another(client: LanguageClient):
    typing = "layer = nn.Lin"
    uri, cells = _open(client, "complete.ipynb", [("code", IMPORTS), ("markdown", MARKDOWN), ("code", typing)])
    result = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(cells[2]), types.Position(0, len(typing)))
    )
    labels = [item.label for item in (result.items if isinstance(result, types.CompletionList) else result or [])]
    assert "Linear" in labels, labels[:20]
    calling = "layer = nn.Linear("
    _structure(client, uri, 2, 3, 0, [(f"{cells[2]}-call", calling)])
    help_ = await client.text_document_signature_help_async(
        types.SignatureHelpParams(types.TextDocumentIdentifier(f"{cells[2]}-call"), types.Position(0, len(calling)))
    )
    assert help_ is not None and "in_features" in help_.signatures[0].label, help_


async def test_code_actions_in_a_cell_offer_the_card_of_the_symbol(client: LanguageClient):
    _, cells = _open(client, "actions.ipynb", [("code", IMPORTS), ("code", TRAIN)])
    here = utf16_position(TRAIN, "loss = nn", "CrossEntropyLoss")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(cells[1]),
            range=types.Range(here, here),
            context=types.CodeActionContext(diagnostics=[], only=["torchls.showCard", "torchls.runExample"]),
        )
    )
    titles = [action.title for action in actions or []]
    assert any("torch.nn.CrossEntropyLoss" in title for title in titles), titles
