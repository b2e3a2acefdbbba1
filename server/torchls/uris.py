"""Document URIs as file system paths. Kept apart so the language server can map URIs before it imports the
analysis (``torchls.session`` and what it holds)."""

from __future__ import annotations

import urllib.parse


def path_of(uri: str) -> str | None:
    """The file system path of a ``file:`` URI; None for other schemes (an unsaved buffer)."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "file":
        return None
    from urllib.request import url2pathname  # 0.1 s of imports (http.client, email): only when first needed

    return url2pathname(parsed.path)  # which also decodes %-escapes
