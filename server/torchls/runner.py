"""Running a knowledge-base example in a separate Python process, on the device the user chose.

The process is the user's interpreter (where their torch lives), started isolated (``-I``: no user site, no
``PYTHONPATH``, not even the working directory on ``sys.path``) in a fresh temporary directory, so a ``torch.py``
in the user's project cannot shadow torch. It runs under a timeout after which its whole process group is killed,
a memory limit where the platform has one (not on CUDA, whose runtime reserves a huge address space), and with
its output kept up to a bound. An example picks its device with the handbook's line
(:data:`~torchls.kb.schema.DEVICE_LINE`, ``device = "cuda" if torch.cuda.is_available() else "cpu"``), so pasted
it runs as it is; here that line becomes ``device = "<the chosen device>"`` on the same line (tracebacks keep their
line numbers). Older examples in team folders that use the variable ``DEVICE`` still find it defined.

No LSP types here: the server's command and ``torchls run-example`` both call :class:`Runner`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from torchls.kb.schema import DEVICE_LINE

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MEMORY_MB = 4096
OUTPUT_LIMIT_BYTES = 256 * 1024  # of stdout and of stderr each; the rest is read and dropped
_PROBE_TIMEOUT_SECONDS = 120.0  # importing torch the first time after installing it can take a while
_DEVICE_PATTERN = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")

Status = Literal["ok", "failed", "timeout", "cancelled", "unavailable", "error"]

# Run inside the example's process: reports what its torch can use, as one line of JSON.
_PROBE = """
import json, sys
info = {"python": sys.version.split()[0], "executable": sys.executable}
try:
    import torch
except Exception as error:
    info["torch_error"] = f"{type(error).__name__}: {error}"
else:
    info["torch"] = torch.__version__
    info["cuda_version"] = torch.version.cuda
    try:
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        info["cuda_devices"] = [torch.cuda.get_device_name(i) for i in range(count)]
    except Exception as error:
        info["cuda_devices"] = []
        info["cuda_error"] = f"{type(error).__name__}: {error}"
    mps = getattr(torch.backends, "mps", None)
    info["mps"] = bool(mps is not None and mps.is_available())
print(json.dumps(info))
"""

# Starts the example. DEVICE is for the examples of team folders written before DEVICE_LINE (``torchls kb check``
# reports them); a shipped example never uses it.
_BOOTSTRAP = """
import sys
with open("example.py", encoding="utf-8") as source:
    code = compile(source.read(), "example.py", "exec")
exec(code, {"__name__": "__main__", "DEVICE": sys.argv[1]})
"""


class RunnerProblem(Exception):
    """The interpreter cannot run examples at all; the message is for the user, in Chinese."""


class DeviceUnavailable(Exception):
    """The requested device does not exist in this environment; the message says what was found."""


@dataclass(frozen=True, slots=True)
class TorchInfo:
    """What one interpreter's torch can use, as its own process reports it."""

    executable: str
    python: str
    torch: str
    cuda_version: str | None
    cuda_devices: tuple[str, ...]
    mps: bool

    def describe(self) -> str:
        """In Chinese: the torch version and the accelerators found, for messages about devices."""
        if self.cuda_devices:
            names = "、".join(f"cuda:{i}（{name}）" for i, name in enumerate(self.cuda_devices))
            found = f"找到 {len(self.cuda_devices)} 块 GPU：{names}"
        elif self.cuda_version is None:
            found = "这是不含 CUDA 的版本"
        else:
            found = f"支持 CUDA {self.cuda_version}，但没有找到可用的 GPU"
        if self.mps:
            found += "；MPS 可用"
        return f"torch {self.torch}（{found}）"


@dataclass(frozen=True, slots=True)
class RunResult:
    status: Status
    summary: str  # one line, in Chinese
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    wall_seconds: float = 0.0
    device: str | None = None  # the device the example actually ran on
    torch_version: str | None = None
    truncated: bool = False
    cpu_fallback: bool = False  # the requested device is missing; the same example can run on cpu

    def to_json(self) -> dict:
        return asdict(self)


def with_device(code: str, device: str) -> str:
    """``code`` with each unindented :data:`DEVICE_LINE` replaced by ``device = "<device>"``; no line added or lost."""
    lines = code.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.rstrip() == DEVICE_LINE:
            lines[index] = f'device = "{device}"' + line[len(line.rstrip()) :]
    return "".join(lines)


def is_valid_device(device: str) -> bool:
    return bool(_DEVICE_PATTERN.match(device))


def choose_device(requested: str, info: TorchInfo) -> str:
    """The device to run on; raises :class:`DeviceUnavailable` when the requested one is not there."""
    if requested == "auto":
        return "cuda" if info.cuda_devices else "mps" if info.mps else "cpu"
    if requested == "cpu":
        return "cpu"
    if requested == "mps":
        if not info.mps:
            raise DeviceUnavailable(
                f"请求的设备是 mps，但这个环境里的 {info.describe()}，MPS 不可用（只在 Apple 芯片上）。"
            )
        return "mps"
    index = int(requested.split(":", 1)[1]) if ":" in requested else 0
    if not info.cuda_devices:
        raise DeviceUnavailable(f"请求的设备是 {requested}，但这个环境里的 {info.describe()}。")
    if index >= len(info.cuda_devices):
        raise DeviceUnavailable(
            f"请求的设备是 {requested}，但只有 cuda:0 到 cuda:{len(info.cuda_devices) - 1}：{info.describe()}。"
        )
    return requested


