"""A seeded, bounded fuzzer for the torchls language server, speaking raw JSON-RPC over stdio.

It starts the real server (the ``torchls`` console script beside this interpreter, with its knowledge cache in a
temporary folder), initializes it the way VS Code does (UTF-16 positions, markdown hovers, snippet completions,
work-done progress) and then takes N random steps drawn from ``random.Random(seed)``, so a seed replays the same
session:

- open, change (whole text, or a range: valid, past the end, reversed) and close documents whose text is built from
  realistic torch code and hostile pieces (Chinese comments, emoji, NUL, a 20,000-character line, 300-deep brackets,
  unterminated strings, tabs, CRLF and lone CR line ends);
- hover, completion, completionItem/resolve (real items and made-up ``data``), signatureHelp and codeAction (with
  the diagnostics last published and with made-up ones) at valid positions, at the end of a line, past the end and
  inside an emoji, also on documents never opened;
- ``$/cancelRequest`` for a request just sent, and workspace/didChangeConfiguration with valid and invalid settings.

Every byte the server writes on stdout is read by a thread that checks the framing. Each step is classified:
a crash (the server exited), a hang (it stops answering anything), a request left unanswered, an internal error
(-32603), another error code (-32602 invalid params and -32800 cancelled are allowed), stdout that is not a
well-framed JSON-RPC message, and answers whose ranges are invalid for the document (hover ``range``, code action
edits, completion edits, published diagnostics). Tracebacks the server logs on stderr are counted too (the server
answers null for a failing handler, so its log is where such a failure shows).

Run it (exit status 1 when a crash, hang, unanswered request, -32603, stdout corruption or invalid range was seen)::

    .venv/bin/python bench/fuzz_lsp.py --seed 1 --steps 300 [--timeout 10] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The problem kinds that fail a run, and those only reported.
FAILING = ("crash", "hang", "unanswered", "internal-error", "stdout-corruption", "invalid-range")
REPORTED = ("other-error", "server-traceback")
ALLOWED_ERRORS = {-32602: "invalid params", -32800: "cancelled"}
INITIALIZE_TIMEOUT = 120.0
MAX_UNANSWERED = 3  # after this many, the rest of the run would only wait out deadlines

Json = Any
LOG_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")  # the start of a line the server logs


def server_request_result(message: Json) -> Json:
    """What this client answers a request of the server: null, and for workspace/configuration a null per item.

    A bare null there is not what the protocol allows (an array): pygls cannot read it, logs a traceback and drops
    the answer, and the server waits for it forever; what is fuzzed here is the server, not that path.
    """
    if message.get("method") == "workspace/configuration":
        return [None] * len((message.get("params") or {}).get("items") or [])
    return None


# ---------------------------------------------------------------------------------------------------------------
# Document text

IMPORTS = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
SNIPPETS = [
    "import torch\n",
    "import torch.nn as nn\n",
    "import torch.nn.functional as F\n",
    "from torch.utils.data import DataLoader, TensorDataset\n",
    "x = torch.randn(2, 3)\n",
    "y = x.view(3, 2).sum(dim=0)\n",
    "w = torch.zeros(3, 4, requires_grad=True)\n",
    "loss = F.cross_entropy(logits, target)\n",
    "logits = model(x)\nprobs = torch.softmax(logits, dim=-1)\n",
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.fc = nn.Linear(3, 4)\n\n    def forward(self, x):\n        return self.fc(x).relu()\n",
    "model = Net()\noptimizer = torch.optim.Adam(model.parameters(), lr=1e-3)\n",
    "for epoch in range(3):\n    optimizer.zero_grad()\n    out = model(x)\n"
    "    loss = F.mse_loss(out, torch.ones_like(out))\n    loss.backward()\n    optimizer.step()\n",
    "with torch.no_grad():\n    pred = model(x).argmax(1)\n",
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nmodel.to(device)\n",
    "loader = DataLoader(TensorDataset(x, y), batch_size=2, shuffle=True)\n",
    "t = torch.tensor([1, 2, 3]).float().mean()\n",
    "torch.",
    "x.",
    "F.cross_entropy(",
    "nn.Linear(3, ",
    "model.",
]
HOSTILE = [
    "# 中文注释：训练循环，损失不下降\n",
    "s = '表情 😀🎉 混合'  # 😀\n",
    "x = torch.randn(2, 3)  # 👍🏽 emoji 👨‍👩‍👧\n",
    "a = 'nul \x00 here'\x00\n",
    "line = " + "1 + " * 5000 + "1\n",  # a 20,000-character line
    "deep = " + "[" * 300 + "]" * 300 + "\n",
    "open = " + "(" * 300 + "\n",
    "s = 'unterminated\n",
    'doc = """never closed\n',
    "\tif True:\n\t\tx = torch.ones(1)\n",
    "y = torch.zeros(2)\r\nz = y + 1\r\n",
    "old_mac = 1\rnext_line = 2\r",
    "def f(:\n    return\n",
    "",
]
# Python's str.splitlines also breaks at \x0b, \x0c, \x1c-\x1e, \x85, \u2028 and \u2029 and pygls follows it, while
# LSP clients break only at \n, \r\n and \r: text with those would make this fuzzer's line numbers differ from the
# server's on purpose, so the pieces above leave them out.


