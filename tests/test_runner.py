"""The example runner with real processes: the installed torch, real timeouts, real process groups."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from torchls.kb.schema import DEVICE_LINE
from torchls.runner import Runner, with_device

NO_CUDA = not torch.cuda.is_available()


def run(code: str, **options):
    return asyncio.run(Runner().run(code, **options))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it has exited all the same.
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


def test_an_example_runs_on_cpu_and_its_output_comes_back():
    code = f"import torch\n\n{DEVICE_LINE}\nprint('设备', device, torch.ones(2, device=device).sum().item())\n"
    result = run(code, device="cpu")
    assert result.status == "ok", result
    assert result.stdout == "设备 cpu 2.0\n"
    assert (result.device, result.torch_version, result.exit_code) == ("cpu", torch.__version__, 0)
    assert "运行成功" in result.summary


@pytest.mark.skipif(not NO_CUDA, reason="this machine has CUDA")
def test_auto_falls_back_to_cpu_and_cuda_is_explained_not_raised():
    assert run(f"import torch\n{DEVICE_LINE}\nprint(device)\n").stdout == "cpu\n"
    result = run(f"import torch\n{DEVICE_LINE}\nprint(device)\n", device="cuda")
    assert result.status == "unavailable" and result.cpu_fallback
    assert torch.__version__ in result.summary and "cuda" in result.summary and "cpu" in result.summary
    assert not result.stdout


def test_the_device_line_becomes_the_chosen_device_on_the_same_line():
    code = f"import torch\n\n{DEVICE_LINE}\n\nx = torch.ones(1, device=device)\n"
    assert with_device(code, "cuda:1") == 'import torch\n\ndevice = "cuda:1"\n\nx = torch.ones(1, device=device)\n'
    assert with_device(code, "cuda:1").count("\n") == code.count("\n")
    # Only the exact, unindented line: anything else is the example's own code.
    for other in (f"    {DEVICE_LINE}\n", f"{DEVICE_LINE}  # 注释\n", 'device = "cpu"\n', "print(1)\n"):
        assert with_device(other, "mps") == other
    assert with_device(f"{DEVICE_LINE}\r\nprint(device)\r\n", "mps") == 'device = "mps"\r\nprint(device)\r\n'


def test_the_chosen_device_reaches_the_example_and_tracebacks_keep_their_line_numbers():
    code = f"import torch\n\n{DEVICE_LINE}\n\nprint('设备', device)\nraise ValueError(device)\n"
    result = run(code, device="cpu")
    assert result.status == "failed" and result.stdout == "设备 cpu\n"
    assert 'File "example.py", line 6' in result.stderr and "ValueError: cpu" in result.stderr


def test_an_old_example_that_uses_device_in_capitals_still_runs():
    """Team folders may have examples written before DEVICE_LINE: the runner still defines DEVICE for them."""
    result = run("print(DEVICE)\n", device="cpu")
    assert result.status == "ok" and result.stdout == "cpu\n"


def test_an_example_that_never_ends_is_killed_with_what_it_started(tmp_path):
    pids = tmp_path / "pids"
    code = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "while True:\n    time.sleep(0.1)\n"
    )
    started = time.monotonic()
    result = run(code, device="cpu", timeout=3)
    assert result.status == "timeout", result
    assert time.monotonic() - started < 20
    assert "3 秒" in result.summary
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"process {pid} outlived the timeout"


_ESCAPING_CHILD = (
    "import os, subprocess, sys, time\n"
    # A child that leaves the example's process group (setsid) and keeps the output pipe open.
    "child = subprocess.Popen([sys.executable, '-c', 'import os, time; os.setsid(); time.sleep(600)'])\n"
    "open({pids!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
    "print('起步 🚀', flush=True)\n"
)


@pytest.mark.skipif(sys.platform == "win32", reason="process groups and /proc: Linux and macOS")
def test_a_grandchild_that_left_the_group_is_killed_at_the_timeout(tmp_path):
    pids = tmp_path / "pids"
    code = _ESCAPING_CHILD.format(pids=str(pids)) + "while True:\n    time.sleep(0.1)\n"
    started = time.monotonic()
    result = run(code, device="cpu", timeout=3)
    assert result.status == "timeout", result
    assert time.monotonic() - started < 15
    time.sleep(0.2)
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"process {pid} outlived the timeout"


@pytest.mark.skipif(sys.platform == "win32", reason="process groups and /proc: Linux and macOS")
def test_an_example_that_ends_leaving_a_detached_child_on_its_pipe_is_reported_at_once(tmp_path):
    pids = tmp_path / "pids"
    started = time.monotonic()
    result = run(_ESCAPING_CHILD.format(pids=str(pids)), device="cpu", timeout=30)
    assert result.status == "ok", result
    assert "起步 🚀" in result.stdout
    assert time.monotonic() - started < 15  # not the 30 s timeout, nor waiting on the child's pipe
    time.sleep(0.2)
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"process {pid} outlived the example"


def test_megabytes_of_output_are_truncated_with_a_note():
    result = run("import sys\nsys.stdout.write('张量' * 2_000_000)\nprint('done', file=sys.stderr)\n", device="cpu")
    assert result.status == "ok" and result.truncated
    assert len(result.stdout.encode("utf-8")) < 300 * 1024
    assert "输出过长，已截断" in result.stdout and "已截断" in result.summary
    assert result.stderr == "done\n"


def test_a_failing_example_reports_its_error_in_one_line():
    result = run("import torch\ntorch.zeros(2, 3) @ torch.zeros(2, 3)\n", device="cpu")
    assert result.status == "failed" and result.exit_code == 1
    assert "RuntimeError" in result.summary and "Traceback" in result.stderr


def test_the_memory_limit_stops_a_runaway_allocation():
    result = run("buffer = bytearray(8 * 1024 ** 3)\n", device="cpu", memory_mb=1024)
    assert result.status == "failed"
    assert "MemoryError" in result.summary and "1024 MB" in result.summary


def test_a_missing_interpreter_and_one_without_torch_are_explained(tmp_path):
    missing = run("print(1)\n", interpreter=str(tmp_path / "没有这个" / "python"))
    assert missing.status == "error" and "找不到可执行的 Python 解释器" in missing.summary
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    bare = tmp_path / "bare" / "bin" / "python"
    without_torch = run("print(1)\n", interpreter=str(bare))
    assert without_torch.status == "error"
    assert "没有可用的 torch" in without_torch.summary and "ModuleNotFoundError" in without_torch.summary


def test_a_torch_py_in_the_users_project_does_not_shadow_torch(tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    (project / "torch.py").write_text("raise SystemExit('the user torch.py was imported')\n", encoding="utf-8")
    monkeypatch.chdir(project)
    monkeypatch.setenv("PYTHONPATH", str(project))
    result = run("import torch\nprint(torch.__file__.endswith('__init__.py'))\n", device="cpu")
    assert result.status == "ok", result
    assert result.stdout == "True\n"


def test_cancelling_stops_the_process(tmp_path):
    pid_file = tmp_path / "pid"
    code = f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n"

    async def start_then_cancel() -> int:
        task = asyncio.create_task(Runner().run(code, device="cpu", timeout=600))
        for _ in range(600):
            if pid_file.exists() and pid_file.read_text():
                break
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return int(pid_file.read_text())

    pid = asyncio.run(start_then_cancel())
    assert not _alive(pid)


def test_a_bad_device_name_is_refused():
    result = run("print(1)\n", device="gpu0")
    assert result.status == "error" and "cuda:N" in result.summary


@pytest.mark.gpu
@pytest.mark.skipif(NO_CUDA, reason="no CUDA device on this machine")
def test_examples_run_on_cuda():
    from torchls.kb.base import KnowledgeBase

    example = KnowledgeBase.load().get("torch.nn.CrossEntropyLoss").examples[0]
    result = run(example.code, device="cuda")
    assert result.status == "ok", result
    assert result.device == "cuda"
    out_of_range = run("print(1)\n", device=f"cuda:{torch.cuda.device_count()}")
    assert out_of_range.status == "unavailable" and "cuda:0" in out_of_range.summary


def test_stopping_returns_what_was_printed_and_ends_the_process(tmp_path):
    pid_file = tmp_path / "pid"
    code = f"import os, time\nprint('运行中', flush=True)\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
    code += "time.sleep(600)\n"

    async def start_then_stop():
        stop = asyncio.Event()
        task = asyncio.create_task(Runner().run(code, device="cpu", stop=stop))
        for _ in range(600):
            if pid_file.exists() and pid_file.read_text():
                break
            await asyncio.sleep(0.05)
        stop.set()
        return await task

    result = asyncio.run(start_then_stop())
    assert result.status == "cancelled" and "被取消" in result.summary
    assert result.stdout == "运行中\n"
    assert not _alive(int(pid_file.read_text()))
