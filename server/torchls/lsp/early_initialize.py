"""Answer ``initialize`` before pygls and lsprotocol are imported.

Importing lsprotocol's types alone takes about 300 ms (attrs builds 570 classes), longer than the whole answer needs.
So the stdio server reads the first message itself. When it is an ``initialize`` this build of torchls has answered
before, for the same parameters, the answer kept from that time is sent at once. The message is then replayed to
pygls, which handles it exactly as it would have (client capabilities, the workspace, torchls's own handler); its
answer to that request is withheld from the client and compared with the one sent. A difference is logged and kept
for the next start. Anything else (no cache yet, another first message, broken framing) goes to pygls untouched.

This module imports nothing heavy: it runs while the rest of the server is not loaded yet.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import BinaryIO

from torchls import __version__
from torchls.cache_files import cache_dir, write_atomically

log = logging.getLogger(__name__)

KEPT_ANSWERS = 64  # answers kept (one per client and its settings); the oldest go first
# Parameters that change nothing in the answer (the capabilities): the process, the folders opened, the token.
_PARAMS_NOT_IN_THE_ANSWER = ("processId", "rootUri", "rootPath", "workspaceFolders", "workDoneToken")


class ReplayingReader:
    """The bytes already read from stdin, then stdin itself: what pygls reads as its input."""

    def __init__(self, already_read: bytes, stream: BinaryIO) -> None:
        self._replay = io.BytesIO(already_read)
        self._stream = stream

    def readline(self) -> bytes:
        line = self._replay.readline()
        if not line.endswith(b"\n"):  # the replayed bytes ran out inside the line (or before it)
            line += self._stream.readline()
        return line

    def read(self, size: int = -1) -> bytes:
        data = self._replay.read(size)
        if size < 0:
            return data + self._stream.read()
        if len(data) < size:
            data += self._stream.read(size - len(data))
        return data

    def close(self) -> None:
        self._stream.close()


class AnswerWatcher:
    """stdout for pygls: passes every message through except pygls's own answer to an ``initialize`` that was
    answered early, which it compares with the early answer; keeps pygls's answer for the next start."""

    def __init__(self, stream: BinaryIO, request_id: object, answered_early: dict | None, kept_at: Path) -> None:
        self._stream = stream
        self._request_id = request_id
        self._answered_early = answered_early
        self._kept_at = kept_at
        self._waiting = True
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._waiting and self._is_the_answer(data):
                self._waiting = False
                if self._answered_early is not None:
                    return  # the client has its answer already
            self._stream.write(data)
            self._stream.flush()

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        self._stream.close()

    def _is_the_answer(self, data: bytes) -> bool:
        """True when ``data`` (one framed message: pygls writes each message whole) answers the ``initialize``."""
        _, _, body = data.partition(b"\r\n\r\n")
        try:
            message = json.loads(body)
        except ValueError:
            return False
        if not isinstance(message, dict) or "method" in message or message.get("id") != self._request_id:
            return False
        result = message.get("result")
        if "error" in message or not isinstance(result, dict):
            if self._answered_early is not None:
                log.error("initialize was answered early, then failed in the server: %s", message.get("error"))
            _forget(self._kept_at)
            return True
        if self._answered_early is not None and result != self._answered_early:
            log.warning("the early initialize answer differed from the server's; the next start sends the new one")
        if result != self._answered_early:
            _keep(self._kept_at, result)
        return True


def answer_early(stdin: BinaryIO, stdout: BinaryIO) -> tuple[BinaryIO, BinaryIO]:
    """Read the first message; answer it now if it is an ``initialize`` answered before. Returns the input and
    output pygls should use: the input replays what was read here."""
    already_read, message = _read_message(stdin)
    reader = ReplayingReader(already_read, stdin)
    if not isinstance(message, dict) or message.get("method") != "initialize" or "id" not in message:
        return reader, stdout  # type: ignore[return-value]
    kept_at = _answer_file(message.get("params"))
    answer = _read_kept(kept_at)
    if answer is not None:
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer}).encode("utf-8")
        stdout.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdout.flush()
    return reader, AnswerWatcher(stdout, message["id"], answer, kept_at)  # type: ignore[return-value]


def _read_message(stream: BinaryIO) -> tuple[bytes, object]:
    """The raw bytes of the first message and its decoded JSON (None when it is not one well-framed message)."""
    raw = bytearray()
    length: int | None = None
    while True:
        line = stream.readline()
        raw += line
        if not line.endswith(b"\n"):
            return bytes(raw), None  # end of input inside the header
        if not line.strip():
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = int(value.strip())
    if length is None:
        return bytes(raw), None
    body = stream.read(length)
    raw += body
    try:
        return bytes(raw), json.loads(body)
    except ValueError:
        return bytes(raw), None


def _answer_file(params: object) -> Path:
    """Where the answer to these parameters from this build is kept."""
    if isinstance(params, dict):
        params = {key: value for key, value in params.items() if key not in _PARAMS_NOT_IN_THE_ANSWER}
    key = json.dumps([_build_fingerprint(), params], sort_keys=True, default=str)
    return cache_dir() / "initialize" / (hashlib.sha256(key.encode("utf-8")).hexdigest()[:24] + ".json")


def _build_fingerprint() -> list:
    """What decides the answer besides the parameters: this Python, torchls's code, pygls's and lsprotocol's."""
    package = Path(__file__).resolve().parent.parent
    stamps: list = [__version__, sys.version, str(package)]
    for root, folders, files in os.walk(package):
        folders[:] = sorted(folder for folder in folders if folder != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                status = os.stat(os.path.join(root, name))
                stamps.append((name, status.st_mtime_ns, status.st_size))
    for library in ("pygls", "lsprotocol"):
        stamps.append(_installed_version_stamp(library))
    return stamps


def _installed_version_stamp(library: str) -> object:
    import importlib.util  # finding a top-level package does not import it

    try:
        spec = importlib.util.find_spec(library)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    status = os.stat(spec.origin)
    return (spec.origin, status.st_mtime_ns, status.st_size)


def _read_kept(path: Path) -> dict | None:
    try:
        answer = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, dict) else None


def _keep(path: Path, answer: dict) -> None:
    if write_atomically(path, json.dumps(answer).encode("utf-8"), "initialize answer"):
        _prune(path.parent)


def _forget(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _prune(folder: Path) -> None:
    """Keep the newest :data:`KEPT_ANSWERS` answers."""
    try:
        kept = sorted(folder.glob("*.json"), key=lambda path: path.stat().st_mtime_ns, reverse=True)
        for path in kept[KEPT_ANSWERS:]:
            path.unlink()
    except OSError as error:
        log.info("could not prune the kept initialize answers: %s", error)
