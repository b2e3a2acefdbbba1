"""The wheel is the product: built from the sdist, installed into a fresh environment, it works on its own.

``python -m build`` makes the sdist from this checkout and then the wheel from the unpacked sdist, so a file the
sdist forgets breaks the wheel here. The wheel goes into a new virtual environment (its dependencies from the
index, nothing from this checkout), and every command runs outside the checkout, without ``PYTHONPATH``: the
console script, ``explain``, ``check`` and an LSP hover must all find the knowledge base inside the package.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from lsprotocol import types

from torchls import __version__
from torchls.kb.base import KnowledgeBase

from .lsp.helpers import hover, open_document, start_server, utf16_position, vscode_initialize, wait_until_warm

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _summary() -> str:
    """The checkout's one-line summary of the card the installed commands must show."""
    return KnowledgeBase.load(use_cache=False).get("torch.nn.CrossEntropyLoss").summary


BUGGY = """\
import torch
import torch.nn as nn

logits = torch.randn(4, 3)
labels = torch.randint(0, 3, (4,))
说明 = "中文 🎯"; loss = nn.CrossEntropyLoss()(torch.softmax(logits, dim=1), labels)
"""

SOURCE = """\
import torch.nn as nn
说明 = "损失 🎯"; criterion = nn.CrossEntropyLoss()
说明 = "没有条目 🕳️"; shuffle = nn.ChannelShuffle(2)
"""


# What pip says when no index can be reached: the only failure of the install that is not the wheel's fault.
_OFFLINE = (
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Failed to establish a new connection",
    "dns error",  # uv's words for the same
)


@dataclass(frozen=True)
class Installed:
    venv: Path
    work: Path  # a folder outside the checkout, the cwd of every command
    env: dict[str, str]

    @property
    def torchls(self) -> str:
        return str(self.venv / "bin" / "torchls")

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            args, capture_output=True, text=True, encoding="utf-8", cwd=self.work, env=self.env, timeout=timeout
        )


