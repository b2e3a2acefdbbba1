"""What the user's installed torch says about a symbol: real signatures and English parameter docs.

Produced by :mod:`torchls.resolve` from jedi, consumed by :mod:`torchls.kb.render`; kept here so neither of
those two depends on the other. These are also the answer types that cross the pipe from the jedi process
(:mod:`torchls.jedi_wire`), so they must stay importable by this module's name in both processes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SECTION = re.compile(r"^(\s*)(Args|Arguments|Parameters|Keyword args|Keyword arguments)\s*:\s*$")
_PARAM_LINE = re.compile(r"^(\s*)\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class SymbolDoc:
    """jedi's view of one symbol in the user's environment."""

    name: str  # the name jedi reports (where the symbol is defined)
    kind: str = ""  # jedi's type: function, class, instance, module, ...
    signatures: tuple[str, ...] = ()
    param_names: tuple[str, ...] = ()
    param_docs: dict[str, str] = field(default_factory=dict)
    docstring: str = ""


@dataclass(frozen=True, slots=True)
class JediHit:
    """What jedi found under the cursor."""

    doc: SymbolDoc
    is_instance: bool  # the cursor is on a value whose class is ``doc.name`` (``self.fc`` -> Linear)


def parse_param_docs(docstring: str) -> dict[str, str]:
    """English parameter descriptions from the ``Args:`` / ``Keyword args:`` sections of a torch docstring."""
    docs: dict[str, str] = {}
    lines = docstring.splitlines()
    index = 0
    while index < len(lines):
        section = _SECTION.match(lines[index])
        index += 1
        if not section:
            continue
        section_indent = len(section.group(1))
        current: str | None = None
        param_indent = None
        while index < len(lines):
            line = lines[index]
            stripped = line.strip()
            indent = len(line) - len(line.lstrip())
            if stripped and indent <= section_indent:
                break  # the section ended
            match = _PARAM_LINE.match(line)
            if stripped and match and (param_indent is None or indent == param_indent):
                param_indent = indent
                current = match.group(2)
                docs[current] = match.group(4).strip()
            elif stripped and current is not None:
                docs[current] = f"{docs[current]} {stripped}".strip()
            index += 1
    return docs
