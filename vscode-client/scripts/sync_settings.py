"""Write the server's settings into package.json's ``contributes.configuration``, or check they are there.

    python scripts/sync_settings.py          # rewrite package.json from torchls.settings
    python scripts/sync_settings.py --check  # exit 1 when package.json differs (the test suite runs this)

The server's settings tree (``torchls.settings``) is the single source: keys, types, defaults, bounds, allowed
values and Chinese descriptions. The client adds its own settings (the language client's trace).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from torchls.settings import SECTION, json_schema

PACKAGE = Path(__file__).resolve().parent.parent / "package.json"

# Settings the extension itself reads; the server ignores them (torchls.settings.CLIENT_ONLY_KEYS).
CLIENT_SETTINGS = {
    "trace.server": {
        "type": "string",
        "enum": ["off", "messages", "verbose"],
        "default": "off",
        "markdownDescription": "在“torchls”输出面板里记录客户端与服务器之间的 LSP 消息（排查问题时打开）",
    },
}

# How the VS Code extension chooses the interpreter: say so where the user sets it.
EXTENSION_NOTES = {
    "interpreter": (
        "。VS Code 扩展不设置它时用 Python 扩展选中的解释器，再没有就用 `python3`；"
        "torchls 本身随扩展附带，不需要装进这个解释器"
    ),
}


def configuration() -> dict:
    properties = {}
    for key, schema in {**json_schema(), **CLIENT_SETTINGS}.items():
        schema = dict(schema)
        schema["markdownDescription"] += EXTENSION_NOTES.get(key, "")
        if key == "interpreter":
            schema["scope"] = "machine-overridable"  # a path on this machine, may differ per workspace
        properties[f"{SECTION}.{key}"] = schema
    return {"title": "torchls", "properties": properties}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when package.json is out of date")
    args = parser.parse_args()
    package = json.loads(PACKAGE.read_text(encoding="utf-8"))
    wanted = configuration()
    if args.check:
        if package["contributes"]["configuration"] != wanted:
            sys.stderr.write("package.json 的设置与服务器不一致：运行 python vscode-client/scripts/sync_settings.py\n")
            return 1
        return 0
    package["contributes"]["configuration"] = wanted
    PACKAGE.write_text(json.dumps(package, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
