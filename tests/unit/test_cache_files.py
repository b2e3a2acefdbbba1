"""Cache files are written whole or not at all, and a failed write leaves nothing behind."""

from __future__ import annotations

from torchls.cache_files import write_atomically


def test_a_written_cache_file_holds_the_data(tmp_path):
    target = tmp_path / "deeper" / "members.json"
    assert write_atomically(target, "成员 🧩".encode(), "completion cache")
    assert target.read_text(encoding="utf-8") == "成员 🧩"
    assert [path.name for path in target.parent.iterdir()] == ["members.json"]


def test_a_failed_write_returns_false_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "members.json"
    target.mkdir()  # a folder where the file should go: the final rename fails
    assert not write_atomically(target, b"{}", "completion cache")
    assert [path.name for path in tmp_path.iterdir()] == ["members.json"]


def test_a_folder_that_cannot_be_made_is_reported_not_raised(tmp_path):
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("", encoding="utf-8")
    assert not write_atomically(not_a_folder / "kb.pickle", b"x", "knowledge cache")
