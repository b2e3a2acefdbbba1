"""The language server answers `initialize` before it imports the analysis: an editor waits for that answer, and
the analysis (the interpreter, the rules, the hover index) is most of a second of imports that the answer does not
need. The session is made, and the analysis imported, once the client has sent `initialized`."""

from __future__ import annotations

import json
import subprocess
import sys

# Modules the `initialize` answer must not wait for.
HEAVY = ("torchls.session", "torchls.core.interpreter", "torchls.core.checker", "torchls.core.names", "jedi")

PROBE = f"""
import json, sys
from torchls.lsp.server import create_server
server = create_server()
heavy = {HEAVY!r}
print(json.dumps(sorted(m for m in sys.modules if m.startswith(heavy))))
"""


def test_creating_the_server_imports_no_analysis():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == []


def test_the_session_is_made_on_first_use_from_the_settings_of_initialize():
    from torchls.lsp.server import TorchLanguageServer
    from torchls.settings import Settings

    server = TorchLanguageServer()
    assert server.session is None  # before `initialize`: nothing planned, nothing made
    server.planned_session = (Settings(), None)
    session = server.session
    try:
        assert session is not None
        assert server.session is session  # made once
        assert server.planned_session is None
    finally:
        session.close()
