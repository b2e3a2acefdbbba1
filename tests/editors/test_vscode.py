"""VS Code itself (code-server 4.100.3 = VS Code 1.100.3, in headless Chromium driven by Playwright) with the packaged
torchls .vsix installed in a fresh profile: the Chinese hover card after Chinese text and an emoji on the same line
(the compact card, whose link opens the full card as a Markdown document), TL301 in the Problems panel at the right
line and column, its quick fix applied from the light-bulb menu, and the "torchls: 运行光标处 API 的示例" command
writing the example's output to the "torchls 示例" output channel; and a new user's first run with an interpreter
that has no torchls: one error notification saying what to install, no restarts.

Each step leaves a screenshot (``vscode-*.png``), and the run its result and logs, next to the other editors'
artifacts. Needs code-server, Chromium and fonts: ``bash tests/editors/install.sh`` installs them."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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
MISSING = "没有安装 torchls"  # in the first-run message when the interpreter cannot import torchls
SHOW_OUTPUT_COMMAND = "torchls: 显示输出"  # category: title of torchls.showOutput
TYPED = "# 装好 torchls 之前也能照常编辑"


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


def _package_extension(folder: Path) -> Path:
    """The .vsix built from the extension's current source, in a copy (the clone's build outputs stay untouched)."""
    if not (CLIENT / "node_modules").is_dir():
        _run(["npm", "ci", "--no-audit", "--no-fund"], CLIENT, "npm ci in vscode-client", 600)
    copy = folder / "vscode-client"
    shutil.copytree(CLIENT, copy, ignore=shutil.ignore_patterns("node_modules", "dist", "*.vsix"))
    (copy / "node_modules").symlink_to(CLIENT / "node_modules", target_is_directory=True)
    _run(["npm", "run", "package"], copy, "npm run package", 300)
    return copy / "torchls.vsix"


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
    (data / "User").mkdir(parents=True)
    (data / "User" / "settings.json").write_text(json.dumps(user_settings), encoding="utf-8")
    return workspace


def _venv_without_torchls(root: Path) -> str:
    """A new virtual environment with nothing installed: a new user's interpreter. Its python."""
    venv = root / "venv-without-torchls"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root, "python -m venv", 120)
    python = venv / "bin" / "python"
    check = subprocess.run([str(python), "-c", "import torchls"], cwd=root, capture_output=True, text=True, timeout=60)
    assert check.returncode != 0 and "torchls" in check.stderr, check  # the scenario needs it missing
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
    return next(iter(sorted((data / "logs").rglob(name))), None)


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
    interpreter: Callable[[Path], str],
    config: dict,
    logs: dict[str, str],
) -> tuple[dict, dict[str, str], dict[str, int]]:
    """One run of VS Code as a new user has it: the .vsix packaged from the current source and installed in a fresh
    profile, code-server started on the sample's folder with ``torchls.interpreter`` set to ``interpreter(root)``,
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
    shots.mkdir()
    server = None
    try:
        vsix = _package_extension(root)
        workspace = _workspace(root, data, interpreter(root))
        env = {key: value for key, value in os.environ.items() if not key.startswith("VSCODE_")}  # no outer VS Code
        env.update(
            HOME=str(root / "home"),
            XDG_CONFIG_HOME=str(root / "home" / ".config"),
            XDG_DATA_HOME=str(root / "home" / ".local" / "share"),
            XDG_CACHE_HOME=str(root / "home" / ".cache"),
            TORCHLS_CACHE_DIR=str(root / "torchls-cache"),
        )
        profile = ["--user-data-dir", str(data), "--extensions-dir", str(extensions)]
        installed = _run(
            [str(code_server), *profile, "--install-extension", str(vsix)], root, "installing the .vsix", 120, env
        )
        assert "successfully installed" in installed, installed

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


def test_vscode_hover_problems_quick_fix_and_example(artifacts):
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
        interpreter=lambda root: sys.executable,
        config=config,
        logs={"torchls 示例.log": "True torch.Size"},
    )
    channel_log = logs["torchls 示例.log"]

    assert result["ok"], {key: result.get(key) for key in ("error", "steps", "console")}

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

    for name in ("1-hover", "1b-full-card", "2-problems", "3-quick-fix-menu", "4-fixed", "5-run-example"):
        assert sizes.get(name, 0) > 10_000, (name, sizes)  # a picture of the workbench, not an empty page


def test_vscode_says_what_to_install_when_torchls_is_missing(artifacts):
    """A new user's first run, on a machine where the interpreter has no torchls (``torchls.interpreter`` points
    to a new virtual environment): an error notification says which interpreter lacks torchls and the command
    that installs it, the "torchls" output channel says the same once (no server restarting in a loop), and the
    workbench stays usable (the command palette, the output panel, typing in the editor, the notification's
    buttons). Screenshot: ``vscode-first-run.png``."""
    made: dict[str, str] = {}

    def interpreter(root: Path) -> str:
        made["python"] = _venv_without_torchls(root)
        return made["python"]

    config = {
        "scenario": "missing-torchls",
        "fileNeedle": "criterion(",
        "fileLastLine": SAMPLE.splitlines()[-1],
        "notification": {"needle": MISSING},
        "showOutputCommand": SHOW_OUTPUT_COMMAND,
        "channel": "torchls",
        "typed": TYPED,
        "settleMs": 5000,
        "shot": "first-run",
        "copyButton": "复制安装命令",
        "copiedNeedle": "已复制",
    }
    result, logs, sizes = _drive_vscode(
        artifacts,
        "vscode-first-run",
        interpreter=interpreter,
        config=config,
        logs={"torchls.log": MISSING},
    )
    assert result["ok"], {key: result.get(key) for key in ("error", "steps", "console")}
    python = made["python"]
    install = f"{python} -m pip install ."

    # 1. The error notification names the interpreter, says torchls is not installed in it and how to install it,
    # and offers its three buttons.
    message = result["notification"]["message"]
    assert python in message and MISSING in message and install in message, message
    assert result["notification"]["buttons"] == ["复制安装命令", "打开设置", "显示输出"], result["notification"]

    # 2. Once: one error notification, one message in the "torchls" output channel (shown from the command palette)
    # and in its log, one start; no restarts, no "server crashed" from the language client.
    assert result["errorToasts"] == 1, result["toasts"]
    assert not any("crash" in toast.lower() for toast in result["toasts"]), result["toasts"]
    assert result["channel"] == "torchls", result["channel"]
    assert result["outputJoined"].count(MISSING) == 1, result["output"]
    assert python in result["outputJoined"], result["output"]
    server_log = logs["torchls.log"]
    assert server_log.count(MISSING) == 1, server_log
    assert install in server_log, server_log
    assert server_log.count("正在启动 torchls") == 1, server_log
    assert "启动失败" not in server_log and "crash" not in server_log.lower(), server_log

    # 3. The workbench is usable: the editor took the typed line, and the notification's button copied the command.
    assert TYPED in result["typedLine"], result["typedLine"]
    assert install in result["copied"], result["copied"]
    assert result["clipboard"] == install, result["clipboard"]

    assert sizes.get("first-run", 0) > 10_000, sizes


def test_vscode_notebook_cells_are_one_program(artifacts):
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
        artifacts, "vscode-notebook", interpreter=lambda root: sys.executable, config=config, logs={}
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
