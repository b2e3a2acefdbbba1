"""The generated version table (knowledge/_versions.json) against the entries: no network, no wheels.

The table comes from the real releases (``python -m torchls.kb.version_table``, see its docstring); an entry's own
``since`` (on the API or a parameter) must agree with it where both say something. An entry may leave ``since`` out:
cards then take the version from the table (torchls.kb.versions).
"""

from __future__ import annotations

import json
import re

import pytest

from torchls.kb.base import shipped_folder
from torchls.kb.render import version_tuple
from torchls.kb.version_table import documented_params, history, minor
from torchls.kb.versions import TABLE_NAME
from torchls.kb.wheel_reader import ABSENT, UNKNOWN, Api

FOLDER = shipped_folder()
TABLE = json.loads((FOLDER / TABLE_NAME).read_text(encoding="utf-8"))
APIS = TABLE["apis"]
FIRST = TABLE["releases"][0]
REGENERATE = "regenerate it: python -m torchls.kb.version_table (README: 版本表)"


def _entries():
    from torchls.kb.loader import load_folder

    entries, errors = load_folder(FOLDER)
    assert not errors
    return entries


ALL = _entries()


def _agrees(written: str, table: str | None) -> bool:
    """An entry's version against the table's: same minor release, or both at or before the first release."""
    if table is None:  # the table cannot tell: nothing to check against
        return True
    if table.startswith("≤"):
        return version_tuple(written)[:2] <= version_tuple(FIRST)  # type: ignore[index, operator]
    return minor(written) == table


def test_the_table_covers_every_entry_and_its_parameters():
    missing = sorted(set(ALL) - set(APIS))
    assert not missing, f"entries missing from {TABLE_NAME}, {REGENERATE}: {missing[:10]}"
    for name, entry in ALL.items():
        extra = set(APIS[name].get("params", {})) - set(documented_params(entry))
        assert not extra, f"{name}: the table names parameters the entry does not document ({extra}); {REGENERATE}"


def test_the_table_lists_its_releases_oldest_first():
    releases = [version_tuple(r) for r in TABLE["releases"]]
    assert releases == sorted(releases) and TABLE["releases"][0] == "1.13"
    known = {*TABLE["releases"], f"≤{FIRST}", None}
    for name, row in APIS.items():
        assert row["since"] in known, name
        assert set(row.get("params", {}).values()) <= known, name
        for key in ("deprecated", "removed"):
            assert row.get(key, FIRST) in TABLE["releases"], name


def test_entries_since_agrees_with_the_table():
    wrong = []
    for name, entry in ALL.items():
        if entry.since and not _agrees(entry.since, APIS[name]["since"]):
            wrong.append(f"{name}: entry says {entry.since}, table {APIS[name]['since']}")
    assert not wrong, "\n".join(wrong)


def test_parameters_since_agrees_with_the_table():
    wrong = []
    for name, entry in ALL.items():
        row = APIS[name]
        for param in entry.params:
            if not param.since:
                continue
            table = row.get("params", {}).get(param.name.lstrip("*"), row["since"])
            if not _agrees(param.since, table):
                wrong.append(f"{name}({param.name}): entry says {param.since}, table {table}")
    assert not wrong, "\n".join(wrong)


_ADDED = re.compile(r"新增[^`]*`([A-Za-z_][A-Za-z0-9_]*)`")


def test_version_notes_about_new_parameters_agree_with_the_table():
    """``versions: [{version: "2.1", note: 新增 `scale` 参数}]`` names the release the table found."""
    wrong = []
    for name, entry in ALL.items():
        params = APIS[name].get("params", {})
        for note in entry.versions:
            for added in _ADDED.findall(note.note):
                table = params.get(added) if added in params else None
                if table is not None and not _agrees(note.version, table):
                    wrong.append(f"{name}: note {note.version} adds `{added}`, table {table}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    ("states", "params", "expected"),
    [
        ([Api(frozenset({"x"})), Api(frozenset({"x", "y"}))], ["x", "y"], {"since": "≤1.13", "params": {"y": "2.0"}}),
        ([ABSENT, Api(frozenset({"x"}))], ["x"], {"since": "2.0"}),
        ([UNKNOWN, Api(frozenset({"x"}))], ["x"], {"since": None, "unknown": ["1.13"]}),
        # **kwargs in 1.13 might have taken x: when it came cannot be told
        ([Api(frozenset(), open=True), Api(frozenset({"x"}))], ["x"], {"since": "≤1.13", "params": {"x": None}}),
        (
            [Api(frozenset({"x"})), Api(frozenset({"x"}), deprecated=True), ABSENT],
            ["x"],
            {"since": "≤1.13", "deprecated": "2.0", "removed": "2.1"},
        ),
    ],
)
def test_history_rows(states, params, expected):
    assert history(states, ["1.13", "2.0", "2.1"][: len(states)], params) == expected