def _clean_env(cache: Path) -> dict[str, str]:
    """This process's environment without anything that could lead Python or torchls back to the checkout."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "TORCHLS_")) and key not in ("VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")
    }
    env["TORCHLS_CACHE_DIR"] = str(cache)  # the knowledge cache, away from the user's
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    if importlib.util.find_spec("build") is None:
        pytest.fail("this environment lacks `build` (a dev extra): run `.venv/bin/pip install -e '.[dev]'` again")
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: hatchling comes from the dev extras, so building needs no index.
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory) -> Installed:
    (wheel,) = dist.glob("torchls-*.whl")
    home = tmp_path_factory.mktemp("wheel-home")
    work = home / "work"
    work.mkdir()
    env = _clean_env(home / "cache")
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env, timeout=180)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=600,
    )
    if pip.returncode != 0 and any(sign in pip.stderr for sign in _OFFLINE):
        pytest.skip(f"the wheel's dependencies cannot be fetched (no package index reachable): {pip.stderr[-300:]}")
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return Installed(venv, work, env)


def test_sdist_has_what_the_wheel_is_built_from(dist: Path):
    (sdist,) = dist.glob("torchls-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "server/torchls/__init__.py"} <= names
    assert "knowledge/torch/nn/CrossEntropyLoss.yaml" in names
    assert "knowledge/_versions.json" in names  # the version table (torchls.kb.versions)
    assert not [name for name in names if name.startswith("vscode-client/")]  # the extension ships as a .vsix


def test_wheel_carries_the_whole_knowledge_base(dist: Path):
    (wheel,) = dist.glob("torchls-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        packaged = {name.removeprefix("torchls/_knowledge/") for name in archive.namelist() if "/_knowledge/" in name}
        entry_points = archive.read(f"torchls-{__version__}.dist-info/entry_points.txt").decode()
    shipped = {path.relative_to(ROOT / "knowledge").as_posix() for path in (ROOT / "knowledge").rglob("*.yaml")}
    assert shipped and shipped <= packaged
    assert "_versions.json" in packaged  # the version table the cards read (torchls.kb.versions)
    assert "torchls = torchls.cli:main" in entry_points


def test_the_package_and_its_knowledge_come_from_the_environment(installed: Installed):
    python = str(installed.venv / "bin" / "python")
    probe = "import importlib.util, torchls; from torchls.kb.base import shipped_folder; "
    probe += "print(torchls.__file__); print(shipped_folder()); print(importlib.util.find_spec('torch'))"
    result = installed.run(python, "-c", probe)
    assert result.returncode == 0, result.stderr
    package, knowledge, torch = result.stdout.splitlines()
    venv = installed.venv.resolve()
    assert Path(package).resolve().is_relative_to(venv), package
    assert Path(knowledge).resolve().is_relative_to(venv) and Path(knowledge).name == "_knowledge", knowledge
    assert torch == "None"  # the environment is fresh: torch is only read through the configured interpreter


@pytest.mark.parametrize("launcher", ["torchls", "python -m torchls"])
def test_version(installed: Installed, launcher: str):
    """Both ways editors start the server: the console script, and the module (the VS Code extension's way)."""
    command = [str(installed.venv / "bin" / launcher.split()[0]), *launcher.split()[1:]]
    result = installed.run(*command, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"torchls {__version__}"


def test_explain_prints_the_chinese_card(installed: Installed):
    result = installed.run(installed.torchls, "explain", "nn.CrossEntropyLoss")
    assert result.returncode == 0, result.stderr
    assert _summary() in result.stdout and "避坑" in result.stdout


def test_check_finds_softmax_fed_to_cross_entropy(installed: Installed):
    (installed.work / "train.py").write_text(BUGGY, encoding="utf-8")
    result = installed.run(installed.torchls, "check", "train.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "train.py:6:" in result.stdout and " TL301 " in result.stdout


def test_demo_hovers_its_packaged_sample(installed: Installed):
    """The README's first command, from the wheel: the sample file ships in the package, every hover answers."""
    result = installed.run(installed.torchls, "demo", "--lines", "3", timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "site-packages/torchls/samples/quickstart.py" in result.stdout


def test_kb_new_does_not_write_into_the_installed_package(installed: Installed):
    result = installed.run(installed.torchls, "kb", "new", "torch.nn.ChannelShuffle")
    assert result.returncode == 2 and "--folder" in result.stderr, result.stderr
    assert not list(installed.venv.rglob("_knowledge/torch/nn/ChannelShuffle.yaml"))


async def test_hover_over_stdio_shows_the_chinese_card(installed: Installed):
    """An editor's session with the installed server; jedi reads torch from this (dev) environment's Python."""
    client = await start_server([installed.torchls], installed.env, cwd=installed.work)
    try:
        await asyncio.wait_for(
            client.initialize_session(vscode_initialize(installed.work, {"interpreter": sys.executable})), 60
        )
        await wait_until_warm(client, timeout=120)
        uri = (installed.work / "model.py").as_uri()
        await open_document(client, uri, SOURCE)
        card = await asyncio.wait_for(hover(client, uri, utf16_position(SOURCE, "nn.CrossEntropyLoss", "Cross")), 60)
        assert card is not None and _summary() in card.contents.value
        # No entry for ChannelShuffle: its English docstring can only come from the configured interpreter's torch.
        english = await asyncio.wait_for(hover(client, uri, utf16_position(SOURCE, "nn.ChannelShuffle", "Channel")), 60)
        assert english is not None and "channel" in english.contents.value.lower()
        assert not [m.message for m in client.messages if m.type == types.MessageType.Error]
    finally:
        await asyncio.wait_for(client.shutdown_session(), 30)


def _readme_install_block() -> list[str]:
    """The README's wheel install commands (the ```bash block headed ``# torchls：构建 wheel``), as written."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```bash\n(# torchls：构建 wheel.*?)^```$", readme, flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, "the README has no (or more than one) wheel install block"
    return [line for line in blocks[0].splitlines() if line.strip() and not line.startswith("#")]


def test_readme_install_block_works_as_written(tmp_path: Path):
    """Pasted in a copy of the repository with a fresh home: builds the wheel, installs it, prints the card."""
    source = tmp_path / "torchls"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout.split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    env = _clean_env(tmp_path / "cache") | {"HOME": str(tmp_path / "home")}
    output = ""
    for command in _readme_install_block():
        step = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command],
            cwd=source,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=600,
        )
        if step.returncode != 0 and any(sign in step.stderr for sign in _OFFLINE):
            pytest.skip(f"no package index reachable for `{command}`: {step.stderr[-300:]}")
        assert step.returncode == 0, f"{command}\n{step.stdout}\n{step.stderr}"
        output = step.stdout
    assert _summary() in output and "避坑" in output


# How each tool installs a wheel as a command of its own, its folders kept under ``home``.
_TOOL_INSTALLS = {
    "pipx": (["install"], lambda home: {"PIPX_HOME": str(home / "pipx"), "PIPX_BIN_DIR": str(home / "bin")}),
    "uv": (
        ["tool", "install"],
        lambda home: {
            "UV_TOOL_DIR": str(home / "tools"),
            "UV_TOOL_BIN_DIR": str(home / "bin"),
            "UV_CACHE_DIR": str(home / "uv-cache"),
        },
    ),
}


@pytest.mark.parametrize("tool", sorted(_TOOL_INSTALLS))
def test_tool_install_of_the_wheel_gives_a_working_command(tool: str, dist: Path, tmp_path: Path):
    """``pipx install`` / ``uv tool install`` of the same wheel: a `torchls` command that finds its knowledge."""
    (wheel,) = dist.glob("torchls-*.whl")
    executable = Path(sys.executable).with_name(tool)
    if not executable.is_file():
        pytest.fail(f"this environment lacks {tool} (a dev extra): run `.venv/bin/pip install -e '.[dev]'` again")
    arguments, folders = _TOOL_INSTALLS[tool]
    env = _clean_env(tmp_path / "cache") | {"HOME": str(tmp_path)} | folders(tmp_path)
    install = subprocess.run(
        [str(executable), *arguments, str(wheel)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    if install.returncode != 0 and any(sign in install.stderr for sign in _OFFLINE):
        pytest.skip(f"{tool} cannot fetch the wheel's dependencies (no package index reachable)")
    assert install.returncode == 0, install.stdout + install.stderr
    explain = subprocess.run(
        [str(tmp_path / "bin" / "torchls"), "explain", "nn.CrossEntropyLoss"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert explain.returncode == 0, explain.stderr
    assert _summary() in explain.stdout