def interpreter_path(interpreter: str | None) -> str:
    """The interpreter to run: the configured one (a path or a command on PATH), else the server's own."""
    if not interpreter:
        return sys.executable
    path = interpreter if os.sep in interpreter else shutil.which(interpreter)
    if path is None or not Path(path).is_file() or not os.access(path, os.X_OK):
        raise RunnerProblem(f"找不到可执行的 Python 解释器：{interpreter}。请检查设置 torchls.runExample.interpreter。")
    return path


# After the example exits: how long its output may still take to arrive before what holds the pipes is killed.
_PIPE_GRACE_SECONDS = 1.0


def _limits(memory_mb: int):
    """A function the child runs before the example: its own process group, and an address-space limit."""

    def apply() -> None:
        os.setsid()  # a group of its own, so a timeout kills whatever the example started too
        if memory_mb > 0:
            import resource

            limit = memory_mb * 1024 * 1024
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


class _Capture:
    """Reads a stream to its end, keeping at most ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            room = self.limit - len(self.kept)
            self.kept += chunk[:room]
            self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n……（输出过长，已截断：只保留前 {self.limit // 1024} KB，省略了 {self.dropped:,} 字节）\n"
        return text


# Every process an example starts inherits this variable with the run's own value: a process that left the
# example's group (``setsid``) or was orphaned (a double fork, a detached child holding the output pipe) is still
# found by it in ``/proc`` and killed with the rest.
RUN_MARKER = "TORCHLS_EXAMPLE_RUN"


def _marked_processes(marker: str) -> list[int]:
    """The processes (Linux ``/proc``) whose environment carries ``RUN_MARKER=marker``."""
    needle = f"{RUN_MARKER}={marker}".encode()
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                environment = Path(entry.path, "environ").read_bytes()
            except OSError:
                continue  # gone meanwhile, or another user's
            if needle in environment.split(b"\0"):
                found.append(int(entry.name))
    return found


def _kill_group(process: asyncio.subprocess.Process, marker: str | None = None) -> None:
    """Kill the example's process group, then every process still carrying the run's marker (twice: one may have
    forked while the first pass ran)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform != "win32":
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    if marker is None or sys.platform == "win32":
        return
    for _ in range(2):
        for pid in _marked_processes(marker):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


