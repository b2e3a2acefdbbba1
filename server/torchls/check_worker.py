"""Diagnostics for the editor, computed in a worker process.

Checking is CPU-bound Python (an abstract interpreter over the whole file). On a thread of the server it would
hold the GIL while the user types, and every completion asked for meanwhile would wait for it at each await. In
a process of its own it shares the cores with the server instead. The worker parses the text itself: sending the
server's syntax tree would cost more than parsing it again.

The process starts with the first check (spawned, not forked: the server has threads) and is started again after
it dies; a check that was running then has no findings, and the next edit checks again.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the rules are imported in the worker only (~0.1 s the server's start-up need not pay)
    from torchls.core.checker import Checker, CheckResult

log = logging.getLogger(__name__)

_checkers: dict[tuple[tuple[str, ...], tuple[str, ...]], Checker] = {}  # in the worker: one per rule selection


def _quiet_stdout() -> None:
    """In the worker: its stdout is the server's, which carries the LSP messages; anything printed there would
    corrupt them, so it goes to stderr (the editor's log) instead."""
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr


def check_text(text: str, select: Sequence[str], ignore: Sequence[str]) -> CheckResult:
    """Runs in the worker: the findings in ``text`` under a rule selection (its checker is kept)."""
    from torchls.core.checker import Checker

    key = (tuple(select), tuple(ignore))
    checker = _checkers.get(key)
    if checker is None:
        checker = _checkers[key] = Checker(select, ignore)
    return checker.check(text)


class CheckWorker:
    """The server's handle on the checking process."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def submit(self, text: str, select: Sequence[str], ignore: Sequence[str]) -> Future[CheckResult]:
        with self._lock:
            for attempt in range(2):
                if self._pool is None:
                    self._pool = ProcessPoolExecutor(
                        max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_quiet_stdout
                    )
                try:
                    return self._pool.submit(check_text, text, tuple(select), tuple(ignore))
                except BrokenProcessPool:
                    log.warning("the checking process ended; starting it again")
                    self._pool.shutdown(wait=False, cancel_futures=True)
                    self._pool = None
                    if attempt:
                        raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
