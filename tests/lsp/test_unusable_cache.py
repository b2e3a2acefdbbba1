"""A cache folder that cannot be used (a read-only home, a full disk, a file where the folder should be) costs
speed, never answers: jedi's parse cache and torchls's own caches all live under ``$XDG_CACHE_HOME``, and here it
names a plain file, so every write and read there fails with an OSError that is not a PermissionError."""

from __future__ import annotations

import os
import tempfile

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from torchls.kb.base import KnowledgeBase

from .helpers import SERVER_COMMAND, _recording_client, open_document, start_warm_in, wait_for
from .test_completion import HEADER, by_label, complete, signature, summary_of
from .test_diagnostics import SOURCE as SOFTMAX_BEFORE_CROSS_ENTROPY


def _config() -> ClientServerConfig:
    descriptor, not_a_folder = tempfile.mkstemp(prefix="torchls-cache-is-a-file-")
    os.close(descriptor)
    env = {key: value for key, value in os.environ.items() if key != "TORCHLS_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = not_a_folder
    return ClientServerConfig(server_command=SERVER_COMMAND, server_env=env, client_factory=_recording_client)


@pytest_lsp.fixture(config=_config(), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    await start_warm_in(lsp_client, tmp_path_factory.mktemp("workspace"))
    yield
    await lsp_client.shutdown_session()


async def test_the_user_is_not_warned_about_torch(client: LanguageClient):
    assert not [m.message for m in client.messages if "torch" in m.message]


async def test_completion_still_lists_torch_from_jedi(client: LanguageClient):
    kb = KnowledgeBase.load(use_cache=False)
    namespace = await complete(client, HEADER + '说明 = "缓存 🗄️"; y = th.‸\n')
    assert not namespace.is_incomplete
    items = by_label(namespace)
    # Hundreds of members mean jedi really read torch (the knowledge base alone offers a few hundred fewer).
    assert len(items) > 1000, len(items)
    assert summary_of(items["randn"]) == kb.get("torch.randn").summary


async def test_receivers_only_jedi_can_type_still_complete(client: LanguageClient):
    result = await complete(client, HEADER + '说明 = "分块 🧪"; torch.chunk(x, 2)[0].‸\n')
    assert {"view", "reshape"} <= set(by_label(result))


async def test_signature_help_still_has_the_installed_signature(client: LanguageClient):
    help_ = await signature(client, HEADER + '说明 = "签名 ✍️"; torch.max(x, ‸\n')
    assert len(help_.signatures) > 1, [s.label for s in help_.signatures]
    assert isinstance(help_.signatures[0], types.SignatureInformation)


async def test_diagnostics_still_arrive_without_a_link_to_the_rule_page(client: LanguageClient):
    uri = (client.root / "train.py").as_uri()
    await open_document(client, uri, SOFTMAX_BEFORE_CROSS_ENTROPY)
    await wait_for(lambda: client.diagnostic_versions.get(uri) == 1, message="no diagnostics")
    [diagnostic] = client.diagnostics[uri]
    assert diagnostic.code == "TL301"
    # The rule pages could not be written: no link rather than a link to nothing.
    assert diagnostic.code_description is None
