"""`torchls kb coverage`: which torch APIs a project calls lack entries, and the shipped knowledge base's
coverage of the usage table the handbook is planned from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from torchls.kb.base import KnowledgeBase, shipped_folder
from torchls.kb.coverage import count_file_uses, project_coverage, usage_table_coverage

# A copy of the workplace's usage table (see its README next to it), so the figure is checked in every clone.
USAGE_TABLE = Path(__file__).resolve().parents[1] / "fixtures" / "usage" / "torch_api_usage.csv"
KB = KnowledgeBase.from_folders([shipped_folder()], use_cache=False)
KB.read_identity()  # as `torchls kb coverage` does: folding onto public names needs the same object

PROJECT_FILE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules.linear import Linear

说明 = "中文 🎲"; x = torch.randn(2, 3)
y = F.relu(x).view(-1)
z = torch.nn.functional.relu(x)


class 模型(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = Linear(3, 4)

    def forward(self, x):
        return self.fc(x)


def 用户函数(relu):
    return relu.view(3)  # not a known tensor: not counted
"""


def test_a_file_counts_each_use_once_through_aliases():
    counts = count_file_uses(PROJECT_FILE)
    assert counts["torch.nn.functional.relu"] == 2
    assert counts["torch.randn"] == 1
    assert counts["torch.Tensor.view"] == 1
    assert counts["torch.nn.Module"] == 1
    assert "torch.nn" not in counts and "torch.nn.functional" not in counts  # parts of a chain are not uses
    assert sum(counts.values()) == 6


def test_project_coverage_lists_missing_apis_by_count(tmp_path):
    (tmp_path / "train.py").write_text(PROJECT_FILE, encoding="utf-8")
    (tmp_path / "extra.py").write_text("import torch\ntorch.special.erfcx(torch.ones(1))\n", encoding="utf-8")
    (tmp_path / "broken.py").write_bytes(b"\xff\xfe not utf-8")
    result = project_coverage(sorted(tmp_path.glob("*.py")), KB)
    assert result.unreadable == (str(tmp_path / "broken.py"),)
    assert ("torch.special.erfcx", 1) in result.missing()
    assert "torch.nn.Linear" in result.counts  # the implementation module's name folded onto the public one
    assert "torch.randn" in result.covered
    assert 0 < result.share < 1


def test_usage_table_with_wrong_columns_is_a_clear_error(tmp_path):
    table = tmp_path / "usage.csv"
    table.write_text("name,uses\ntorch.cat,3\n", encoding="utf-8")
    with pytest.raises(ValueError, match="api 和 count"):
        usage_table_coverage(table, KB)
    table.write_text("api,count\ntorch.cat,很多\n", encoding="utf-8")
    with pytest.raises(ValueError, match="第 2 行"):
        usage_table_coverage(table, KB)


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchls", "kb", "coverage", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_cli_lists_missing_apis_and_fails_under_a_threshold(tmp_path):
    (tmp_path / "train.py").write_text(PROJECT_FILE, encoding="utf-8")
    (tmp_path / "extra.py").write_text("import torch\ntorch.special.erfcx(torch.ones(1))\n", encoding="utf-8")
    result = _cli(str(tmp_path), "--top", "0")
    assert result.returncode == 0, result.stderr
    assert "torch.special.erfcx" in result.stdout and "覆盖率" in result.stdout
    assert _cli(str(tmp_path), "--fail-under", "100").returncode == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "二者选一"),
        (("a.py", "--usage", "u.csv"), "二者选一"),
        (("missing_dir",), "找不到"),
        (("--usage", "nope.csv"), "无法读取用量表"),
    ],
)
def test_cli_bad_arguments_exit_2_with_a_message(tmp_path, args, message):
    result = _cli(*args, cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr
    assert not result.stdout


def test_shipped_entries_cover_99_percent_of_real_usage():
    result = usage_table_coverage(USAGE_TABLE, KB)
    print(f"coverage {result.share:.2%} of {result.total} uses; {len(KB)} entries")
    assert len(KB) >= 750
    assert result.share >= 0.99, result.missing()[:20]
