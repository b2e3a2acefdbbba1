"""VS Code itself (code-server 4.100.3 = VS Code 1.100.3, in headless Chromium driven by Playwright) with the packaged
torchls .vsix installed in a fresh profile by the README's own install block (run exactly as written, with ``code``
resolved to code-server), and the project's interpreter a virtual environment that has torch and no torchls: the
.vsix alone brings the server. Checked: the Chinese hover card after Chinese text and an emoji on the same line
(the compact card, whose link opens the full card as a Markdown document), TL301 in the Problems panel at the right
line and column, its quick fix applied from the light-bulb menu, and the "torchls: 运行光标处 API 的示例" command
writing the example's output to the "torchls 示例" output channel (and not to the "torchls" one); and a new user's
first run with a project interpreter that has no torch: one warning saying which interpreter to choose, with a
button that opens the setting, and a server that runs, never restarting.

Each step leaves a screenshot (``vscode-*.png``), and the run its result and logs, next to the other editors'
artifacts. Needs code-server, Chromium and fonts: ``bash tests/editors/install.sh`` installs them."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

from .conftest import NOTEBOOK_CELLS, ROOT, SAMPLE, notebook_json

CODE_SERVER_VERSION = "4.100.3"  # the last one that runs on Node.js 20
DRIVER = Path(__file__).with_name("vscode")
CLIENT = ROOT / "vscode-client"
CHINESE_FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
HOVER_SYMBOL = "nn.CrossEntropyLoss"
FULL_CARD_FILE = "torch.nn.CrossEntropyLoss.md"  # the document the card's link opens
RUN_COMMAND = "torchls: 运行光标处 API 的示例"  # category: title of torchls.runExampleAtCursor
EXAMPLE_CHANNEL = "torchls 示例"
FIX_TITLE = "去掉损失函数参数里的 softmax，直接传 logits"
FIXED_LINE = '说明 = "概率 🎲"; loss = criterion(logits, labels)'
NO_TORCH = "里没有 torch"  # in the first-run warning when the project's interpreter has no torch
CHOOSE_BUTTON = "选择解释器"  # the warning's button that opens the `torchls.interpreter` setting
SHOW_OUTPUT_COMMAND = "torchls: 显示输出"  # category: title of torchls.showOutput
TYPED = "# 选好解释器之前也能照常编辑"
# The repository's parts that packaging reads: the README's block runs in a copy, so the clone's build outputs and
# node_modules stay untouched.
PACKAGED_PARTS = ("pyproject.toml", "README.md", "server", "knowledge", "vscode-client")


def _skip_unless_installed() -> tuple[Path, Path]:
    """code-server and Chromium, or a skip saying what is missing and how to install it."""
    hint = "运行 bash tests/editors/install.sh 安装 / run bash tests/editors/install.sh to install it"
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip(f"Chromium 未安装（Debian：apt-get install chromium）/ Chromium is not installed; {hint}")
    if not CHINESE_FONT.exists():
        pytest.skip(f"中文字体未安装（fonts-wqy-microhei）/ the Chinese font is not installed; {hint}")
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip(f"没有 Node.js 与 npm / Node.js and npm are not installed; {hint}")
    override = os.environ.get("TORCHLS_CODE_SERVER")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "torchls-editors"
    code_server = Path(override) if override else cache / f"code-server-{CODE_SERVER_VERSION}" / "bin" / "code-server"
    if not code_server.exists():
        pytest.skip(f"code-server {CODE_SERVER_VERSION} 未安装（{code_server}）/ code-server is not installed; {hint}")
    return code_server, Path(chromium)


def _run(command: list[str], cwd: Path, what: str, timeout: float, env: dict | None = None) -> str:
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert completed.returncode == 0, f"{what} failed ({completed.returncode}):\n{completed.stdout}{completed.stderr}"
    return completed.stdout


def readme_install_block() -> str:
    """The README's VS Code install block: the fenced block after the paragraph that starts with "**VS Code**"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^\*\*VS Code\*\*.*?^```bash\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert found, "README.md has no ```bash block after its **VS Code** paragraph"
    return found.group(1)


@dataclass
class Installed:
    """The .vsix built by the README's block, and the fresh profile that block installed it into."""

    vsix: Path
    data: Path  # --user-data-dir
    extensions: Path  # --extensions-dir


