"""The checking process: the same findings as the checker in the server would give, and it survives its death."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pytest

from torchls.check_worker import CheckWorker
from torchls.core.checker import check_source

SOFTMAX_BEFORE_CROSS_ENTROPY = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

criterion = nn.CrossEntropyLoss()
logits = torch.randn(8, 5)
说明 = "中文 😵"; loss = criterion(F.softmax(logits, dim=1), torch.randint(0, 5, (8,)))
"""


@pytest.fixture
def worker():
    worker = CheckWorker()
    yield worker
    worker.close()


def test_findings_from_the_process_match_the_checker(worker):
    result = worker.submit(SOFTMAX_BEFORE_CROSS_ENTROPY, (), ()).result(120)
    assert result.findings == check_source(SOFTMAX_BEFORE_CROSS_ENTROPY).findings
    assert [f.code for f in result.findings] == ["TL301"]
    assert worker.submit(SOFTMAX_BEFORE_CROSS_ENTROPY, (), ("TL301",)).result(60).findings == []


def test_a_dead_checking_process_is_started_again(worker):
    worker.submit("import torch\n", (), ()).result(120)
    [process] = worker._pool._processes.values()
    process.kill()
    process.join(10)
    # The pool notices the death on its own thread; whichever submit sees it starts a new process.
    for _ in range(50):
        try:
            result = worker.submit(SOFTMAX_BEFORE_CROSS_ENTROPY, (), ()).result(120)
            break
        except Exception:  # BrokenProcessPool for a check submitted just before the pool noticed
            continue
    assert [f.code for f in result.findings] == ["TL301"]


def test_the_worker_never_writes_to_the_servers_stdout(worker, capfd):
    # The worker's stdout is the server's (the LSP stream): whatever is printed there must go to stderr.
    worker.submit("import torch\n", (), ()).result(120)
    worker._pool.submit(print, "来自检查进程 🖨️").result(60)
    captured = capfd.readouterr()
    assert "来自检查进程" not in captured.out and "来自检查进程" in captured.err


def _die() -> None:
    os._exit(3)  # a worker that cannot start (as when the server's main module cannot be imported again)


class _WorkerThatCannotStart(CheckWorker):
    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_die)


def test_checks_move_to_a_thread_when_no_checking_process_can_start():
    worker = _WorkerThatCannotStart()
    try:
        codes = None
        for _ in range(10):
            try:
                codes = [f.code for f in worker.submit(SOFTMAX_BEFORE_CROSS_ENTROPY, (), ()).result(120).findings]
                break
            except BrokenProcessPool:
                continue  # lost checks while the process is tried again
        assert codes == ["TL301"]
        assert worker._thread is not None and worker._pool is None
    finally:
        worker.close()


def test_a_worker_whose_server_died_before_it_started_ends_by_itself():
    """A server killed while its worker is still importing: the worker, handed to another parent by then,
    compares against the server's pid it was given, not the parent it finds, and ends."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    server_pid = int(gone.stdout)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from torchls.check_worker import _start_worker; "
            "_start_worker(int(sys.argv[1])); time.sleep(60)",
            str(server_pid),
        ]
    )
    try:
        assert worker.wait(timeout=15) == 0
    finally:
        worker.kill()
