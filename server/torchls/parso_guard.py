"""Keep parso's on-disk parse cache from costing the user an answer.

jedi asks parso to pickle every module it parses into jedi's cache folder (``~/.cache/jedi``). parso expects
only ``PermissionError`` there. A read-only home (EROFS), a full disk (ENOSPC), a file where the folder should
be (ENOTDIR) or a half-written pickle raise from deep inside jedi's import machinery instead, and jedi then
quietly infers nothing: every ``torch.`` completion comes back empty and hover loses the live signature.

:func:`install` wraps parso's three disk functions so those failures become cache misses: the module is
parsed again and kept in memory, which is only slower. It is idempotent and runs on the jedi thread before the
first jedi call (:meth:`torchls.jedi_host.JediHost.environment`, in the jedi process).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_GUARDED = "_torchls_guarded"
_warned = False


def _warn_once(action: str, error: BaseException) -> None:
    """One log line per process: a broken cache folder would otherwise log once per module of torch."""
    global _warned
    if not _warned:
        _warned = True
        log.warning(
            "jedi's parse cache could not be %s (%s: %s); parsing in memory only, which is slower",
            action,
            type(error).__name__,
            error,
        )


def _guard(function: Callable[..., Any], action: str, errors: tuple[type[BaseException], ...], fallback: Any):
    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except errors as error:
            _warn_once(action, error)
            return fallback

    setattr(guarded, _GUARDED, True)
    return guarded


def install() -> None:
    """Make parso treat any failure of its disk cache as a miss. Safe to call more than once."""
    import parso.cache as cache

    # A corrupt pickle (a disk that filled up mid-write) can raise nearly anything from pickle.load.
    wrappers = {
        "_load_from_file_system": ("read", (Exception,), None),
        "_save_to_file_system": ("written", (OSError,), None),
        "_remove_cache_and_update_lock": ("cleaned", (OSError,), False),
    }
    for name, (action, errors, fallback) in wrappers.items():
        function = getattr(cache, name, None)
        if function is None:
            log.info("parso has no %s; its disk cache is left unguarded", name)
            continue
        if not getattr(function, _GUARDED, False):
            setattr(cache, name, _guard(function, action, errors, fallback))
