"""Session.remember_jedi_hover: a sweep of the pointer over a file leaves at most one jedi hover request queued."""

from __future__ import annotations

import threading

from torchls.resolve import PriorityWorker
from torchls.session import Session


def test_a_new_hover_cancels_the_queued_ones_but_not_the_running_one():
    worker = PriorityWorker("测试-jedi")
    release = threading.Event()
    session = Session()
    try:
        running = worker.submit(release.wait, 5)
        while not running.running():
            pass
        session.remember_jedi_hover(("a.py", 1, 0, 0), running)
        queued = [worker.submit(str, n) for n in range(3)]
        for n, future in enumerate(queued):
            session.remember_jedi_hover(("a.py", 1, n + 1, 0), future)
        assert not running.cancelled()  # jedi is already working on it: its answer serves the next hover there
        assert [future.cancelled() for future in queued] == [True, True, False]  # the pointer moved on
        assert list(session.jedi_hovers) == [("a.py", 1, 0, 0), ("a.py", 1, 3, 0)]
        release.set()
        assert queued[-1].result(timeout=5) == "2"
    finally:
        release.set()
        worker.shutdown()
        session.close()
