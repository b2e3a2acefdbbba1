"""The live signatures jedi read are kept on disk with the members, so the next start does not read them again."""

from __future__ import annotations

from torchls.resolve import Resolver


def test_signatures_read_in_one_session_are_there_in_the_next(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHLS_CACHE_DIR", str(tmp_path))
    first = Resolver()
    try:
        first.warm_up(["torch.nn.Linear", "torch.no_such_api"])
        linear = first.cached_doc("torch.nn.Linear")
        assert linear is not None and linear.signatures
    finally:
        first.close()

    second = Resolver()
    try:
        second.submit(second.load_members).result(timeout=120)
        # Straight from the disk, before any jedi work: the same doc, and the name jedi did not know stays known.
        assert second.cached_doc("torch.nn.Linear") == linear
        assert "torch.no_such_api" in second._docs and second._docs["torch.no_such_api"] is None
    finally:
        second.close()
