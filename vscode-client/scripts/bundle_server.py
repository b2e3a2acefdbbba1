"""Put torchls and its pure-Python dependencies into ``vscode-client/bundled/libs`` for the .vsix.

    python scripts/bundle_server.py [--target DIR]   # run by `npm run package` before vsce

The extension starts ``<any Python >= 3.10> -m torchls serve`` with this folder first on ``PYTHONPATH``, so the
user installs nothing: jedi reads the project's own interpreter.

- Dependencies are resolved for the oldest supported Python (3.10), and the backports 3.10 needs are added by name:
  pip evaluates environment markers against the Python running it, not ``--python-version``, so cattrs's
  ``exceptiongroup; python_version < '3.11'`` would be dropped when the build runs on 3.11+. Newer Pythons run the
  same pure-Python files (cattrs imports the backport only on 3.10).
- Compiled extension modules are removed: the only one, PyYAML's libyaml binding, is optional (the knowledge loader
  falls back to the pure-Python SafeLoader), and a .so built for one Python and platform breaks on another.
- The knowledge base goes in as one zip, ``torchls/_knowledge.zip`` (torchls.kb.archive unpacks it on first use):
  a .vsix refuses paths that differ only in case, and the knowledge base has such pairs.
- `npm run package` gives vsce ``--allow-package-all-secrets``: its secret scan reads every packaged file, and over
  the bundle's ~6,000 third-party Python files it took 6.5 minutes of CPU (5 s without it). Nothing packaged is
  ours but the built extension.js, package.json, README, LICENSE and images.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

CLIENT = Path(__file__).resolve().parent.parent
ROOT = CLIENT.parent
LIBS = CLIENT / "bundled" / "libs"
OLDEST_PYTHON = "3.10"
COMPILED = ("*.so", "*.pyd", "*.dylib")
# Dependencies behind `python_version < "3.11"` markers somewhere in the tree.
BACKPORTS = ("exceptiongroup>=1.1.1", "typing_extensions>=4.14")


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], check=True, timeout=600)


def build_wheel(out: Path) -> Path:
    _pip("wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(ROOT))
    [wheel] = out.glob("torchls-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    # The hover cards come from the knowledge base: a wheel without it would start and show nothing.
    if not any(name.startswith("torchls/_knowledge/") and name.endswith(".yaml") for name in names):
        raise SystemExit(f"{wheel.name} does not carry the knowledge base (torchls/_knowledge)")
    return wheel


def install(wheel: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    _pip(
        "install",
        "--quiet",
        "--target",
        str(target),
        "--python-version",
        OLDEST_PYTHON,
        "--only-binary=:all:",  # required with --python-version; every dependency has a pure or abi3 wheel
        "--no-compile",
        str(wheel),
        *BACKPORTS,
    )


def prune(target: Path) -> list[Path]:
    """Remove what the bundle must not carry: compiled modules, caches, console scripts. Returns the removed
    compiled modules (for the build's log)."""
    removed = [path for pattern in COMPILED for path in target.rglob(pattern)]
    for path in removed:
        path.unlink()
    for cache in list(target.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(target / "bin", ignore_errors=True)
    return removed


def zip_knowledge(target: Path) -> None:
    """The knowledge folder as one zip (torchls.kb.archive unpacks it): a .vsix refuses paths that differ only in
    case, and the knowledge base has such pairs (torch/tensor.yaml and torch/Tensor.yaml)."""
    folder = target / "torchls" / "_knowledge"
    with zipfile.ZipFile(folder.with_name("_knowledge.zip"), "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    shutil.rmtree(folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", type=Path, default=LIBS, help=f"where to put the libraries (default: {LIBS})")
    target = parser.parse_args().target.resolve()
    with tempfile.TemporaryDirectory(prefix="torchls-wheel-") as folder:
        wheel = build_wheel(Path(folder))
        install(wheel, target)
    removed = prune(target)
    zip_knowledge(target)
    size = sum(path.stat().st_size for path in target.rglob("*") if path.is_file())
    names = sorted(path.name.split("-")[0] for path in target.glob("*.dist-info"))
    sys.stdout.write(f"bundled into {target} ({size / 1e6:.1f} MB): {', '.join(names)}\n")
    if removed:
        sys.stdout.write("removed compiled modules: " + ", ".join(path.name for path in removed) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
