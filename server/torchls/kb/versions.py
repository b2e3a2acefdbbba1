"""The version table that ships with the knowledge base (``knowledge/_versions.json``), read at run time.

The one home of "which torch release added this API or parameter" for entries that do not say it themselves:
the table is generated from the real releases by :mod:`torchls.kb.version_table` (a developer tool) and read here
lazily, once per knowledge folder, with the standard library only (the server never imports torch).
Versions at or before the table's first release (``"≤1.13"``) and unknown ones (null) count as "no version to show".
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from pathlib import Path

from torchls.kb.base import shipped_folder

log = logging.getLogger(__name__)

TABLE_NAME = "_versions.json"


@lru_cache(maxsize=4)
def _load(folder: str) -> dict[str, dict]:
    path = Path(folder) / TABLE_NAME
    try:
        apis = json.loads(path.read_text(encoding="utf-8")).get("apis", {})
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, AttributeError) as error:
        log.warning("ignoring the version table %s: %s", path, error)
        return {}
    return apis if isinstance(apis, dict) else {}


def table() -> dict[str, dict]:
    """API name -> its row (``since``, ``params``, ``deprecated``, ``removed``, ``unknown``)."""
    return _load(str(shipped_folder()))


def _shown(version: object) -> str | None:
    return version if isinstance(version, str) and version[:1].isdigit() else None


def api_since(name: str) -> str | None:
    """The release that added ``name``, when the table knows it and it is after the table's first release."""
    return _shown(table().get(name, {}).get("since"))


def param_since(name: str, param: str) -> str | None:
    """The release that added parameter ``param`` of ``name``, when it is newer than the API itself."""
    params = table().get(name, {}).get("params") or {}
    return _shown(params.get(param.lstrip("*")))


def deprecated_since(name: str) -> str | None:
    """The first release whose source warns that ``name`` is deprecated (or marks it ``@deprecated``)."""
    return _shown(table().get(name, {}).get("deprecated"))


def removed_in(name: str) -> str | None:
    """The first release without ``name`` after releases that had it."""
    return _shown(table().get(name, {}).get("removed"))
