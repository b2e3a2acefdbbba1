"""Loading knowledge folders: errors as file:line, nothing else lost, team folders override, the cache."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchls.kb import cache, loader
from torchls.kb.base import KnowledgeBase
from torchls.kb.loader import load_folder

VALID = """\
name: {name}
kind: function
summary: {summary}
signature: "{name}(input)"
returns: 一个张量。
examples:
  - title: 示例
    code: |
      print(1)
pitfalls:
  - 一条避坑说明。
see_also: [torch.cat]
"""


def write(root: Path, name: str, text: str) -> Path:
    path = root.joinpath(*name.split(".")).with_suffix(".yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_valid_entry_loads(tmp_path):
    write(tmp_path, "torch.stack", VALID.format(name="torch.stack", summary="堆叠。"))
    entries, errors = load_folder(tmp_path)
    assert errors == []
    assert entries["torch.stack"].pitfalls[0].text == "一条避坑说明。"


def test_broken_yaml_is_reported_with_line_and_others_still_load(tmp_path):
    write(tmp_path, "torch.stack", VALID.format(name="torch.stack", summary="堆叠。"))
    bad = write(tmp_path, "torch.cat", "name: torch.cat\nkind: function\nsummary: [未闭合\nexamples: 1\n")
    entries, errors = load_folder(tmp_path)
    assert "torch.stack" in entries and "torch.cat" not in entries
    assert len(errors) == 1
    assert errors[0].path == str(bad)
    assert errors[0].line in (3, 4)
    assert str(errors[0]).startswith(f"{bad}:{errors[0].line}: YAML 语法错误")


@pytest.mark.parametrize(
    ("change", "line", "message"),
    [
        (("kind: function", "kind: functon"), 2, "`kind` 应为"),
        (("summary: 堆叠。", "summary: 堆叠。\nsummery: 多余"), 4, "未知字段 `summery`"),
        (("see_also: [torch.cat]", "see_also: [torch.cat, 'not a name!']"), 12, "see_also"),
        (("name: torch.stack", "name: torch.vstack"), 1, "文件路径对应 torch.stack"),
        (("      print(1)", "      print(1"), 9, "语法错误"),
        (("pitfalls:\n  - 一条避坑说明。\n", ""), 1, "缺少必填字段 `pitfalls`"),
    ],
)
def test_schema_errors_name_the_field_and_line(tmp_path, change, line, message):
    text = VALID.format(name="torch.stack", summary="堆叠。").replace(*change)
    path = write(tmp_path, "torch.stack", text)
    entries, errors = load_folder(tmp_path)
    assert entries == {}
    assert any(message in e.message for e in errors), errors
    assert any(e.line == line for e in errors if message in e.message), errors
    assert all(e.path == str(path) for e in errors)


def test_later_folder_overrides_earlier(tmp_path):
    shipped, team = tmp_path / "shipped", tmp_path / "team"
    write(shipped, "torch.stack", VALID.format(name="torch.stack", summary="内置说明。"))
    write(shipped, "torch.cat", VALID.format(name="torch.cat", summary="拼接。"))
    write(team, "torch.stack", VALID.format(name="torch.stack", summary="团队说明。"))
    kb = KnowledgeBase.from_folders([shipped, team], use_cache=False)
    assert kb.get("torch.stack").summary == "团队说明。"
    assert kb.get("torch.cat").summary == "拼接。"


def test_missing_folder_is_an_error_not_a_crash(tmp_path):
    kb = KnowledgeBase.from_folders([tmp_path / "nope"], use_cache=False)
    assert len(kb) == 0
    assert "不存在" in kb.errors[0].message


def test_cache_is_used_and_invalidated_by_edits(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHLS_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "kb"
    path = write(root, "torch.stack", VALID.format(name="torch.stack", summary="第一版。"))
    assert cache.load_folder_cached(root)[0]["torch.stack"].summary == "第一版。"
    assert list((tmp_path / "cache").glob("kb-*.pickle"))

    calls = []
    monkeypatch.setattr(loader, "load_folder", lambda r: calls.append(r) or ({}, []))
    assert cache.load_folder_cached(root)[0]["torch.stack"].summary == "第一版。"
    assert calls == [], "an unchanged folder must come from the cache"

    monkeypatch.undo()
    monkeypatch.setenv("TORCHLS_CACHE_DIR", str(tmp_path / "cache"))
    path.write_text(VALID.format(name="torch.stack", summary="第二版，改得更长。"), encoding="utf-8")
    assert cache.load_folder_cached(root)[0]["torch.stack"].summary == "第二版，改得更长。"


def test_corrupt_cache_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHLS_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "kb"
    write(root, "torch.stack", VALID.format(name="torch.stack", summary="堆叠。"))
    cache.load_folder_cached(root)
    for file in (tmp_path / "cache").glob("kb-*.pickle"):
        file.write_bytes(b"not a pickle")
    assert "torch.stack" in cache.load_folder_cached(root)[0]


def test_aliases_outside_torch_are_refused():
    from torchls.kb.schema import validate_entry

    data = {
        "name": "torch.pi",
        "kind": "attribute",
        "summary": "圆周率。",
        "examples": [{"title": "示例", "code": "print(1)"}],
        "pitfalls": ["无"],
        "see_also": ["torch.e"],
        "aliases": ["math.pi"],
    }
    entry, errors = validate_entry(data, "pi.yaml", "torch.pi")
    assert entry is None and "只能是 torch 里的名字" in errors[0].message
