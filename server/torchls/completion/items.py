"""What completion answers with, independent of the protocol: items and lists, and the matching editors do."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Item:
    label: str
    kind: str  # function, class, module, method, property, constant, variable, argument, value
    qualname: str | None = None  # the public name completionItem/resolve documents
    summary: str | None = None  # the Chinese one-line summary, when the knowledge base has the name
    insert_text: str | None = None
    sort_text: str | None = None
    documentation: str | None = None  # given right away (arguments, values); otherwise filled by resolve


@dataclass(frozen=True, slots=True)
class CompletionResult:
    items: list[Item]
    is_incomplete: bool = False


def fuzzy(partial: str, label: str) -> bool:
    """The client filters too; this only trims the list. Subsequence match, case-insensitive, as editors do."""
    if not partial:
        return True
    label = label.lower()
    position = 0
    for char in partial.lower():
        position = label.find(char, position)
        if position < 0:
            return False
        position += 1
    return True


def typed_underscores(partial: str) -> int:
    """How private a name the user is asking for: 0 (none typed), 1 (``_``) or 2 (``__``)."""
    return min(len(partial) - len(partial.lstrip("_")), 2)


def offered(label: str, underscores: int) -> bool:
    """Private names (``_foo``) only once the user has typed ``_``, dunder and name-mangled ones (``__foo__``,
    ``__foo``) once ``__``: after a bare ``x.`` the list is what code outside the class uses."""
    return min(len(label) - len(label.lstrip("_")), 2) <= underscores


def narrowed(items: list[Item], partial: str) -> list[Item]:
    """The items a partial name keeps: those it may show (see :func:`offered`) and matches (see :func:`fuzzy`)."""
    underscores = typed_underscores(partial)
    return [item for item in items if offered(item.label, underscores) and fuzzy(partial, item.label)]


def first_sentence(text: str) -> str:
    for mark in ("。", "；"):
        if mark in text:
            return text.split(mark, 1)[0] + "。"
    return text