class Runner:
    """Runs examples; remembers what each interpreter's torch can use (probing imports torch: seconds)."""

    def __init__(self) -> None:
        self._probes: dict[str, TorchInfo] = {}

    def known(self, interpreter: str | None) -> TorchInfo | None:
        """The probe of ``interpreter`` if it has been done, without starting one."""
        try:
            return self._probes.get(interpreter_path(interpreter))
        except RunnerProblem:
            return None

    async def probe(self, interpreter: str | None) -> TorchInfo:
        """What the interpreter's torch can use; raises :class:`RunnerProblem` when it has no usable torch."""
        executable = interpreter_path(interpreter)
        if executable in self._probes:
            return self._probes[executable]
        try:
            process = await asyncio.create_subprocess_exec(
                executable,
                "-I",
                "-c",
                _PROBE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=tempfile.gettempdir(),
            )
        except OSError as error:
            raise RunnerProblem(f"无法启动 Python 解释器 {executable}：{error}") from error
        try:
            out, err = await asyncio.wait_for(process.communicate(), _PROBE_TIMEOUT_SECONDS)
        except TimeoutError as error:
            process.kill()
            raise RunnerProblem(
                f"解释器 {executable} 在 {_PROBE_TIMEOUT_SECONDS:.0f} 秒内没有完成 torch 的导入。"
            ) from error
        try:
            info = json.loads(out.decode("utf-8", errors="replace").strip().splitlines()[-1])
        except (ValueError, IndexError) as error:
            detail = err.decode("utf-8", errors="replace").strip().splitlines()[-1:] or ["没有输出"]
            raise RunnerProblem(f"解释器 {executable} 无法运行探测脚本：{detail[0]}") from error
        if "torch" not in info:
            raise RunnerProblem(
                f"解释器 {executable}（Python {info.get('python', '?')}）里没有可用的 torch"
                f"（{info.get('torch_error', '导入失败')}）。请在这个环境里安装 torch，"
                "或在设置 torchls.runExample.interpreter 中指定装有 torch 的解释器。"
            )
        probed = TorchInfo(
            executable=executable,
            python=info["python"],
            torch=info["torch"],
            cuda_version=info.get("cuda_version"),
            cuda_devices=tuple(info.get("cuda_devices", ())),
            mps=bool(info.get("mps")),
        )
        self._probes[executable] = probed
        return probed

    async def run(
        self,
        code: str,
        *,
        device: str = "auto",
        interpreter: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        memory_mb: int = DEFAULT_MEMORY_MB,
        output_limit: int = OUTPUT_LIMIT_BYTES,
        stop: asyncio.Event | None = None,
    ) -> RunResult:
        """Run ``code`` and report. Setting ``stop`` ends the run as "cancelled", with the output so far;
        cancelling the awaiting task kills the process too (and what it started) and raises as usual."""
        if not is_valid_device(device):
            return RunResult("error", f"设备 {device!r} 无效：应为 auto、cpu、cuda、cuda:N 或 mps。")
        try:
            info = await self.probe(interpreter)
            chosen = choose_device(device, info)
        except RunnerProblem as problem:
            return RunResult("error", str(problem))
        except DeviceUnavailable as missing:
            return RunResult(
                "unavailable", f"{missing}可以改在 cpu 上运行。", torch_version=info.torch, cpu_fallback=True
            )
        with tempfile.TemporaryDirectory(prefix="torchls-example-") as folder:
            Path(folder, "example.py").write_text(with_device(code, chosen), encoding="utf-8")
            return await self._execute(info, chosen, folder, timeout, memory_mb, output_limit, stop)

    async def _execute(
        self,
        info: TorchInfo,
        device: str,
        folder: str,
        timeout: float,
        memory_mb: int,
        output_limit: int,
        stop: asyncio.Event | None,
    ) -> RunResult:
        # CUDA reserves tens of GB of address space at start-up: an address-space limit would break it.
        limit = 0 if device.startswith("cuda") else memory_mb
        started = time.perf_counter()
        marker = uuid.uuid4().hex
        process = await asyncio.create_subprocess_exec(
            info.executable,
            "-I",
            "-X",
            "utf8",
            "-c",
            _BOOTSTRAP,
            device,
            cwd=folder,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            preexec_fn=_limits(limit) if sys.platform != "win32" else None,
            env={**os.environ, RUN_MARKER: marker},
        )
        stdout, stderr = _Capture(output_limit), _Capture(output_limit)
        assert process.stdout is not None and process.stderr is not None
        readers = asyncio.gather(stdout.drain(process.stdout), stderr.drain(process.stderr))
        stopped = asyncio.ensure_future(stop.wait()) if stop is not None else None
        exited = asyncio.ensure_future(_exit_of(process))
        status: Status
        try:
            waiting = {exited} if stopped is None else {exited, stopped}
            done, _ = await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if exited in done:  # the output that is still in the pipes, unless something it started holds them
                await asyncio.wait({readers}, timeout=_PIPE_GRACE_SECONDS)
        except asyncio.CancelledError:
            _kill_group(process, marker)
            await _reap(process, readers)
            raise
        finally:
            if stopped is not None:
                stopped.cancel()
        if exited in done:
            status = "ok" if process.returncode == 0 else "failed"
            _kill_group(process, marker)  # anything the example left running goes too, and the pipes it held
            await _reap(process, readers)
        else:
            exited.cancel()
            status = "cancelled" if stopped is not None and stopped in done else "timeout"
            _kill_group(process, marker)
            await _reap(process, readers)
        wall = time.perf_counter() - started
        result = RunResult(
            status=status,
            summary="",
            stdout=stdout.text(),
            stderr=stderr.text(),
            exit_code=process.returncode,
            wall_seconds=round(wall, 3),
            device=device,
            torch_version=info.torch,
            truncated=bool(stdout.dropped or stderr.dropped),
        )
        return _with_summary(result, timeout, memory_mb if limit else 0)


async def _exit_of(process: asyncio.subprocess.Process) -> int:
    """The exit code, as soon as the process exits: ``process.wait()`` also waits for its pipes to close, which a
    child the example left running may hold open for as long as it runs."""
    while process.returncode is None:
        await asyncio.sleep(0.05)
    return process.returncode


async def _reap(process: asyncio.subprocess.Process, readers: asyncio.Future) -> None:
    """Wait for a killed process and for its pipes to close (its children held them too)."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(process.wait(), 10)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(readers, 10)


def _with_summary(result: RunResult, timeout: float, memory_mb: int) -> RunResult:
    where = f"在 {result.device} 上（torch {result.torch_version}）"
    if result.status == "ok":
        summary = f"示例{where}运行成功，用时 {result.wall_seconds:.2f} 秒。"
    elif result.status == "timeout":
        summary = f"示例{where}运行超过 {timeout:g} 秒，已终止（连同它启动的进程）。"
    elif result.status == "cancelled":
        summary = f"示例{where}运行 {result.wall_seconds:.1f} 秒后被取消，进程已终止。"
    else:
        last = next((line for line in reversed(result.stderr.splitlines()) if line.strip()), "")
        if "MemoryError" in result.stderr or ("out of memory" in last.lower() and memory_mb):
            last += f"（内存上限 {memory_mb} MB，可在设置 torchls.runExample.memoryLimitMb 中调整）"
        summary = f"示例{where}运行失败（退出码 {result.exit_code}）：{last or '没有错误输出'}"
    if result.truncated:
        summary += " 输出过长，已截断。"
    return RunResult(**{**result.to_json(), "summary": summary})
