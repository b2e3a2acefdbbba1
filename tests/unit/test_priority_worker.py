"""The jedi thread's queue: a user's request runs before background work queued earlier; stale ones are skipped."""

from __future__ import annotations

import threading

from torchls.resolve import PriorityWorker


def test_foreground_requests_jump_the_background_queue():
    worker = PriorityWorker("test-worker")
    gate = threading.Event()
    order: list[str] = []
    try:
        blocker = worker.submit(gate.wait, background=True)  # the thread is busy with this one
        background = [worker.submit(order.append, f"background-{n}", background=True) for n in range(3)]
        foreground = worker.submit(order.append, "request")
        gate.set()
        foreground.result(timeout=5)
        for future in background:
            future.result(timeout=5)
        assert blocker.result(timeout=5) is True
        assert order == ["request", "background-0", "background-1", "background-2"]
    finally:
        worker.shutdown()


def test_cancelled_requests_never_run_and_errors_reach_the_caller():
    worker = PriorityWorker("test-worker")
    gate = threading.Event()
    ran: list[str] = []
    try:
        worker.submit(gate.wait)
        stale = worker.submit(ran.append, "stale")
        assert stale.cancel()
        failing = worker.submit(int, "not a number")
        gate.set()
        try:
            failing.result(timeout=5)
        except ValueError:
            pass
        else:
            raise AssertionError("the exception did not reach the caller")
        assert worker.submit(ran.append, "fresh").result(timeout=5) is None
        assert ran == ["fresh"]
    finally:
        worker.shutdown()


def test_shutdown_cancels_what_is_queued():
    worker = PriorityWorker("test-worker")
    gate = threading.Event()
    running = worker.submit(gate.wait)
    while not running.running():  # taken off the queue by the thread
        threading.Event().wait(0.001)
    queued = worker.submit(print, "never")
    worker.shutdown()
    gate.set()
    assert queued.cancelled()
    assert running.result(timeout=5) is True
    assert worker.submit(print, "after").cancelled()
