"""`torchls check` as CI runs it: exit codes, formats, --fix, select/ignore, bad files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rules"

BUGGY = """\
import torch
import torch.nn.functional as F

logits = torch.randn(4, 3)
labels = torch.randint(0, 3, (4,))
说明 = "中文 🎯"; loss = F.cross_entropy(F.softmax(logits, dim=1), labels)
x = torch.randn(2, 3)
x.to("cpu")
"""


def torchls(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchls", *args], capture_output=True, text=True, encoding="utf-8", cwd=cwd, timeout=300
    )


def test_text_output_and_exit_one(tmp_path):
    (tmp_path / "train.py").write_text(BUGGY, encoding="utf-8")
    result = torchls("check", str(tmp_path))
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert f"{tmp_path / 'train.py'}:6:23: TL301 [*] " in lines[0]  # column counts code points after 中文 and 🎯
    assert any(":8:3: TL201 [*]" in line for line in lines)
    assert "发现 2 个问题" in result.stdout


def test_clean_code_exits_zero(tmp_path):
    (tmp_path / "ok.py").write_text("import torch\nx = torch.zeros(3)\ny = x.view(3, 1)\n", encoding="utf-8")
    assert torchls("check", str(tmp_path)).returncode == 0


def test_json_objects_have_the_documented_fields(tmp_path):
    (tmp_path / "train.py").write_text(BUGGY, encoding="utf-8")
    result = torchls("check", str(tmp_path), "--format", "json")
    findings = json.loads(result.stdout)
    assert isinstance(findings, list) and len(findings) == 2
    first = findings[0]
    for key in ("path", "line", "column", "end_line", "end_column", "code", "message", "severity"):
        assert key in first
    assert (first["line"], first["column"], first["code"], first["severity"]) == (6, 23, "TL301", "error")
    assert first["end_column"] - first["column"] == len("cross_entropy")
    assert first["fix"]["edits"][0]["new_text"] == "logits"


def test_sarif_is_2_1_0_with_rules_and_code_point_columns(tmp_path):
    (tmp_path / "train.py").write_text(BUGGY, encoding="utf-8")
    result = torchls("check", "train.py", "--format", "sarif", cwd=tmp_path)
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    rule_ids = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    assert {"TL201", "TL301"} <= rule_ids
    result_301 = next(r for r in run["results"] if r["ruleId"] == "TL301")
    region = result_301["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (6, 23)
    assert result_301["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.py"
    assert result_301["relatedLocations"][0]["message"]["text"]


def test_select_and_ignore(tmp_path):
    (tmp_path / "train.py").write_text(BUGGY, encoding="utf-8")
    only_device = json.loads(torchls("check", str(tmp_path), "--format", "json", "--select", "TL2").stdout)
    assert {f["code"] for f in only_device} == {"TL201"}
    no_loss = json.loads(torchls("check", str(tmp_path), "--format", "json", "--ignore", "TL301").stdout)
    assert {f["code"] for f in no_loss} == {"TL201"}
    assert torchls("check", str(tmp_path), "--select", "TL999").returncode == 2


def test_noqa_suppresses(tmp_path):
    text = BUGGY.replace('x.to("cpu")', 'x.to("cpu")  # noqa: TL201').replace("labels)\n", "labels)  # noqa\n")
    (tmp_path / "train.py").write_text(text, encoding="utf-8")
    assert torchls("check", str(tmp_path)).returncode == 0


def test_fix_writes_the_fixed_fixtures(tmp_path):
    for fixed in sorted(FIXTURES.glob("*.fixed.py")):
        source = fixed.with_name(fixed.name.replace(".fixed", ""))
        shutil.copy(source, tmp_path / source.name)
    result = torchls("check", str(tmp_path), "--fix")
    assert result.returncode in (0, 1), result.stderr
    for fixed in sorted(FIXTURES.glob("*.fixed.py")):
        written = (tmp_path / fixed.name.replace(".fixed", "")).read_text(encoding="utf-8")
        assert written == fixed.read_text(encoding="utf-8"), f"--fix on {fixed.name} differs"


def test_bad_files_are_reported_and_skipped(tmp_path):
    (tmp_path / "latin1.py").write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    (tmp_path / "broken.py").write_text(BUGGY + "def half(:\n", encoding="utf-8")
    result = torchls("check", str(tmp_path), str(tmp_path / "missing.py"))
    assert result.returncode == 2
    assert "latin1.py: 不是 UTF-8 编码" in result.stderr
    assert "找不到" in result.stderr and "missing.py" in result.stderr
    assert "broken.py:9: 语法错误" in result.stderr
    assert "broken.py:6:23: TL301" in result.stdout  # the lines that parse are still checked


def test_parallel_and_serial_runs_agree(tmp_path):
    for fixture in sorted(FIXTURES.glob("TL*.py")):
        shutil.copy(fixture, tmp_path / fixture.name)
    serial = torchls("check", str(tmp_path), "--format", "json", "--jobs", "1")
    parallel = torchls("check", str(tmp_path), "--format", "json", "--jobs", "2")
    assert json.loads(serial.stdout) == json.loads(parallel.stdout)
    assert serial.returncode == parallel.returncode == 1


def test_rules_lists_every_rule_and_shows_one():
    listing = torchls("rules", "--format", "json")
    rows = json.loads(listing.stdout)
    assert {"code", "name", "severity", "fixable", "summary"} <= set(rows[0])
    page = torchls("rules", "tl301")
    assert page.returncode == 0 and page.stdout.startswith("# TL301 softmax-before-cross-entropy")
    assert torchls("rules", "TL999").returncode == 2


def test_a_file_too_deep_for_python_is_reported_not_a_traceback(tmp_path):
    """A 100k-term sum or an attribute chain thousands deep makes ast.parse raise RecursionError: the file is
    reported like a syntax error, and the other files are still checked."""
    (tmp_path / "deep.py").write_text("import torch\nx = a" + ".b" * 3000 + "\n", encoding="utf-8")
    (tmp_path / "sum.py").write_text("import torch\nx = " + "+".join(["1"] * 100_000) + "\n", encoding="utf-8")
    (tmp_path / "no_torch.py").write_text("line = " + "1 + " * 5000 + "1\n", encoding="utf-8")  # another path
    (tmp_path / "train.py").write_text(BUGGY, encoding="utf-8")
    result = torchls("check", str(tmp_path))
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    assert result.stderr.count("表达式嵌套太深或太长") == 3
    assert "TL301" in result.stdout  # the other file still checked


def test_an_internal_error_on_one_file_is_exit_two_with_one_line_and_the_rest_is_checked(tmp_path):
    from torchls.batch import check_file
    from torchls.core.checker import Checker

    class Failing(Checker):
        def check(self, text):
            raise RuntimeError("boom")

    path = tmp_path / "model.py"
    path.write_text("import torch\n", encoding="utf-8")
    report = check_file(path, Failing(), fix=False)
    assert report.read_error is not None and "内部出错" in report.read_error and "boom" in report.read_error
    assert report.findings == []
