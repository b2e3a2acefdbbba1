"""settle(): garbage goes now, survivors stay out of later collections, and are still freed when released."""

from __future__ import annotations

import gc
import weakref

from torchls import memory


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


def test_settle_collects_garbage_and_freezes_what_survives():
    gc.unfreeze()
    try:
        garbage = _Node()
        gone = weakref.ref(garbage)
        del garbage
        kept = [_Node() for _ in range(1000)]
        before = gc.get_freeze_count()
        memory.settle()
        assert gone() is None, "garbage cycles are collected before freezing"
        assert gc.get_freeze_count() >= before + len(kept)
        assert not any(node is kept[0] for node in gc.get_objects()), "frozen objects are out of collections"

        index = _Released([1, 2, 3])  # like a document's index: no cycles
        memory.settle()
        released = weakref.ref(index)
        del index
        assert released() is None, "a frozen object without cycles is freed as soon as it is released"
    finally:
        gc.unfreeze()


class _Released:
    """An acyclic object: freed by reference counting even once frozen."""

    def __init__(self, payload: list) -> None:
        self.payload = payload
