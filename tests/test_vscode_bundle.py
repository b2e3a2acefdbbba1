"""The server the VS Code .vsix carries (vscode-client/scripts/bundle_server.py): torchls and its pure-Python
dependencies, run by a Python that has none of them installed; and the two server behaviours the extension relies
on: jedi's process in the project's interpreter does not see the bundle, and example output is not logged twice."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import MethodType, SimpleNamespace

import pytest

from torchls.jedi_host import BUNDLED_LIBS_ENV, project_env
from torchls.lsp.lifecycle import client_tells_missing_torch
from torchls.lsp.run_example import client_shows_output
from torchls.lsp.server import TorchLanguageServer

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "vscode-client" / "scripts" / "bundle_server.py"

# Run with PYTHONPATH=<bundle> only (-S: not even the interpreter's site-packages): everything the server imports
# must come from the bundle, and the knowledge base must load with PyYAML's pure-Python loader.
SMOKE = """
import sys, yaml, torchls, pygls, lsprotocol, jedi, parso, attrs, cattrs, exceptiongroup, typing_extensions
from torchls.kb.loader import _BaseLoader
from torchls.session import Session
assert torchls.__file__.startswith(sys.argv[1]), torchls.__file__
assert _BaseLoader is yaml.SafeLoader
session = Session()
assert "交叉熵" in session.kb.get("torch.nn.CrossEntropyLoss").summary
assert "knowledge-" in str(session.kb.folders[0]), session.kb.folders
session.close()
"""


def test_jedi_in_the_project_interpreter_does_not_see_the_bundle(monkeypatch):
    bundled = "/ext/bundled/libs"
    monkeypatch.setenv(BUNDLED_LIBS_ENV, bundled)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([bundled, "/home/me/src"]))
    env = project_env()
    assert env is not None
    assert env["PYTHONPATH"] == "/home/me/src" and BUNDLED_LIBS_ENV not in env
    monkeypatch.setenv("PYTHONPATH", bundled)
    assert "PYTHONPATH" not in project_env()
    monkeypatch.delenv(BUNDLED_LIBS_ENV)
    assert project_env() is None  # not from a bundle: jedi inherits the server's environment


def client_declaring(experimental: dict | None) -> SimpleNamespace:
    """A stand-in server whose client declared ``experimental`` in `initialize`, read by the server's own method."""
    ls = SimpleNamespace(client_capabilities=SimpleNamespace(experimental=experimental))
    ls.client_experimental = MethodType(TorchLanguageServer.client_experimental, ls)
    return ls


@pytest.mark.parametrize(
    ("experimental", "shown"),
    [({"exampleOutput": "client"}, True), ({"commandLinks": []}, False), (None, False)],
)
def test_example_output_is_left_to_a_client_that_shows_it(experimental, shown):
    ls = client_declaring(experimental)
    assert client_shows_output(ls) is shown


@pytest.mark.parametrize(
    ("experimental", "told"),
    [({"missingTorch": "client"}, True), ({"exampleOutput": "client"}, False), (None, False)],
)
def test_a_missing_torch_is_left_to_a_client_that_tells_it(experimental, told):
    ls = client_declaring(experimental)
    assert client_tells_missing_torch(ls) is told


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """The libraries folder the .vsix carries, built once for this module's tests."""
    target = tmp_path_factory.mktemp("bundle") / "libs"
    built = subprocess.run(
        [sys.executable, str(SCRIPT), "--target", str(target)], capture_output=True, text=True, timeout=600
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return target


def _bundle_env(bundle: Path, cache: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.update(PYTHONPATH=str(bundle), TORCHLS_CACHE_DIR=str(cache))
    return env


@pytest.mark.skipif(shutil.which("python3") is None, reason="no python3 on PATH")
def test_the_bundle_runs_the_server_without_anything_installed(bundle, tmp_path):
    target = bundle
    assert not [path for pattern in ("*.so", "*.pyd") for path in target.rglob(pattern)]
    assert not list(target.rglob("__pycache__")) and not (target / "bin").exists()
    assert (target / "torchls" / "_knowledge.zip").is_file() and not (target / "torchls" / "_knowledge").exists()
    with zipfile.ZipFile(target / "torchls" / "_knowledge.zip") as knowledge:
        assert "_versions.json" in knowledge.namelist()  # the version table the cards read
    lowered = [path.as_posix().lower() for path in target.rglob("*")]
    assert len(lowered) == len(set(lowered))  # a .vsix refuses paths that differ only in case
    ran = subprocess.run(
        ["python3", "-S", "-c", SMOKE, str(target)],
        env=_bundle_env(target, tmp_path / "cache"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]


def _pythons_from_3_10() -> list[str]:
    """Every other CPython 3.10+ this machine can run (python3.X on PATH, or installed by pyenv), one per version:
    the extension starts its server with whichever the user has."""
    found: dict[tuple[int, int], str] = {}
    candidates = [shutil.which(f"python3.{minor}") for minor in range(10, 15)]
    candidates += sorted(str(path) for path in Path.home().glob(".pyenv/versions/3.*/bin/python3.*[0-9]"))
    for candidate in filter(None, candidates):
        try:  # a pyenv shim on PATH may exist without a version behind it
            asked = subprocess.run(
                [candidate, "-c", "import sys; print(*sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            major, minor = map(int, asked.stdout.split())
        except (OSError, subprocess.SubprocessError, ValueError):
            continue
        if (major, minor) >= (3, 10) and (major, minor) != sys.version_info[:2]:
            found.setdefault((major, minor), candidate)
    return [found[version] for version in sorted(found)]


@pytest.mark.parametrize("python", _pythons_from_3_10() or [None])
def test_the_bundle_checks_and_loads_its_knowledge_on_every_python_from_3_10(python, bundle, tmp_path):
    """The checker and the server, run by another Python than the tests' (3.10 has no ``ast.TryStar``...)."""
    if python is None:
        pytest.skip("no other Python 3.10+ on this machine (python3.X on PATH or under ~/.pyenv)")
    env = _bundle_env(bundle, tmp_path / "cache")
    sample = ROOT / "tests" / "fixtures" / "rules" / "TL417.py"
    checked = subprocess.run(
        [python, "-S", "-m", "torchls", "check", str(sample)], env=env, capture_output=True, text=True, timeout=300
    )
    assert checked.returncode == 1 and "TL417" in checked.stdout, checked.stdout[-2000:] + checked.stderr[-2000:]
    ran = subprocess.run([python, "-S", "-c", SMOKE, str(bundle)], env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]


def test_the_zipped_knowledge_base_is_unpacked_once_per_archive(tmp_path):

    from torchls.kb.archive import unpacked

    archive = tmp_path / "_knowledge.zip"
    with zipfile.ZipFile(archive, "w") as opened:
        opened.writestr("torch/Tensor.yaml", "name: torch.Tensor\n")
        opened.writestr("torch/tensor.yaml", "name: torch.tensor\n")
    first = unpacked(archive, tmp_path / "cache")
    assert (first / "torch" / "Tensor.yaml").read_text() == "name: torch.Tensor\n"
    assert unpacked(archive, tmp_path / "cache") == first
    assert [path.name for path in (tmp_path / "cache").iterdir()] == [first.name]  # no staging folder left
