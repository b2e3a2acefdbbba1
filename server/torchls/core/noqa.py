"""``# noqa`` comments: which codes a line suppresses, and the edit that adds a code to a line.

Kept apart from the checker so the editor's code-action handler can use it without loading every rule.
"""

from __future__ import annotations

import re

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.IGNORECASE)


def suppressed_codes(line: str) -> set[str] | None:
    """Codes a ``# noqa`` comment on ``line`` suppresses: ``{""}`` for a bare ``# noqa``, None for none."""
    if "noqa" not in line.lower() or "#" not in line:
        return None
    match = _NOQA.search(line[line.index("#") :])
    if match is None:
        return None
    codes = match.group("codes")
    return {c.strip().upper() for c in codes.split(",")} if codes else {""}


def noqa_comment(line: str, code: str) -> tuple[int, int, str] | None:
    """How to suppress ``code`` on ``line``: replace ``line[start:end]`` with ``text``; None when already done.

    Adds ``  # noqa: TL301`` at the end, or extends an existing ``# noqa: TL101`` to ``# noqa: TL101, TL301``.
    """
    codes = suppressed_codes(line)
    if codes is not None and ("" in codes or code in codes):
        return None
    if codes is not None:
        match = _NOQA.search(line, line.index("#"))
        assert match is not None
        return match.end(), match.end(), f", {code}"
    end = len(line.rstrip())
    return end, len(line), f"  # noqa: {code}"
