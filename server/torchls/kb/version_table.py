"""Generate ``knowledge/_versions.json``: in which torch release each knowledge-base API and parameter first appears.

A developer tool, not run by the server. It downloads one wheel per torch minor release (the macOS arm64 wheels
on PyPI: CPU-only, 50-110 MB, the same Python sources and ``.pyi`` stubs as every other platform) into a
git-ignored cache, reads every entry's signature in each release statically (:mod:`torchls.kb.wheel_reader`,
nothing is installed or imported), and writes the table that :mod:`torchls.kb.versions` reads at run time.

Usage, from the repository root::

    python -m torchls.kb.version_table                       # download what is missing, rewrite the table
    python -m torchls.kb.version_table --releases 1.13.1,...,2.14.0   # another list of releases (first = baseline)
    python -m torchls.kb.version_table --offline             # only the wheels already in the cache

For a new torch release: add it to ``RELEASES`` below, run the tool, check the diff of ``knowledge/_versions.json``
and run ``pytest tests/kb/test_version_table.py`` (entries' ``since`` must agree with the table).

The table, per API: ``since`` (first release seen, ``"≤1.13"`` when already in the first release, null when it
cannot be told), ``params`` (only parameters newer than the API itself: first release, or null when unknown),
``deprecated`` (first release whose source warns or marks it ``@deprecated``), ``removed`` (first release without
it again) and ``unknown`` (releases where the name could not be resolved statically).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from torchls.kb.schema import Entry
from torchls.kb.wheel_reader import ABSENT, UNKNOWN, Api, Release

RELEASES = "1.13.1 2.0.1 2.1.2 2.2.2 2.3.1 2.4.1 2.5.1 2.6.0 2.7.1 2.8.0 2.9.1 2.10.0 2.11.0 2.12.1 2.13.0".split()
ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / ".cache" / "torch-wheels"
TABLE = ROOT / "knowledge" / "_versions.json"
# Older wheels exist for 3.10 on macOS 11, newer ones only for newer Pythons and macOS versions.
_PLATFORMS = (("macosx_11_0_arm64", "3.10"), ("macosx_14_0_arm64", "3.12"), ("macosx_11_0_arm64", "3.12"))


# Where the static reading is wrong, checked by hand in the wheels' sources: name -> the fields to replace
# (``params`` entries merge). Mostly the stubs of compiled modules (torch/_C/*.pyi) lagging behind the runtime.
CORRECTIONS: dict[str, dict] = {
    # torch/_tensor_str.py of 2.1.2 uses torch.float8_e4m3fn; the 2.1 stub torch/_C/__init__.pyi lacks it.
    "torch.float8_e4m3fn": {"since": "2.1"},
    # Tensor.to(memory_format=) goes through torch._C._nn._parse_to, which took it long before the stub's
    # overloads named it (2.2): when it came cannot be told from the stubs.
    "torch.Tensor.to": {"params": {"memory_format": None}},
    # The 1.13-2.1 stubs name stride's parameter `_int` (a stub bug); the schema always called it `dim`.
    "torch.Tensor.stride": {"params": {"dim": None}},
    # Only the docstring's signature changed (``linalg.norm(A, ...)`` up to 2.12, ``input`` in 2.13); the keyword
    # comes from the compiled binding, which the wheels do not show.
    "torch.linalg.norm": {"params": {"input": None}},
}


def minor(release: str) -> str:
    return ".".join(release.split(".")[:2])


def wheel_for(release: str, cache: Path, offline: bool) -> Path:
    """The cached wheel of ``release``, downloaded with pip when missing."""
    found = sorted(cache.glob(f"torch-{release}-*.whl"))
    if found or offline:
        if not found:
            raise SystemExit(f"no wheel for torch {release} in {cache} (run without --offline)")
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    for platform, python in _PLATFORMS:
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
        command += ["--platform", platform, "--python-version", python, "-d", str(cache), f"torch=={release}"]
        if subprocess.run(command, check=False).returncode == 0:
            found = sorted(cache.glob(f"torch-{release}-*.whl"))
            if found:
                return found[0]
    raise SystemExit(f"could not download a wheel of torch {release}")


def history(states: Sequence[Api | str], labels: Sequence[str], params: Sequence[str]) -> dict:
    """One API's row of the table from its state in each release (oldest first)."""
    present = [i for i, state in enumerate(states) if isinstance(state, Api)]
    row: dict = {"since": None}
    unknown = [labels[i] for i, state in enumerate(states) if state == UNKNOWN]
    if not present:
        row["params"] = dict.fromkeys(params)
        if unknown:
            row["unknown"] = unknown
        return row
    first = present[0]
    if first == 0:
        row["since"] = f"≤{labels[0]}"
    elif all(state == ABSENT for state in states[:first]):
        row["since"] = labels[first]
    newer: dict[str, str | None] = {}
    for name in params:
        seen = [i for i in present if _has(states[i], name)]
        if not seen:
            newer[name] = None
        elif seen[0] != first:
            # Only where every earlier release names its parameters (no **kwargs that might take it).
            readable = all(isinstance(s, Api) and s.params is not None and not s.open for s in states[first : seen[0]])
            newer[name] = labels[seen[0]] if readable else None
    if newer:
        row["params"] = newer
    deprecated = [i for i in present if states[i].deprecated]  # type: ignore[union-attr]
    if deprecated:
        row["deprecated"] = labels[deprecated[0]]
    last = present[-1]
    if last < len(states) - 1 and all(state == ABSENT for state in states[last + 1 :]):
        row["removed"] = labels[last + 1]
    if unknown:
        row["unknown"] = unknown
    return row


