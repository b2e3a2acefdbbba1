"""Session.index_for_line: typing on one line reuses the last index instead of parsing the whole file again."""

from __future__ import annotations

import pytest

from torchls.core.text import Position
from torchls.session import Session

TEXT = """\
import torch
说明 = "索引 🎉"
def forward(x):
    y = torch.randn(3)
    z = y.view(3)
    return z
"""
URI = "file:///tmp/torchls-test/模型.py"


@pytest.fixture
def session():
    session = Session()
    yield session
    session.close()


def _with_line(line: int, new: str) -> str:
    lines = TEXT.split("\n")
    lines[line] = new
    return "\n".join(lines)


def test_typing_on_one_line_reuses_the_index_with_the_new_lines(session):
    first = session.index(URI, TEXT, 1)
    typed = _with_line(4, "    z = y.")
    document = session.index_for_line(URI, typed, 2, 4)
    assert document.index is first.index, "no new parse for a change on the cursor's line"
    assert document.lines[4] == "    z = y."  # what completion reads on the line is the new text
    assert document.version == 2
    # It answers what a fresh index answers for that line: ``y`` is a tensor there.
    assert document.index.value_at("y", Position(4, 9)).qualname == "torch.Tensor"
    assert session.index(URI, TEXT, 1) is first, "the stored index is still the one of the text it was built from"


@pytest.mark.parametrize(
    ("changed", "why"),
    [
        ({3: "    y = [1, 2]"}, "a line before the cursor changed: its bindings may have"),
        ({4: "z = y."}, "the cursor's line moved to another block"),
        ({4: "    z = y.", 5: "    return z  # 改了"}, "two lines changed"),
    ],
)
def test_other_changes_build_a_new_index(session, changed, why):
    first = session.index(URI, TEXT, 1)
    lines = TEXT.split("\n")
    for line, new in changed.items():
        lines[line] = new
    document = session.index_for_line(URI, "\n".join(lines), 2, 4)
    assert document.index is not first.index, why


def test_an_added_line_builds_a_new_index(session):
    first = session.index(URI, TEXT, 1)
    document = session.index_for_line(URI, TEXT.replace("    z = y.view(3)\n", "    z = y.view(3)\n    \n"), 2, 5)
    assert document.index is not first.index


def test_a_documents_path_comes_from_its_file_uri_once_decoded():
    from torchls.uris import path_of

    assert path_of("file:///tmp/%E4%B8%AD%E6%96%87/100%25%20%F0%9F%8E%89.py") == "/tmp/中文/100% 🎉.py"
    assert path_of("untitled:Untitled-1") is None  # an unsaved buffer: no project to look into


def test_a_version_being_indexed_is_built_once_and_the_second_caller_waits_for_it(session, monkeypatch):
    import threading
    import time

    built = []
    real = session._build_index

    def slow_build(uri, text, version):
        built.append(version)
        time.sleep(0.2)  # the indexing thread's long build
        return real(uri, text, version)

    monkeypatch.setattr(session, "_build_index", slow_build)
    first = threading.Thread(target=session.index, args=(URI, TEXT, 3))
    first.start()
    time.sleep(0.05)
    assert session.indexed(URI, TEXT, 3) is None  # not built yet: a hover uses a partial index
    document = session.index(URI, TEXT, 3)  # the hover that needs the full index waits for it
    first.join()
    assert built == [3] and document is session.indexed(URI, TEXT, 3)
