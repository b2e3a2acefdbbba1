"""The session reads its interpreter's identity table once the knowledge base is loaded, and climbs with it."""

from __future__ import annotations

from torchls.session import Session


def test_the_session_climbs_only_once_its_table_is_in_place():
    session = Session()
    try:
        session.ensure_knowledge()
        table = session.identity_future.result(timeout=180)
        assert table is not None and session.kb.identity is table
        assert session.kb.lookup("torch.nn.modules.linear.Linear").name == "torch.nn.Linear"
        # The autograd-aware collective is its own object: its own card, never c10d's all_gather.
        assert session.kb.lookup("torch.distributed.nn.functional.all_gather").name == "torch.distributed.nn.all_gather"
        assert session.kb.lookup("torch.distributed._functional_collectives.all_gather_tensor") is None
        # A reload keeps the table (same torch) and reads the entries' namespaces again.
        session.reload_knowledge()
        assert session.kb.identity is table
        assert session.identity_future.result(timeout=180) is not None
    finally:
        session.close()
