"""A failing feature answers as if it had nothing to say, and its traceback is logged once.

pygls turns an exception in a handler into a JSON-RPC ``-32603`` answer, which editors show as "request failed"
(VS Code pops it up on every hover, Neovim prints it under the cursor). A hover card or a completion detail that
cannot be built is not worth that: the user's next keystroke would fail the same way. Every request and
notification handler of the server is wrapped here: an ``Exception`` is logged with its traceback the first time it
is seen (then at debug level, so a failure that repeats on each keystroke does not fill the log), and the request
gets the answer that means "nothing here" (``null``; for ``completionItem/resolve`` the item as it came).
Cancellation (``asyncio.CancelledError``) is not an exception of the handler and still reaches pygls, which
answers ``-32800``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import traceback
from collections.abc import Callable
from typing import Any

from lsprotocol import types

log = logging.getLogger(__name__)

# Handlers whose failure must stay visible: the session cannot start or stop without them.
UNGUARDED = frozenset({types.INITIALIZE, types.SHUTDOWN, types.EXIT})


def _nothing(params: Any) -> Any:
    return None


# What a request answers when its handler failed, by method (default: null).
_FALLBACKS: dict[str, Callable[[Any], Any]] = {
    types.COMPLETION_ITEM_RESOLVE: lambda item: item,  # the item must come back; unresolved is fine
}


class Guard:
    """Wraps handlers; remembers which failures were already logged in full."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str, str]] = set()

    def wrap(self, method: str, handler: Callable) -> Callable:
        if method in UNGUARDED:
            return handler
        fallback = _FALLBACKS.get(method, _nothing)
        if asyncio.iscoroutinefunction(handler):

            @functools.wraps(handler)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await handler(*args, **kwargs)
                except Exception as error:
                    return self._failed(method, error, args, fallback)

            return guarded_async

        @functools.wraps(handler)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            except Exception as error:
                return self._failed(method, error, args, fallback)

        return guarded

    def _failed(self, method: str, error: Exception, args: tuple, fallback: Callable[[Any], Any]) -> Any:
        frames = traceback.extract_tb(error.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
        key = (method, type(error).__name__, where)
        if key in self._seen:
            log.debug("%s failed again: %s: %s", method, type(error).__name__, error)
        else:
            self._seen.add(key)
            log.error("%s failed; answering as if there were nothing to say", method, exc_info=error)
        return fallback(args[-1] if args else None)