def build_text(rng: random.Random) -> str:
    """A document of a few snippets, most of them realistic, with the occasional hostile piece."""
    pieces = [rng.choice(HOSTILE if rng.random() < 0.3 else SNIPPETS) for _ in range(rng.randint(0, 8))]
    text = (IMPORTS if rng.random() < 0.8 else "") + "".join(pieces)
    if rng.random() < 0.1:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return text


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as an LSP client counts them (without their ends; a final newline opens a last line)."""
    return re.split(r"\r\n|\r|\n", text)


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def position_at(text: str, offset: int) -> dict[str, int]:
    """The LSP position (UTF-16 characters) of the code point ``offset`` of ``text``."""
    lines = split_lines(text[:offset])
    return {"line": len(lines) - 1, "character": utf16_len(lines[-1])}


def safe_offset(text: str, offset: int) -> int:
    """``offset``, moved off the middle of a CRLF line end (no LSP position names it)."""
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        return offset - 1
    return offset


def range_problem(text: str, value: Json) -> str | None:
    """Why ``value`` is not a valid LSP range in ``text`` (None when it is)."""
    try:
        start, end = value["start"], value["end"]
        points = [(start["line"], start["character"]), (end["line"], end["character"])]
    except (KeyError, TypeError):
        return f"not a range: {value!r}"
    lines = split_lines(text)
    for line, character in points:
        if not isinstance(line, int) or not isinstance(character, int) or line < 0 or character < 0:
            return f"negative or not an integer: {value!r}"
        if line >= len(lines):
            return f"line {line} past the last line {len(lines) - 1}"
        if character > utf16_len(lines[line]):
            return f"character {character} past the end of line {line} ({utf16_len(lines[line])})"
    if points[0] > points[1]:
        return f"start after end: {value!r}"
    return None


# ---------------------------------------------------------------------------------------------------------------
# The server, over stdio


@dataclass
class Problem:
    kind: str
    method: str
    params: Json
    detail: str


class Server:
    """The server process; a thread reads every byte of its stdout and checks the framing."""

    def __init__(self, cache_dir: Path, on_problem: Callable[[Problem], None]) -> None:
        command = [str(Path(sys.executable).with_name("torchls"))]
        env = {**os.environ, "TORCHLS_CACHE_DIR": str(cache_dir)}
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.on_problem = on_problem
        self.answers: dict[int, Json] = {}
        self.diagnostics: dict[str, Json] = {}  # uri -> the last publishDiagnostics params
        self.stderr_tail: deque[str] = deque(maxlen=200)
        self.tracebacks: list[str] = []
        self.changed = threading.Condition()
        self.write_lock = threading.Lock()
        self.next_id = 1
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: Json) -> bool:
        """Writes one framed message; False when the server's stdin is closed."""
        body = json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False).encode("utf-8")
        try:
            with self.write_lock:
                self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return False
        return True

    def request(self, method: str, params: Json) -> int:
        request_id = self.next_id
        self.next_id += 1
        self.send({"id": request_id, "method": method, **({} if params is None else {"params": params})})
        return request_id

    def notify(self, method: str, params: Json) -> None:
        self.send({"method": method, **({} if params is None else {"params": params})})

    def wait(self, request_id: int, timeout: float) -> Json | None:
        """The answer to ``request_id``, or None when none came within ``timeout`` seconds or the server exited."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while request_id not in self.answers:
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive():
                    return None
                self.changed.wait(min(left, 0.2))
            return self.answers[request_id]

    def _read_stdout(self) -> None:
        stdout = self.process.stdout
        while True:
            headers = self._read_headers(stdout)
            if headers is None:
                return
            length = headers.get("content-length", "")
            if not length.isdigit():
                self._corrupt(f"headers without a Content-Length: {headers!r}")
                continue
            body = stdout.read(int(length))
            if len(body) < int(length):
                self._corrupt(f"a body cut short ({len(body)} of {length} bytes): {body[:200]!r}")
                return
            self._dispatch(body)
        with self.changed:
            self.changed.notify_all()

    def _read_headers(self, stdout: Any) -> dict[str, str] | None:
        """The header block of the next message, None at the end of stdout; malformed lines are reported."""
        headers: dict[str, str] = {}
        while True:
            line = stdout.readline()
            if not line:
                with self.changed:
                    self.changed.notify_all()
                return None
            if line == b"\r\n":
                return headers
            name, colon, value = line.decode("ascii", "replace").partition(":")
            if not colon or not line.endswith(b"\r\n") or not re.fullmatch(r"[A-Za-z-]+", name):
                self._corrupt(f"a line that is not a header: {line[:200]!r}")
                continue
            headers[name.lower()] = value.strip()

    def _dispatch(self, body: bytes) -> None:
        try:
            message = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            self._corrupt(f"a body that is not JSON ({error}): {body[:200]!r}")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._corrupt(f"not a JSON-RPC 2.0 message: {body[:200]!r}")
            return
        if "method" in message and "id" in message:
            self.send({"id": message["id"], "result": server_request_result(message)})
        elif message.get("method") == "textDocument/publishDiagnostics":
            params = message.get("params") or {}
            self.diagnostics[params.get("uri")] = params
        elif "id" in message and "method" not in message:
            with self.changed:
                self.answers[message["id"]] = message
                self.changed.notify_all()

    def _corrupt(self, detail: str) -> None:
        self.on_problem(Problem("stdout-corruption", "(stdout)", None, detail))

    def _read_stderr(self) -> None:
        """Keeps the end of the log, and each log record that holds a traceback."""
        record: list[str] = []
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.stderr_tail.append(line)
            if LOG_RECORD.match(line):
                self._keep_traceback(record)
                record = []
            record.append(line)
        self._keep_traceback(record)

    def _keep_traceback(self, record: list[str]) -> None:
        if any("Traceback (most recent call last)" in line for line in record):
            self.tracebacks.append("\n".join(record))

    def stop(self, timeout: float) -> None:
        """shutdown, exit, and a kill if it does not go."""
        if self.alive():
            request_id = self.request("shutdown", None)
            self.wait(request_id, timeout)
            self.notify("exit", None)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# ---------------------------------------------------------------------------------------------------------------
# The fuzzing session

CAPABILITIES = {
    "general": {"positionEncodings": ["utf-16"]},
    "window": {"workDoneProgress": True, "showMessage": {"messageActionItem": {"additionalPropertiesSupport": True}}},
    "workspace": {
        "configuration": True,
        "workspaceFolders": True,
        "didChangeConfiguration": {"dynamicRegistration": True},
    },
    "textDocument": {
        "synchronization": {"dynamicRegistration": True, "didSave": True, "willSave": True},
        "hover": {"dynamicRegistration": True, "contentFormat": ["markdown", "plaintext"]},
        "completion": {
            "dynamicRegistration": True,
            "contextSupport": True,
            "completionItem": {
                "snippetSupport": True,
                "commitCharactersSupport": True,
                "documentationFormat": ["markdown", "plaintext"],
                "deprecatedSupport": True,
                "preselectSupport": True,
                "tagSupport": {"valueSet": [1]},
                "insertReplaceSupport": True,
                "resolveSupport": {"properties": ["documentation", "detail", "additionalTextEdits"]},
                "insertTextModeSupport": {"valueSet": [1, 2]},
                "labelDetailsSupport": True,
            },
            "completionList": {"itemDefaults": ["commitCharacters", "editRange", "insertTextFormat", "data"]},
        },
        "signatureHelp": {
            "dynamicRegistration": True,
            "signatureInformation": {
                "documentationFormat": ["markdown", "plaintext"],
                "parameterInformation": {"labelOffsetSupport": True},
                "activeParameterSupport": True,
            },
            "contextSupport": True,
        },
        "codeAction": {
            "dynamicRegistration": True,
            "isPreferredSupport": True,
            "disabledSupport": True,
            "dataSupport": True,
            "resolveSupport": {"properties": ["edit"]},
            "codeActionLiteralSupport": {
                "codeActionKind": {"valueSet": ["", "quickfix", "refactor", "source", "source.organizeImports"]}
            },
            "honorsChangeAnnotations": True,
        },
        "publishDiagnostics": {
            "relatedInformation": True,
            "versionSupport": True,
            "tagSupport": {"valueSet": [1, 2]},
            "codeDescriptionSupport": True,
            "dataSupport": True,
        },
    },
}

VALID_SETTINGS = [
    {"diagnostics": {"enable": True}},
    {"diagnostics": {"enable": False}},
    {"diagnostics": {"select": ["TL1", "TL301"], "ignore": ["TL4"], "severity": {"TL4": "hint"}}},
    {"diagnostics": {"debounceMs": 0}},
    {"completion": {"mode": "enriched"}},
    {"completion": {"mode": "all"}},
    {"hover": {"card": "full"}},
    {"hover": {"card": "compact"}},
    {"runExample": {"enable": False, "device": "cpu", "timeoutSeconds": 5}},
    {},
]
INVALID_SETTINGS = [
    {"diagnostics": {"enable": "yes"}},
    {"diagnostics": {"debounceMs": -5}},
    {"diagnostics": {"debounceMs": "10"}},
    {"diagnostics": {"severity": {"TL4": "loud"}, "select": "TL1"}},
    {"diagnostics": 7},
    {"completion": {"mode": "nope"}},
    {"hover": {"card": 3}},
    {"knowledgePaths": "not-a-list"},
    {"knowledgePaths": ["/x/\x00", "~nonexistentuser/kb", 5]},
    {"runExample": {"device": "tpu", "timeoutSeconds": 10**9, "memoryLimitMb": -1}},
    {"interpreter": 5},
    {"unknownKey": {"deep": [1, 2, 3]}},
]

# Where a hover, a completion or a signature help has something to say: in or after a name, after a dot, a comma or
# an opening parenthesis.
CODE_SPOT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[.(,]")
DOCUMENT_METHODS = ["textDocument/hover", "textDocument/completion", "textDocument/signatureHelp"]


@dataclass
class Document:
    uri: str
    text: str
    version: int
    synced: bool = True  # False after a change whose effect on the server's text this fuzzer does not model
    texts: dict[int, str] = field(default_factory=dict)  # version -> text, to check published diagnostics


@dataclass
class Stats:
    steps: int = 0
    sent: int = 0
    answered: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, Problem] = field(default_factory=dict)
    allowed: dict[str, int] = field(default_factory=dict)  # allowed error answers, by name
    results: dict[str, list[int]] = field(default_factory=dict)  # method -> [answers, answers that are not null]
    tracebacks: dict[str, int] = field(default_factory=dict)  # the last line of each kind the server logged


class Fuzzer:
    def __init__(self, seed: int, timeout: float, verbose: bool, workspace: Path) -> None:
        self.rng = random.Random(seed)
        self.timeout = timeout
        self.verbose = verbose
        self.workspace = workspace
        self.stats = Stats()
        self.lock = threading.Lock()
        self.documents: dict[str, Document] = {}
        self.versions: dict[str, int] = {}  # uri -> the last version of a closed document
        self.completion_items: list[Json] = []
        self.unanswered = 0
        self.stopped: str | None = None  # why the run ended early
        self.server: Server | None = None
        self.checked_diagnostics: set[tuple[str, int]] = set()

    # --- recording

    def record(self, problem: Problem) -> None:
        with self.lock:
            self.stats.counts[problem.kind] = self.stats.counts.get(problem.kind, 0) + 1
            self.stats.first.setdefault(problem.kind, problem)
        if self.verbose:
            log(f"  ! {problem.kind}: {problem.method} {problem.detail[:300]}")

    # --- lifecycle

    def start(self, cache_dir: Path) -> bool:
        self.server = Server(cache_dir, self.record)
        params = {
            "processId": os.getpid(),
            "clientInfo": {"name": "torchls-fuzz", "version": "1"},
            "rootUri": self.workspace.as_uri(),
            "workspaceFolders": [{"uri": self.workspace.as_uri(), "name": "fuzz"}],
            "capabilities": CAPABILITIES,
            "initializationOptions": {},
            "trace": "off",
        }
        answer = self.call("initialize", params, timeout=INITIALIZE_TIMEOUT)
        if answer is None or "result" not in answer:
            self.stopped = "initialize failed"
            return False
        self.server.notify("initialized", {})
        return True

    def run(self, steps: int) -> None:
        actions = self.actions()
        weights = [weight for weight, _ in actions]
        for _ in range(steps):
            if self.stopped:
                break
            self.stats.steps += 1
            action = self.rng.choices([action for _, action in actions], weights)[0]
            if self.verbose:
                log(f"step {self.stats.steps}: {action.__name__}")
            action()
            self.check_alive("(after the step)", None)
            self.check_diagnostics()

    def finish(self) -> None:
        assert self.server is not None
        was_alive = self.server.alive()
        self.server.stop(self.timeout)
        if was_alive and self.server.process.returncode not in (0, None):
            self.record(Problem("crash", "exit", None, f"exit status {self.server.process.returncode}"))
        for traceback in self.server.tracebacks:
            last = traceback.strip().splitlines()[-1]
            self.record(Problem("server-traceback", "(stderr)", None, traceback))
            self.stats.tracebacks[last] = self.stats.tracebacks.get(last, 0) + 1

    def actions(self) -> list[tuple[int, Callable[[], None]]]:
        return [
            (8, self.open_document),
            (10, self.change_whole),
            (10, self.change_range),
            (3, self.close_document),
            (20, self.position_request),
            (6, self.resolve_completion),
            (8, self.code_action),
            (5, self.cancelled_request),
            (4, self.unopened_request),
            (4, self.change_configuration),
        ]

    # --- requests

    def call(self, method: str, params: Json, timeout: float | None = None) -> Json | None:
        """Send a request and classify its answer; returns it (None when none came)."""
        assert self.server is not None
        request_id = self.server.request(method, params)
        self.stats.sent += 1
        return self.settle(request_id, method, params, timeout or self.timeout)

    def settle(self, request_id: int, method: str, params: Json, timeout: float) -> Json | None:
        assert self.server is not None
        answer = self.server.wait(request_id, timeout)
        if answer is None:
            if self.check_alive(method, params):
                self.unanswered += 1
                self.record(Problem("unanswered", method, params, f"no answer within {timeout:g} s"))
                self.probe()
            return None
        self.stats.answered += 1
        tally = self.stats.results.setdefault(method, [0, 0])
        tally[0] += 1
        tally[1] += answer.get("result") is not None
        error = answer.get("error")
        if error is not None:
            self.classify_error(method, params, error)
        return answer

    def classify_error(self, method: str, params: Json, error: Json) -> None:
        code = error.get("code") if isinstance(error, dict) else None
        if code in ALLOWED_ERRORS:
            name = ALLOWED_ERRORS[code]
            self.stats.allowed[name] = self.stats.allowed.get(name, 0) + 1
            return
        kind = "internal-error" if code == -32603 else "other-error"
        self.record(Problem(kind, method, params, json.dumps(error, ensure_ascii=False)[:2000]))

    def probe(self) -> None:
        """After an unanswered request: does the server answer anything at all (pygls answers an unknown method
        itself)? If not, it hangs; either way a run past a few unanswered requests only waits out deadlines."""
        assert self.server is not None
        request_id = self.server.request("torchls/fuzzProbe", {})
        if self.server.wait(request_id, self.timeout) is None and self.server.alive():
            self.record(Problem("hang", "torchls/fuzzProbe", {}, "the server answers nothing any more"))
            self.stopped = "the server hangs"
        elif self.unanswered >= MAX_UNANSWERED:
            self.stopped = f"{self.unanswered} requests unanswered"

    def check_alive(self, method: str, params: Json) -> bool:
        assert self.server is not None
        if self.server.alive():
            return True
        if not self.stopped:
            tail = "\n".join(list(self.server.stderr_tail)[-30:])
            status = self.server.process.returncode
            self.record(Problem("crash", method, params, f"exit status {status}; stderr:\n{tail}"))
            self.stopped = "the server exited"
        return False

    # --- documents

    def new_uri(self) -> str:
        return (self.workspace / f"doc{self.rng.randint(0, 4)}.py").as_uri()

    def some_document(self) -> Document | None:
        return self.documents[self.rng.choice(sorted(self.documents))] if self.documents else None

    def open_document(self) -> None:
        uri = self.new_uri()
        if uri in self.documents:
            self.close(self.documents[uri])
        text = build_text(self.rng)
        # Versions keep rising across a close and a reopen, so a late publish of the old document is not checked
        # against the new text.
        version = self.versions.get(uri, 0) + 1
        self.documents[uri] = Document(uri, text, version, texts={version: text})
        item = {"uri": uri, "languageId": "python", "version": version, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})

    def close_document(self) -> None:
        document = self.some_document()
        if document is not None:
            self.close(document)

    def close(self, document: Document) -> None:
        self.versions[document.uri] = document.version
        del self.documents[document.uri]
        self.notify("textDocument/didClose", {"textDocument": {"uri": document.uri}})

    def change_whole(self) -> None:
        document = self.some_document()
        if document is None:
            return self.open_document()
        self.send_change(document, build_text(self.rng), None)

    def change_range(self) -> None:
        document = self.some_document()
        if document is None:
            return self.open_document()
        piece = self.rng.choice(SNIPPETS + HOSTILE)
        piece = piece[: self.rng.randint(0, len(piece))]
        if not document.synced or self.rng.random() < 0.2:
            self.send_change(document, piece, self.invalid_range(document))
            return
        start, end = sorted(safe_offset(document.text, self.rng.randint(0, len(document.text))) for _ in range(2))
        span = {"start": position_at(document.text, start), "end": position_at(document.text, end)}
        self.send_change(document, document.text[:start] + piece + document.text[end:], span, piece)

    def invalid_range(self, document: Document) -> dict[str, Json]:
        lines = split_lines(document.text)
        line = self.rng.randrange(len(lines))
        past = {"line": line, "character": utf16_len(lines[line]) + self.rng.randint(1, 50)}
        beyond = {"line": len(lines) + self.rng.randint(0, 50), "character": self.rng.randint(0, 5)}
        start = {"line": 0, "character": 0}
        return self.rng.choice(
            [
                {"start": past, "end": past},
                {"start": start, "end": beyond},
                {"start": beyond, "end": beyond},
                {"start": beyond, "end": start},  # reversed
            ]
        )

    def send_change(self, document: Document, text: str, span: Json | None, piece: str | None = None) -> None:
        """A change of ``document``: the whole ``text`` (span None), or ``piece`` over ``span``. An invalid span
        (``text`` is then only the piece) leaves the server's text unknown until the next whole-text change."""
        document.version += 1
        if span is None:
            change: Json = {"text": text}
            document.text, document.synced = text, True
        elif piece is None:
            change = {"range": span, "text": text}
            document.synced = False
        else:
            change = {"range": span, "text": piece}
            document.text = text
        if document.synced:
            document.texts[document.version] = document.text
        params = {"textDocument": {"uri": document.uri, "version": document.version}, "contentChanges": [change]}
        self.notify("textDocument/didChange", params)

    def notify(self, method: str, params: Json) -> None:
        assert self.server is not None
        if not self.server.send({"method": method, "params": params}):
            self.check_alive(method, params)

    # --- positions

    def position(self, document: Document) -> dict[str, int]:
        """A position in ``document``: valid, at the end of a line, past the end, or inside an emoji."""
        lines = split_lines(document.text)
        line = self.rng.randrange(len(lines))
        length = utf16_len(lines[line])
        kind = self.rng.choices(["code", "valid", "end", "past", "emoji", "negative"], [40, 20, 10, 10, 10, 2])[0]
        if kind == "code":
            spots = [match.end() for match in CODE_SPOT.finditer(document.text)]
            if spots:
                end = self.rng.choice(spots)
                return position_at(document.text, end - self.rng.randint(0, 1 if document.text[end - 1] in ".(" else 3))
        if kind == "end":
            return {"line": line, "character": length}
        if kind == "past":
            if self.rng.random() < 0.5:
                return {"line": line, "character": length + self.rng.randint(1, 100)}
            return {"line": len(lines) + self.rng.randint(0, 100), "character": self.rng.randint(0, 10)}
        if kind == "emoji":
            astral = [i for i, char in enumerate(document.text) if ord(char) > 0xFFFF]
            if astral:
                where = position_at(document.text, self.rng.choice(astral))
                return {"line": where["line"], "character": where["character"] + 1}
        if kind == "negative":
            return {"line": line, "character": -1}
        return {"line": line, "character": self.rng.randint(0, length)}

    def position_request(self) -> None:
        document = self.some_document()
        if document is None:
            return self.open_document()
        method = self.rng.choice(DOCUMENT_METHODS)
        params: Json = {"textDocument": {"uri": document.uri}, "position": self.position(document)}
        if method == "textDocument/completion" and self.rng.random() < 0.5:
            params["context"] = {"triggerKind": 2, "triggerCharacter": "."}
        answer = self.call(method, params)
        result = answer.get("result") if answer else None
        if method == "textDocument/hover" and isinstance(result, dict) and "range" in result:
            self.check_range(document, method, params, result["range"])
        if method == "textDocument/completion" and result:
            items = result.get("items", []) if isinstance(result, dict) else result
            self.completion_items = items[:50]
            for item in items:
                self.check_completion_item(document, method, params, item)

    def check_completion_item(self, document: Document, method: str, params: Json, item: Json) -> None:
        edit = item.get("textEdit") if isinstance(item, dict) else None
        if isinstance(edit, dict):
            for key in ("range", "insert", "replace"):
                if key in edit:
                    self.check_range(document, method, params, edit[key])
        for extra in (item.get("additionalTextEdits") or []) if isinstance(item, dict) else []:
            self.check_range(document, method, params, extra.get("range"))

    def check_range(self, document: Document, method: str, params: Json, value: Json, text: str | None = None) -> None:
        if not document.synced and text is None:
            return
        problem = range_problem(document.text if text is None else text, value)
        if problem:
            self.record(Problem("invalid-range", method, params, problem))

    def check_diagnostics(self) -> None:
        """Published diagnostics whose version this fuzzer knows the text of: their ranges must fit that text."""
        assert self.server is not None
        for uri, published in list(self.server.diagnostics.items()):
            document, version = self.documents.get(uri), published.get("version")
            if document is None or version not in document.texts or (uri, version) in self.checked_diagnostics:
                continue
            self.checked_diagnostics.add((uri, version))
            for diagnostic in published.get("diagnostics", []):
                text = document.texts[version]
                self.check_range(document, "textDocument/publishDiagnostics", published, diagnostic.get("range"), text)

    # --- the other requests

    def resolve_completion(self) -> None:
        if self.completion_items and self.rng.random() < 0.6:
            item = self.rng.choice(self.completion_items)
        else:
            data = self.rng.choice(
                [
                    {"name": "torch.nonexistent"},
                    {"name": "torch.nn.Module"},
                    {"name": 5},
                    {"name": ""},
                    {"name": "x" * 5000},
                    {"bogus": [1, 2]},
                    "garbage",
                    None,
                    42,
                ]
            )
            item = {"label": self.rng.choice(["randn", "zeros", "中文", "😀"]), "data": data}
        self.call("completionItem/resolve", item)

    def code_action(self) -> None:
        document = self.some_document()
        if document is None:
            return self.open_document()
        published = (self.server.diagnostics.get(document.uri) or {}) if self.server else {}
        diagnostics = list(published.get("diagnostics", []))
        if not diagnostics or self.rng.random() < 0.4:
            diagnostics = self.made_up_diagnostics(document)
        if diagnostics and self.rng.random() < 0.7:
            span = self.rng.choice(diagnostics)["range"]
        else:
            span = {"start": self.position(document), "end": self.position(document)}
        params = {"textDocument": {"uri": document.uri}, "range": span, "context": {"diagnostics": diagnostics}}
        if self.rng.random() < 0.3:
            params["context"]["only"] = [self.rng.choice(["quickfix", "refactor", "source", "bogus.kind"])]
        answer = self.call("textDocument/codeAction", params)
        for action in (answer or {}).get("result") or []:
            self.check_action(document, params, action)

    def made_up_diagnostics(self, document: Document) -> list[Json]:
        span = {"start": self.position(document), "end": self.position(document)}
        code = self.rng.choice(["TL101", "TL999", "", 7, None])
        data = self.rng.choice([{"bogus": True}, "garbage", None, {"name": "torch.zeros"}, [1, 2]])
        return [
            {"range": span, "message": "made up 中文", "severity": 2, "source": "torchls", "code": code, "data": data}
        ]

    def check_action(self, document: Document, params: Json, action: Json) -> None:
        edit = action.get("edit") if isinstance(action, dict) else None
        if not isinstance(edit, dict):
            return
        edits = list((edit.get("changes") or {}).get(document.uri, []))
        for change in edit.get("documentChanges") or []:
            if isinstance(change, dict) and (change.get("textDocument") or {}).get("uri") == document.uri:
                edits += change.get("edits", [])
        for text_edit in edits:
            self.check_range(document, "textDocument/codeAction", params, text_edit.get("range"))

    def cancelled_request(self) -> None:
        """A request cancelled right after it is sent: it must still be answered (a result, or -32800)."""
        document = self.some_document()
        if document is None:
            return self.open_document()
        assert self.server is not None
        method = self.rng.choice(DOCUMENT_METHODS)
        params = {"textDocument": {"uri": document.uri}, "position": self.position(document)}
        request_id = self.server.request(method, params)
        self.stats.sent += 1
        if self.rng.random() < 0.5:
            time.sleep(self.rng.random() * 0.05)
        self.notify("$/cancelRequest", {"id": request_id})
        self.settle(request_id, method, params, self.timeout)

    def unopened_request(self) -> None:
        uri = (self.workspace / "never" / f"opened{self.rng.randint(0, 3)}.py").as_uri()
        position = {"line": self.rng.randint(0, 5), "character": self.rng.randint(0, 5)}
        method = self.rng.choice([*DOCUMENT_METHODS, "textDocument/codeAction"])
        params: Json = {"textDocument": {"uri": uri}, "position": position}
        if method == "textDocument/codeAction":
            params = {"textDocument": {"uri": uri}, "range": {"start": position, "end": position}}
            params["context"] = {"diagnostics": []}
        self.call(method, params)

    def change_configuration(self) -> None:
        pool = VALID_SETTINGS if self.rng.random() < 0.5 else INVALID_SETTINGS
        settings: Json = {"torchls": self.rng.choice(pool)}
        if self.rng.random() < 0.1:
            settings = self.rng.choice([None, [], "torchls", {"torchls": None}, {"torchls": 5}])
        self.notify("workspace/didChangeConfiguration", {"settings": settings})


