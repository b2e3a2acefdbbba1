"""Neovim's built-in LSP client (headless) against the real torchls: attach, Chinese hover after Chinese text and
an emoji on the same line (the compact card), a diagnostic's code and column, a quick fix applied, an example run,
the full card from its code action in a buffer."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SAMPLE

SCRIPT = Path(__file__).with_name("nvim_session.lua")


def _byte_column(line: str, needle: str) -> int:
    return len(line[: line.index(needle)].encode("utf-8"))


def test_neovim_hover_diagnostic_quick_fix_and_example(tmp_path, artifacts):
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("Neovim 未安装（Debian：apt-get install neovim；.ci/run 会安装它）")
    sample = tmp_path / "训练.py"
    sample.write_text(SAMPLE, encoding="utf-8")
    result_file = tmp_path / "result.json"
    env = {
        "TORCHLS_PYTHON": sys.executable,
        "TORCHLS_NVIM_SAMPLE": str(sample),
        "TORCHLS_NVIM_RESULT": str(result_file),
        "HOME": str(tmp_path),  # no user config, shada or plugins
        "PATH": "/usr/bin:/bin",
        "TORCHLS_CACHE_DIR": str(tmp_path / "cache"),
    }
    completed = subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-c", f"luafile {SCRIPT}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,  # the script quits by itself; this only guards against a hang
    )
    (artifacts / "neovim-stderr.txt").write_text(completed.stdout + completed.stderr, encoding="utf-8")
    assert result_file.exists(), f"Neovim wrote no result: {completed.stderr[-2000:]}"
    shutil.copy(result_file, artifacts / "neovim-result.json")
    result = json.loads(result_file.read_text(encoding="utf-8"))
    assert result["ok"], result

    lines = SAMPLE.splitlines()
    hover_line = next(i for i, text in enumerate(lines) if "nn.CrossEntropyLoss" in text)
    # Neovim sent UTF-16: the emoji before the symbol counts as two units.
    before = lines[hover_line][: lines[hover_line].index("nn.CrossEntropyLoss") + len("nn.Cross")]
    assert result["hover_position"] == {"line": hover_line, "character": len(before.encode("utf-16-le")) // 2}
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
    assert result["run_title"].startswith("在 cpu 上运行示例：torch.nn.CrossEntropyLoss")
    assert result["run_stdout"].strip()

    # The full card: the code action ran torchls.showCard; Neovim 0.7 has no window/showDocument, so the card came
    # back as Markdown (also written to the cache folder) and went into a buffer.
    assert result["card_title"] == "查看完整卡片：torch.nn.CrossEntropyLoss"
    assert result["card_lines"][0] == "# torch.nn.CrossEntropyLoss"
    assert "**⚠️ 避坑**" in result["card_lines"] and "**参数**" in result["card_lines"]
    assert result["card_uri"].endswith("/cards/torch.nn.CrossEntropyLoss.md")
