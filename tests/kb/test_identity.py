"""Hover never shows another API's card: over the whole public API of the installed torch, every name the
server can be given (each callable bound in a torch module, and where each says it is defined) leads either to
no entry or to the entry of that very object, or of an object whose entry declares it in ``aliases:``."""

from __future__ import annotations

from torchls.kb.base import KnowledgeBase
from torchls.kb.identity import Identity


def _wrong_cards(kb: KnowledgeBase, table: Identity) -> tuple[int, int, list[str]]:
    checked = shown = 0
    wrong = []
    for group in table.groups:
        for name in group:
            checked += 1
            entry = kb.lookup(name)
            if entry is None:
                continue
            shown += 1
            if entry.name == name or table.same_object(entry.name, name) or set(group) & set(entry.aliases):
                continue
            wrong.append(f"{name} -> {entry.name}")
    return checked, shown, wrong


def test_every_torch_name_shows_its_own_card_or_none(shipped_kb: KnowledgeBase, torch_identity: Identity):
    checked, shown, wrong = _wrong_cards(shipped_kb, torch_identity)
    print(f"identity: {checked} names of {len(torch_identity.groups)} objects checked, {shown} show a card")
    assert checked > 5000  # the table really covers torch's API
    assert not wrong, f"{len(wrong)} names show another API's card:\n" + "\n".join(wrong[:50])


def test_the_entries_themselves_are_their_objects(shipped_kb: KnowledgeBase, torch_identity: Identity):
    # Each entry's own name, where torch binds it to a callable, is in the table: the check above sees it.
    known = [name for name in shipped_kb.entries if torch_identity.knows(name)]
    assert len(known) > 400
    assert all(shipped_kb.lookup(name).name == name for name in known)


def test_the_autograd_collectives_do_not_show_the_c10d_cards(shipped_kb: KnowledgeBase):
    for name in ("all_gather", "all_reduce"):
        for jedi_name in (f"torch.distributed.nn.functional.{name}", f"torch.distributed.nn.{name}"):
            entry = shipped_kb.lookup(jedi_name)
            assert entry is None or entry.name != f"torch.distributed.{name}", jedi_name
            assert shipped_kb.public_name(jedi_name).startswith("torch.distributed.nn.")


def test_without_the_table_only_exact_names_and_rules(shipped_kb: KnowledgeBase):
    bare = KnowledgeBase(shipped_kb.entries, folders=shipped_kb.folders)
    bare._index()
    name = "torch.distributed.nn.functional.all_gather"
    assert bare.lookup(name) is None and bare.public_name(name) == name
    assert bare.lookup("torch.nn.Linear").name == "torch.nn.Linear"
    assert bare.lookup("torch._C._VariableFunctions.cat").name == "torch.cat"