def _profile_env(root: Path) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith("VSCODE_")}  # no outer VS Code
    env.update(
        HOME=str(root / "home"),
        XDG_CONFIG_HOME=str(root / "home" / ".config"),
        XDG_DATA_HOME=str(root / "home" / ".local" / "share"),
        XDG_CACHE_HOME=str(root / "home" / ".cache"),
        TORCHLS_CACHE_DIR=str(root / "torchls-cache"),
    )
    return env


@pytest.fixture(scope="session")
def readme_installed() -> Iterator[Installed]:
    """The README's VS Code block, run exactly as written from the root of a copy of the repository, with ``code``
    on PATH a shim for code-server with a fresh profile."""
    code_server, _ = _skip_unless_installed()
    # A short folder: code-server puts a unix socket in the profile (at most 107 bytes in its path).
    root = Path(tempfile.mkdtemp(prefix="tlvs-"))
    try:
        repo, shims, data, extensions = root / "repo", root / "bin", root / "data", root / "ext"
        repo.mkdir()
        for part in PACKAGED_PARTS:
            source = ROOT / part
            if source.is_dir():
                ignored = shutil.ignore_patterns("node_modules", "dist", "bundled", "*.vsix", "__pycache__")
                shutil.copytree(source, repo / part, ignore=ignored)
            else:
                shutil.copy(source, repo / part)
        shims.mkdir()
        shim = shims / "code"
        shim.write_text(
            f'#!/bin/sh\nexec "{code_server}" --user-data-dir "{data}" --extensions-dir "{extensions}" "$@"\n',
            encoding="utf-8",
        )
        shim.chmod(0o755)
        env = _profile_env(root)
        env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
        ran = _run(
            ["bash", "-eo", "pipefail", "-c", readme_install_block()], repo, "the README's VS Code block", 900, env
        )
        assert "successfully installed" in ran, ran
        yield Installed(repo / "vscode-client" / "torchls.vsix", data, extensions)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def project_venv() -> str:
    """A project's virtual environment with torch (the test environment's version) and no torchls: its python.
    Cached under ~/.cache/torchls-editors, by torch version, so later runs on this machine reuse it."""
    _skip_unless_installed()
    version = importlib.metadata.version("torch")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "torchls-editors"
    venv = cache / f"project-venv-torch-{version}"
    python = venv / "bin" / "python"
    done = venv / ".torchls-complete"
    if not done.exists():
        shutil.rmtree(venv, ignore_errors=True)
        _run([sys.executable, "-m", "venv", str(venv)], cache, "python -m venv", 120)
        spec = f"torch=={version.split('+')[0]}"
        _run([str(python), "-m", "pip", "install", "-q", spec], cache, f"pip install {spec}", 900)
        done.write_text(spec, encoding="utf-8")
    check = "import importlib.util as u; assert u.find_spec('torch'); assert not u.find_spec('torchls')"
    _run([str(python), "-c", check], cache, "the project venv has torch and no torchls", 60)
    return str(python)


def _utf16_column(line: str, needle: str) -> int:
    return len(line[: line.index(needle)].encode("utf-16-le")) // 2


def _workspace(root: Path, data: Path, interpreter: str) -> Path:
    """The folder VS Code opens (the sample and the settings that point the extension at ``interpreter``) and the
    profile's user settings (nothing that pops up over the editor)."""
    workspace = root / "ws"
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / "训练.py").write_text(SAMPLE, encoding="utf-8")
    (workspace / "实验.ipynb").write_text(notebook_json(NOTEBOOK_CELLS), encoding="utf-8")
    workspace_settings = {"torchls.interpreter": interpreter, "torchls.runExample.device": "cpu"}
    (workspace / ".vscode" / "settings.json").write_text(json.dumps(workspace_settings), encoding="utf-8")
    user_settings = {
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "extensions.ignoreRecommendations": True,
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "security.workspace.trust.enabled": False,
        "editor.minimap.enabled": False,
        "git.enabled": False,
    }
    (data / "User").mkdir(parents=True, exist_ok=True)
    (data / "User" / "settings.json").write_text(json.dumps(user_settings), encoding="utf-8")
    return workspace


