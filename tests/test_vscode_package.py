"""The VS Code extension's manifest agrees with the server: every setting, its default and bounds (a setting the
server does not read, or a default that differs, would mislead users in the settings UI)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from torchls.settings import default_values

CLIENT = Path(__file__).resolve().parent.parent / "vscode-client"
PACKAGE = json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))


def _sync_module():
    spec = importlib.util.spec_from_file_location("sync_settings", CLIENT / "scripts" / "sync_settings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_settings_in_package_json_are_generated_from_the_server():
    assert PACKAGE["contributes"]["configuration"] == _sync_module().configuration(), (
        "run: python vscode-client/scripts/sync_settings.py"
    )


def test_every_server_setting_is_declared_with_the_servers_default_and_a_chinese_description():
    properties = PACKAGE["contributes"]["configuration"]["properties"]
    for key, default in default_values().items():
        declared = properties[f"torchls.{key}"]
        assert declared["default"] == default, key
        assert any("\u4e00" <= char <= "\u9fff" for char in declared["markdownDescription"]), key


def test_commands_and_activation():
    commands = {c["command"] for c in PACKAGE["contributes"]["commands"]}
    assert {
        "torchls.restartServer",
        "torchls.showOutput",
        "torchls.runExampleAtCursor",
        "torchls.showCardAtCursor",
    } <= commands
    assert PACKAGE["activationEvents"] == ["onLanguage:python"]
    assert PACKAGE["engines"]["vscode"] == "^1.91.0"
    assert PACKAGE["devDependencies"]["@types/vscode"] == "~1.91.0"  # a newer one makes vsce refuse to package