def _has(state: Api | str, param: str) -> bool:
    return isinstance(state, Api) and state.params is not None and param in state.params


def documented_params(entry: Entry) -> list[str]:
    return [p.name.lstrip("*") for p in entry.params]


def build(releases: Sequence[Release], labels: Sequence[str], entries: dict) -> dict:
    apis = {}
    for name in sorted(entries):
        states = [release.api(name) for release in releases]
        row = history(states, labels, documented_params(entries[name]))
        correction = CORRECTIONS.get(name, {})
        row.update({key: value for key, value in correction.items() if key != "params"})
        if "params" in correction:
            row["params"] = {**row.get("params", {}), **correction["params"]}
        apis[name] = row
    return {"releases": list(labels), "apis": apis}


def dump(table: dict) -> str:
    """JSON with one line per API: small, and a new release shows as a readable diff."""
    lines = [
        "{",
        '  "generated_by": "python -m torchls.kb.version_table",',
        f'  "releases": {json.dumps(table["releases"])},',
    ]
    lines.append('  "apis": {')
    rows = [f"    {json.dumps(name)}: {json.dumps(row, ensure_ascii=False)}" for name, row in table["apis"].items()]
    lines.append(",\n".join(rows))
    lines += ["  }", "}", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--releases", default=",".join(RELEASES), help="comma-separated torch releases, oldest first")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"where wheels are kept (default: {CACHE})")
    parser.add_argument("--output", type=Path, default=TABLE, help=f"the table to write (default: {TABLE})")
    parser.add_argument("--knowledge", type=Path, default=ROOT / "knowledge", help="the knowledge folder")
    parser.add_argument("--offline", action="store_true", help="use only wheels already in the cache")
    args = parser.parse_args(argv)
    from torchls.kb.loader import load_folder

    entries, errors = load_folder(args.knowledge)
    if errors:
        print(f"warning: {len(errors)} knowledge errors; run `torchls kb check`", file=sys.stderr)
    names = [r.strip() for r in args.releases.split(",") if r.strip()]
    releases = []
    for release in names:
        print(f"reading torch {release}", file=sys.stderr)
        releases.append(Release.from_wheel(wheel_for(release, args.cache, args.offline)))
    table = build(releases, [minor(r) for r in names], entries)
    args.output.write_text(dump(table), encoding="utf-8")
    rows = table["apis"].values()
    unknown = sum(1 for row in rows if row["since"] is None)
    params = sum(len(documented_params(e)) for e in entries.values())
    unknown_params = sum(1 for row in rows for value in row.get("params", {}).values() if value is None)
    print(f"{args.output}: {len(rows)} APIs ({unknown} unknown), {params} params ({unknown_params} unknown)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