def _venv_without_torch(root: Path) -> str:
    """A new virtual environment with nothing installed: a new user's project before torch. Its python."""
    venv = root / "venv-without-torch"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root, "python -m venv", 120)
    python = venv / "bin" / "python"
    check = subprocess.run([str(python), "-c", "import torch"], cwd=root, capture_output=True, text=True, timeout=60)
    assert check.returncode != 0 and "torch" in check.stderr, check  # the scenario needs it missing
    return str(python)


def _start(command: list[str], env: dict, log: Path) -> tuple[subprocess.Popen, int]:
    """code-server on a free port of 127.0.0.1 (it picks one: port 0), in its own process group."""
    with log.open("wb") as sink:
        server = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        found = re.search(r"HTTP server listening on http://127\.0\.0\.1:(\d+)/", log.read_text(errors="replace"))
        if found:
            return server, int(found.group(1))
        if server.poll() is not None:
            break
        time.sleep(0.2)
    _stop(server)
    pytest.fail(f"code-server did not start:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(server: subprocess.Popen) -> None:
    """Stop code-server and everything it started (extension host, torchls, an example still running)."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            return
        try:
            server.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _log(data: Path, name: str) -> Path | None:
    """A log file of this run's extension host (``torchls.log``, ``torchls 示例.log``: the output channels)."""
    logs = data / "logs"
    # A log channel's file is named after it; a plain channel's gets a number in front ("1-torchls 示例.log").
    return next(iter(sorted(logs.rglob(name))), None) or next(iter(sorted(logs.rglob(f"*-{name}"))), None)


def _wait_for_log(data: Path, name: str, needle: str, seconds: float = 30) -> str:
    """The log file's text once it holds ``needle`` (VS Code writes log files behind the UI), or what it holds."""
    deadline = time.monotonic() + seconds
    text = ""
    while time.monotonic() < deadline:
        path = _log(data, name)
        text = path.read_text(encoding="utf-8", errors="replace") if path else ""
        if needle in text:
            break
        time.sleep(0.5)
    return text


def _keep(root: Path, data: Path, artifacts: Path, prefix: str) -> None:
    """This run's screenshots, result and logs into the artifacts folder, their names starting with ``prefix``
    (another run may share it: copy, do not clear it)."""
    kept = {path.name: path for path in (root / "shots").glob("*.png")}
    kept |= {f"{prefix}-result.json": root / "result.json", f"{prefix}-driver.txt": root / "driver.txt"}
    kept[f"{prefix}-code-server.log"] = root / "code-server.log"
    for name in ("torchls.log", "torchls 示例.log", "remoteexthost.log"):
        kept[f"{prefix}-{name.replace(' 示例', '-examples')}"] = _log(data, name)
    for name, source in kept.items():
        if source is not None and source.exists():
            shutil.copy(source, artifacts / name)
    if f"{prefix}-failure.png" not in kept:
        (artifacts / f"{prefix}-failure.png").unlink(missing_ok=True)  # from an earlier run


def _drive_vscode(
    artifacts: Path,
    prefix: str,
    installed: Installed,
    interpreter: Callable[[Path], str],
    config: dict,
    logs: dict[str, str],
    readme_profile: bool = False,
) -> tuple[dict, dict[str, str], dict[str, int]]:
    """One run of VS Code as a new user has it: the .vsix packaged from the current source, in the profile the
    README's block installed it into (``readme_profile``, once per session) or installed into a fresh one,
    code-server started on the sample's folder with ``torchls.interpreter`` set to ``interpreter(root)``,
    and drive.mjs driving it in Chromium with ``config`` (the scenario and its fields) added to its JSON config.
    Returns the driver's result, the text of each log file in ``logs`` (name: the text it waits for, when the run
    succeeded) and the size of each screenshot; screenshots, result and logs are kept in ``artifacts`` under names
    starting with ``prefix``."""
    code_server, chromium = _skip_unless_installed()
    if not (DRIVER / "node_modules" / "playwright-core").is_dir():
        _run(["npm", "ci", "--no-audit", "--no-fund"], DRIVER, "npm ci in tests/editors/vscode", 300)

    # A short folder: code-server puts a unix socket in the profile (at most 107 bytes in its path).
    root = Path(tempfile.mkdtemp(prefix="tlvs-"))
    data, extensions, shots = root / "data", root / "ext", root / "shots"
    if readme_profile:
        data, extensions = installed.data, installed.extensions
    shots.mkdir()
    server = None
    try:
        workspace = _workspace(root, data, interpreter(root))
        env = _profile_env(root)
        profile = ["--user-data-dir", str(data), "--extensions-dir", str(extensions)]
        if not readme_profile:
            done = _run(
                [str(code_server), *profile, "--install-extension", str(installed.vsix)],
                root,
                "installing the .vsix",
                120,
                env,
            )
            assert "successfully installed" in done, done

        server, port = _start(
            [
                str(code_server),
                *profile,
                *("--config", str(root / "config.yaml"), "--auth", "none", "--bind-addr", "127.0.0.1:0"),
                *("--disable-telemetry", "--disable-update-check", "--disable-workspace-trust"),
                "--disable-getting-started-override",
                str(workspace),
            ],
            env,
            root / "code-server.log",
        )
        driver_config = {
            "url": f"http://127.0.0.1:{port}/?folder={quote(str(workspace))}",
            "chromium": str(chromium),
            "shots": str(shots),
            "result": str(root / "result.json"),
            "file": config.get("file", "训练.py"),
            "failureShot": f"{prefix}-failure".removeprefix("vscode-"),  # the driver names it vscode-<this>.png
            "timeoutMs": 120_000,
            **config,
        }
        (root / "driver.json").write_text(json.dumps(driver_config, ensure_ascii=False), encoding="utf-8")
        driven = subprocess.run(
            ["node", str(DRIVER / "drive.mjs"), str(root / "driver.json")],
            cwd=DRIVER,
            env={**env, "HOME": str(root / "browser-home")},
            capture_output=True,
            text=True,
            timeout=480,  # the driver gives up by itself well before; this only guards against a hang
        )
        (root / "driver.txt").write_text(driven.stdout + driven.stderr, encoding="utf-8")
        assert (root / "result.json").exists(), f"the driver wrote no result: {driven.stderr[-3000:]}"
        result = json.loads((root / "result.json").read_text(encoding="utf-8"))
        texts = {name: _wait_for_log(data, name, needle) if result["ok"] else "" for name, needle in logs.items()}
        sizes = {path.stem.removeprefix("vscode-"): path.stat().st_size for path in shots.glob("*.png")}
    finally:
        if server is not None:
            _stop(server)
        _keep(root, data, artifacts, prefix)
        shutil.rmtree(root, ignore_errors=True)
    return result, texts, sizes


def test_vscode_hover_problems_quick_fix_and_example(artifacts, readme_installed, project_venv):
    lines = SAMPLE.splitlines()
    broken = next(text for text in lines if "F.softmax" in text)
    config = {
        "scenario": "features",
        "hover": {"needle": HOVER_SYMBOL, "offset": len("nn.Cross"), "expect": "交叉熵"},
        "fullCard": {"link": "完整卡片", "tab": FULL_CARD_FILE, "expect": "# torch.nn.CrossEntropyLoss"},
        "problemCode": "TL301",
        "fixTitle": FIX_TITLE,
        "brokenText": broken[broken.index("criterion(") :],
        "fixedNeedle": "loss = criterion(",
        "command": RUN_COMMAND,
        "examplePicker": "选择要运行的示例",
        "outputMarker": "--- 输出 ---",
    }
    result, logs, sizes = _drive_vscode(
        artifacts,
        "vscode",
        readme_installed,
        interpreter=lambda root: project_venv,  # torch, and no torchls: the .vsix brings it
        config=config,
        logs={"torchls 示例.log": "True torch.Size", "torchls.log": "扩展自带的 torchls"},
        readme_profile=True,
    )
    channel_log = logs["torchls 示例.log"]
    server_log = logs["torchls.log"]

    assert result["ok"], {key: result.get(key) for key in ("error", "steps", "console")}

    # 0. The server is the one the .vsix carries; jedi reads the project's interpreter.
    assert "扩展自带的 torchls" in server_log and project_venv in server_log, server_log

    # 1. The card for the symbol under the mouse: VS Code sent its (UTF-16) position after the Chinese and the emoji.
    assert "交叉熵" in result["hover"] and "torch.nn.CrossEntropyLoss" in result["hover"], result["hover"]
    # The compact card: pitfalls and an example, no parameter list; its last line links to the full card.
    assert "避坑" in result["hover"] and "示例" in result["hover"], result["hover"]
    assert "标签平滑系数" not in result["hover"] and "形状\n" not in result["hover"], result["hover"]
    assert result["fullCardLink"].startswith("command:torchls.showCard?"), result["fullCardLink"]

    # 1b. Clicking the link opened the full card as a Markdown document (the server wrote it, VS Code opened it).
    assert FULL_CARD_FILE in result["fullCard"]["tab"], result["fullCard"]
    shown = "\n".join(result["fullCard"]["lines"])
    assert "# torch.nn.CrossEntropyLoss" in shown and "**⚠️ 避坑**" in shown, shown

    # 2. Problems panel: TL301 from torchls on the softmax line, starting at `criterion(` (VS Code counts UTF-16 units
    # from 1; the emoji before it is two).
    loss_line = next(i for i, text in enumerate(lines) if "F.softmax" in text)
    [problem] = [row for row in result["problems"] if "TL301" in row["text"]]
    position = re.search(r"\[Ln (\d+), Col (\d+)\]", problem["text"])
    assert position, problem
    assert (int(position.group(1)), int(position.group(2))) == (
        loss_line + 1,
        _utf16_column(lines[loss_line], "criterion(") + 1,
    )
    assert "torchls" in problem["text"] and "softmax" in problem["text"], problem

    # 3. The quick fix from the light-bulb menu changed the line, and the problem went away.
    assert any(FIX_TITLE in action for action in result["actions"]), result["actions"]
    assert result["fixedLine"] == FIXED_LINE
    assert "Errors" not in result["problemsAfterFix"]

    # 4. The command ran the example on cpu; its output is in the "torchls 示例" channel, shown in the Output panel.
    assert result["channel"] == EXAMPLE_CHANNEL, result.get("channel")
    assert "torch.nn.CrossEntropyLoss（设备：cpu）" in result["output"], result["output"]
    assert "True torch.Size([4, 10])" in result["output"], result["output"]
    assert "torch.nn.CrossEntropyLoss（设备：cpu）" in channel_log, channel_log
    assert "--- 输出 ---\nTrue torch.Size([4, 10])" in channel_log, channel_log
    # Only there: not also in the "torchls" channel; and its headers are plain text (no timestamp, no [info]).
    assert "True torch.Size" not in server_log and "--- 输出 ---" not in server_log, server_log
    assert "[info]" not in channel_log and not re.search(r"^\d{4}-\d\d-\d\d ", channel_log, re.MULTILINE), channel_log

    for name in ("1-hover", "1b-full-card", "2-problems", "3-quick-fix-menu", "4-fixed", "5-run-example"):
        assert sizes.get(name, 0) > 10_000, (name, sizes)  # a picture of the workbench, not an empty page


def test_vscode_says_which_interpreter_to_choose_when_the_project_has_no_torch(artifacts, readme_installed):
    """A new user's first run, with ``torchls.interpreter`` pointing to a new virtual environment that has no torch:
    torchls still runs (from the .vsix, on that same Python), and a warning names the interpreter, says what the
    hovers will miss and which setting to change, with a button that opens it. The "torchls" output channel says the
    same once (no server restarting in a loop), and the workbench stays usable (the command palette, the output
    panel, typing in the editor, the notification's buttons). Screenshot: ``vscode-first-run.png``."""
    made: dict[str, str] = {}

    def interpreter(root: Path) -> str:
        made["python"] = _venv_without_torch(root)
        return made["python"]

    config = {
        "scenario": "first-run",
        "fileNeedle": "criterion(",
        "fileLastLine": SAMPLE.splitlines()[-1],
        "notification": {"needle": NO_TORCH, "icon": "warning"},
        "showOutputCommand": SHOW_OUTPUT_COMMAND,
        "channel": "torchls",
        "typed": TYPED,
        "settleMs": 5000,
        "shot": "first-run",
        "settingButton": CHOOSE_BUTTON,
        "settingNeedle": "torchls.interpreter",
    }
    result, logs, sizes = _drive_vscode(
        artifacts,
        "vscode-first-run",
        readme_installed,
        interpreter=interpreter,
        config=config,
        logs={"torchls.log": "找不到 torch"},  # the server's message, logged once its warm-up is done
    )
    assert result["ok"], {key: result.get(key) for key in ("error", "steps", "console")}
    python = made["python"]

    # 1. The warning names the interpreter, says it has no torch and which setting to change, in Chinese, and offers
    # its two buttons. Nothing asks the user to pip-install torchls.
    message = result["notification"]["message"]
    assert python in message and NO_TORCH in message and "torchls.interpreter" in message, message
    assert "pip install" not in message, message
    assert result["notification"]["buttons"] == [CHOOSE_BUTTON, "显示输出"], result["notification"]

    # 2. Once: one warning, one message in the "torchls" output channel (shown from the command palette) and in its
    # log, one start; the server runs (from the .vsix, on the project's Python); no restarts, no "server crashed".
    assert result["noticeToasts"] == 1, result["toasts"]
    assert not any("crash" in toast.lower() for toast in result["toasts"]), result["toasts"]
    assert result["channel"] == "torchls", result["channel"]
    assert result["outputJoined"].count(NO_TORCH) == 1, result["output"]
    server_log = logs["torchls.log"]
    assert server_log.count(NO_TORCH) == 1, server_log
    # The server's own message about the missing torch is in the log only: the extension already said it.
    assert "找不到 torch" in server_log, server_log
    assert not any("找不到 torch" in toast for toast in result["toasts"]), result["toasts"]
    assert server_log.count("正在启动 torchls") == 1, server_log
    assert f"用 {python} 运行扩展自带的 torchls" in server_log, server_log
    assert "启动失败" not in server_log and "crash" not in server_log.lower(), server_log

    # 3. The workbench is usable: the editor took the typed line, and the button opened the setting.
    assert TYPED in result["typedLine"], result["typedLine"]
    assert "torchls.interpreter" in result["setting"], result["setting"]

    assert sizes.get("first-run", 0) > 10_000, sizes


def test_vscode_notebook_cells_are_one_program(artifacts, readme_installed):
    """A Jupyter notebook opened in VS Code's own notebook editor (the built-in ipynb support, no kernel): TL301 of
    the last cell in the Problems panel, and a hover on ``model.head`` in that cell, whose model another cell
    defines. Screenshots: ``vscode-nb-1-problems.png``, ``vscode-nb-2-hover.png``."""
    config = {
        "scenario": "notebook",
        "file": "实验.ipynb",
        "hover": {"needle": "model.head.weight", "offset": len("model.h"), "expect": "torch.nn.Linear"},
        "problemCode": "TL301",
        "fixTitle": FIX_TITLE,
        "brokenText": "cross_entropy(F.softmax(model(x), dim=1), labels)",
        "fixedNeedle": "aux = F.cross_entropy(model(x), labels)",
        "errorsAfterFix": 1,  # the other TL301, whose softmax is in the cell before: no edit of this cell fixes it
    }
    result, _, sizes = _drive_vscode(
        artifacts, "vscode-notebook", readme_installed, interpreter=lambda root: sys.executable, config=config, logs={}
    )
    assert result["ok"], {key: result.get(key) for key in ("error", "steps", "console")}
    # Two TL301 in the last cell. The first one's softmax was made in the cell before: its related location
    # ("在这里做了 softmax") is listed under it. Positions are the cell's own lines, in UTF-16 after the Chinese
    # text and the emoji (VS Code counts from 1), at the callee's name.
    problems = [row for row in result["problems"] if "TL301" in row]
    assert len(problems) == 2 and all("torchls" in row for row in problems), result["problems"]
    assert any("在这里做了 softmax" in row for row in result["problems"]), result["problems"]
    cell_lines = NOTEBOOK_CELLS[4][1].splitlines()
    places = sorted(
        (int(found.group(1)), int(found.group(2)))
        for row in problems
        if (found := re.search(r"\[Ln (\d+), Col (\d+)\]", row))
    )
    assert places == [
        (2, _utf16_column(cell_lines[1], "CrossEntropyLoss") + 1),
        (3, _utf16_column(cell_lines[2], "cross_entropy") + 1),
    ], problems
    assert "torch.nn.Linear" in result["hover"], result["hover"]
    # The quick fix from the light-bulb menu edited the cell, and the problem went away.
    assert any(FIX_TITLE in action for action in result["actions"]), result["actions"]
    assert "F.softmax" not in result["fixedLine"], result["fixedLine"]
    assert re.search(r"Errors?: 1\b", result["problemsAfterFix"]), result["problemsAfterFix"]
    for name in ("nb-1-problems", "nb-2-hover", "nb-3-quick-fix-menu", "nb-4-fixed"):
        assert sizes.get(name, 0) > 10_000, (name, sizes)
