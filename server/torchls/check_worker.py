"""Diagnostics for the editor, computed in a worker process.

Checking is CPU-bound Python (an abstract interpreter over the whole file). On a thread of the server it would
hold the GIL while the user types, and every completion asked for meanwhile would wait for it at each await. In
a process of its own it shares the cores with the server instead. The worker parses the text itself: sending the
server's syntax tree would cost more than parsing it again.

The process starts with the first check (spawned, not forked: the server has threads) and is started again after
it dies; a check that was running then has no findings, and the next edit checks again.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the rules are imported in the worker only (~0.1 s the server's start-up need not pay)
    from torchls.core.checker import Checker, CheckResult

log = logging.getLogger(__name__)
_PARENT_CHECK_SECONDS = 0.5
_CHECK_NICENESS = 5

_checkers: dict[tuple[tuple[str, ...], tuple[str, ...]], Checker] = {}  # in the worker: one per rule selection


def _start_worker(server: int) -> None:
    """In the worker, before any check: its stdout is the server's, which carries the LSP messages, so anything
    printed there goes to stderr (the editor's log) instead; and it ends when the server (pid ``server``) does.
    The server passes its own pid: a worker that read its parent's pid here, after a server killed while the
    worker was still importing, would watch the process it was handed to and never end."""
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    # On a machine with few cores, a check of a long file just opened (CPU-bound for up to a second) would take
    # a core from the hover or completion the user is waiting for: it gives way to them.
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: no os.nice on Windows
        os.nice(_CHECK_NICENESS)
    threading.Thread(target=_end_with, args=(server,), name="torchls-parent-watch", daemon=True).start()


def _end_with(parent: int) -> None:
    """End this process once ``parent`` has gone. A pool's worker holds both ends of its task queue, so it never
    sees the server die: an editor that kills the server (a restart) would leave one checking process behind
    each time."""
    while os.getppid() == parent:
        time.sleep(_PARENT_CHECK_SECONDS)
    os._exit(0)


def check_text(text: str, select: Sequence[str], ignore: Sequence[str]) -> CheckResult:
    """Runs in the worker: the findings in ``text`` under a rule selection (its checker is kept), and the
    classes the same analysis proves for the names and attributes, which hover and completion read."""
    from torchls.core.checker import Checker

    key = (tuple(select), tuple(ignore))
    checker = _checkers.get(key)
    if checker is None:
        checker = _checkers[key] = Checker(select, ignore)
    return checker.check(text, receivers=True)


class CheckWorker:
    """The server's handle on the checking process. Where a process cannot be started at all (the pool breaks
    again and again before any check succeeds), checks run on a thread of the server instead: slower to type
    beside, but diagnostics keep coming."""

    _FAILURES_BEFORE_THREAD = 3

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._failures = 0  # broken pools since the last check that succeeded in a process
        self._lock = threading.Lock()

    def submit(self, text: str, select: Sequence[str], ignore: Sequence[str]) -> Future[CheckResult]:
        arguments = (text, tuple(select), tuple(ignore))
        with self._lock:
            if self._failures >= self._FAILURES_BEFORE_THREAD:
                if self._thread is None:
                    log.warning("the checking process cannot be started; checking on a thread of the server")
                    self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torchls-check")
                return self._thread.submit(check_text, *arguments)
            if self._pool is None:
                self._pool = self._new_pool()
            try:
                future = self._pool.submit(check_text, *arguments)
            except BrokenProcessPool as error:
                self._broken(self._pool)
                failed: Future[CheckResult] = Future()
                failed.set_exception(error)  # this check is lost; the next edit checks again, in a new process
                return failed
        future.add_done_callback(partial(self._done, self._pool))
        return future

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(os.getpid(),),
        )

    def _done(self, pool: ProcessPoolExecutor, future: Future) -> None:
        if future.cancelled():
            return
        if isinstance(future.exception(), BrokenProcessPool):
            with self._lock:
                self._broken(pool)
        else:
            self._failures = 0

    def _broken(self, pool: ProcessPoolExecutor) -> None:
        """Forget a pool whose process died (called with the lock held); the next check starts a new one."""
        if self._pool is pool:
            log.warning("the checking process ended; starting it again")
            self._failures += 1
            self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
            thread, self._thread = self._thread, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if thread is not None:
            thread.shutdown(wait=False, cancel_futures=True)
