"""JupyterLab's language-server integration (jupyterlab-lsp) serving torchls, from the server spec the README gives.

jupyterlab-lsp has two halves: the browser extension, which joins a notebook's cells into one virtual document,
and jupyter-lsp, a Jupyter server extension that starts the servers its specs name and relays JSON-RPC over a
websocket. This test runs the second half for real: ``jupyter server`` with the README's
``jupyter_server_config.json`` (read from the README, with this interpreter in ``argv``), ``/lsp/status`` listing
torchls, and torchls answering through jupyter-lsp's websocket what the frontend sends for a notebook (the virtual
document of its cells): TL301 published and a Chinese hover card. The browser half is not driven here.

Needs jupyter_server and jupyter-lsp: ``bash tests/editors/install.sh`` puts them in a virtual environment of their
own (``TORCHLS_JUPYTER_PYTHON`` may name another); skipped with that message otherwise.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .conftest import NOTEBOOK_CELLS, ROOT

SESSION = Path(__file__).with_name("jupyter_lsp_session.py")


def _jupyter_python() -> str:
    """$TORCHLS_JUPYTER_PYTHON, the environment tests/editors/install.sh makes, or this interpreter: the first that
    has jupyter_server and jupyter-lsp."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "torchls-editors"
    candidates = [
        os.environ.get("TORCHLS_JUPYTER_PYTHON"),
        str(cache / "jupyter-lsp" / "bin" / "python"),
        sys.executable,
    ]
    for candidate in filter(None, candidates):
        if not Path(candidate).exists():
            continue
        probe = subprocess.run(
            [candidate, "-c", "import jupyter_server, jupyter_lsp, tornado"], capture_output=True, timeout=60
        )
        if probe.returncode == 0:
            return candidate
    pytest.skip(
        "jupyter_server 与 jupyter-lsp 未安装（运行 bash tests/editors/install.sh，"
        "或 pip install jupyterlab jupyterlab-lsp 后设 TORCHLS_JUPYTER_PYTHON）"
        " / jupyter_server and jupyter-lsp are not installed"
    )


def _readme_spec(python: str) -> dict:
    """The README's jupyter_server_config.json, with ``python`` as the interpreter in ``argv``."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```json\n(\{\n  \"LanguageServerManager\".*?)\n```", readme, re.S)
    assert block, "the README has no jupyter_server_config.json for jupyterlab-lsp"
    spec = json.loads(block.group(1))
    spec["LanguageServerManager"]["language_servers"]["torchls"]["argv"][0] = python
    return spec


def test_jupyter_lsp_serves_torchls_from_the_readme_spec(artifacts):
    jupyter_python = _jupyter_python()
    root = Path(tempfile.mkdtemp(prefix="torchls-jupyter-"))
    (root / "config").mkdir()
    (root / "config" / "jupyter_server_config.json").write_text(json.dumps(_readme_spec(sys.executable)))
    # What the frontend sends for a notebook: its code cells joined into one document.
    text = "\n\n\n".join(source for kind, source in NOTEBOOK_CELLS if kind == "code") + "\n"
    lines = text.splitlines()
    line = next(i for i, content in enumerate(lines) if "CrossEntropyLoss" in content)
    column = len(lines[line][: lines[line].index("CrossEntropyLoss") + 3].encode("utf-16-le")) // 2
    config = {"root": str(root), "text": text, "hover": {"line": line, "character": column}}
    (root / "session.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    env = {**os.environ, "TORCHLS_CACHE_DIR": str(root / "torchls-cache")}
    completed = subprocess.run(
        [jupyter_python, str(SESSION), str(root / "session.json")], capture_output=True, text=True, timeout=400, env=env
    )
    log = (
        (root / "jupyter.log").read_text(encoding="utf-8", errors="replace") if (root / "jupyter.log").exists() else ""
    )
    (artifacts / "jupyterlab-jupyter-server.log").write_text(log, encoding="utf-8")
    assert (root / "result.json").exists(), completed.stderr[-3000:]
    result = json.loads((root / "result.json").read_text(encoding="utf-8"))
    (artifacts / "jupyterlab-result.json").write_text(
        json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    assert result["ok"], (result.get("error"), completed.stderr[-2000:], log[-2000:])

    # jupyter-lsp read the spec: torchls is a server for Python notebooks and files.
    spec = result["status"]["specs"]["torchls"]
    assert spec["languages"] == ["python"] and "text/x-ipython" in spec["mime_types"], spec
    assert result["initialize"]["result"]["serverInfo"]["name"] == "torchls", result["initialize"]

    # Through the websocket: the softmax fed to CrossEntropyLoss is found, and the hover card is the Chinese one.
    codes = [d["code"] for published in result["diagnostics"] for d in published["diagnostics"]]
    assert "TL301" in codes, result["diagnostics"]
    hover = result["hover"]["result"]["contents"]["value"]
    assert "torch.nn.CrossEntropyLoss" in hover and "交叉熵" in hover, hover
