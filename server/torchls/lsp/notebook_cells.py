"""A notebook the editor has open (LSP 3.17 ``notebookDocument/*``), as the one program its code cells make.

pygls keeps each notebook and the text document of each of its cells in the workspace. Every feature that answers
a request on a cell (hover, completion, signature help, code actions) reads the notebook's program instead of the
cell alone, so ``model`` defined in cell 1 is known in cell 3: :func:`program_cursor` maps the request's position
into the program (:class:`torchls.core.notebook.NotebookProgram`) and the :class:`ProgramDocument` it hands on is
keyed by the notebook's URI and version, so every cell shares one index and one check.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from torchls.core.notebook import CODE, Cell, NotebookProgram, build_program
from torchls.core.text import Position, SourceText, Span
from torchls.uris import path_of

_KINDS = {types.NotebookCellKind.Code: CODE, types.NotebookCellKind.Markup: "markdown"}


@dataclass(frozen=True, slots=True)
class ProgramDocument:
    """What features read of a notebook: the program of its code cells as typed (IPython syntax masked, syntax
    errors left for the features' own tolerant parsing), under the notebook's URI and version."""

    uri: str
    path: str | None
    source: str
    version: int | None


@dataclass(frozen=True, slots=True)
class NotebookState:
    """One version of an open notebook: its cells' URIs (every kind, in order) and their program."""

    uri: str
    version: int | None
    cell_uris: tuple[str, ...]
    program: NotebookProgram

    def cell_index(self, cell_uri: str) -> int | None:
        unquoted = urllib.parse.unquote(cell_uri)
        for index, uri in enumerate(self.cell_uris):
            if urllib.parse.unquote(uri) == unquoted:
                return index
        return None

    def document(self) -> ProgramDocument:
        return ProgramDocument(self.uri, path_of(self.uri), self.program.typed_text, self.version)


def notebook_of(workspace: Any, cell_uri: str) -> Any | None:
    """pygls's notebook document that holds the cell ``cell_uri``, or None for an ordinary document."""
    if not workspace.notebook_documents:
        return None  # the common case: no notebook open, nothing to look up
    return workspace.get_notebook_document(cell_uri=cell_uri)


def notebook_state(workspace: Any, notebook: Any) -> NotebookState:
    """The program of ``notebook``'s current cells (a cell whose text pygls does not have counts as empty)."""
    cells = []
    for cell in notebook.cells:
        document = workspace.text_documents.get(urllib.parse.unquote(cell.document))
        kind = _KINDS.get(cell.kind, "raw")
        cells.append(Cell(kind, document.source if document is not None else "", cell.document))
    program = build_program(cells)
    return NotebookState(notebook.uri, notebook.version, tuple(c.document for c in notebook.cells), program)


@dataclass(frozen=True, slots=True)
class CellCursor:
    """A request on a notebook cell, in the notebook's program: the same fields as an ordinary cursor, and the way
    back from program spans to the cell's ranges."""

    document: ProgramDocument
    source: SourceText  # the program's text
    position: Position  # in the program
    state: NotebookState
    cell: int
    cell_source: SourceText

    def to_range(self, span: Span, encoding: str) -> types.Range | None:
        """A program span as a range of this cell; None when it lies in another cell."""
        where = self.state.program.cell_span(span)
        if where is None or where.cell != self.cell:
            return None
        start = self.cell_source.units_from_position(where.span.start, encoding)  # type: ignore[arg-type]
        end = self.cell_source.units_from_position(where.span.end, encoding)  # type: ignore[arg-type]
        return types.Range(types.Position(*start), types.Position(*end))


def program_cursor(
    workspace: Any, notebook: Any, cell_document: Any, position: types.Position, encoding: str
) -> CellCursor | None:
    """The cursor of a request at ``position`` in a cell, in the notebook's program; None past the end of a line,
    in a markdown cell, or on a line the analysis does not read (IPython syntax)."""
    cell_source = SourceText(cell_document.source)
    if not cell_source.has_position(position.line, position.character, encoding):  # type: ignore[arg-type]
        return None
    state = notebook_state(workspace, notebook)
    cell = state.cell_index(cell_document.uri)
    if cell is None:
        return None
    in_cell = cell_source.position_from_units(position.line, position.character, encoding)  # type: ignore[arg-type]
    if state.program.is_masked(cell, in_cell.line, magic_only=True):
        return None
    in_program = state.program.program_position(cell, in_cell)
    if in_program is None:
        return None
    document = state.document()
    return CellCursor(document, SourceText(document.source), in_program, state, cell, cell_source)