# ---------------------------------------------------------------------------------------------------------------
# Running and reporting


def log(line: str) -> None:
    sys.stderr.write(line + "\n")


def fuzz(seed: int, steps: int, timeout: float = 10.0, verbose: bool = False) -> Stats:
    """One fuzzing session against a fresh server; returns what it counted."""
    with tempfile.TemporaryDirectory(prefix="torchls-fuzz-") as folder:
        workspace = Path(folder) / "workspace"
        workspace.mkdir()
        fuzzer = Fuzzer(seed, timeout, verbose, workspace)
        try:
            if fuzzer.start(Path(folder) / "cache"):
                fuzzer.run(steps)
        finally:
            fuzzer.finish()
        if fuzzer.stopped:
            log(f"stopped early: {fuzzer.stopped}")
        return fuzzer.stats


def failures(stats: Stats) -> dict[str, int]:
    """The failing problem kinds seen, with their counts."""
    return {kind: count for kind, count in stats.counts.items() if kind in FAILING}


def summary(stats: Stats, seed: int) -> str:
    lines = [f"seed {seed}: {stats.steps} steps, {stats.sent} requests sent, {stats.answered} answered"]
    for method, (answers, non_null) in sorted(stats.results.items()):
        lines.append(f"    {method}: {answers} answered, {non_null} not null")
    allowed = ", ".join(f"{name} {count}" for name, count in sorted(stats.allowed.items())) or "none"
    lines.append(f"  allowed errors: {allowed}")
    for kind in (*FAILING, *REPORTED):
        count = stats.counts.get(kind, 0)
        lines.append(f"  {kind}: {count}")
        example = stats.first.get(kind)
        if example is not None:
            params = json.dumps(example.params, ensure_ascii=False)
            lines.append(f"    first: {example.method} params={params[:600]}")
            lines.append("    " + example.detail[:1500].replace("\n", "\n    "))
    for last, count in sorted(stats.tracebacks.items()):
        lines.append(f"  traceback x{count}: {last}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds each request may take")
    parser.add_argument("--verbose", action="store_true", help="log each step and problem on stderr")
    args = parser.parse_args(argv)
    started = time.monotonic()
    stats = fuzz(args.seed, args.steps, args.timeout, args.verbose)
    sys.stdout.write(summary(stats, args.seed) + f"\n  ({time.monotonic() - started:.1f} s)\n")
    return 1 if failures(stats) else 0


if __name__ == "__main__":
    sys.exit(main())
