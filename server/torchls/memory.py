"""Keeping long-lived objects out of Python's cyclic garbage collector, in the server and in jedi's process.

A full collection walks every tracked object. The server keeps the knowledge base, converted completion lists and
one syntax tree per open document (60,000 objects for a 2,000-line file); jedi keeps torch's parsed stubs and the
open documents' parso trees (millions). Left to itself, a full collection then stalls whichever request is running
for 30-80 ms in the server and 100-450 ms in jedi's process (measured with ``gc.callbacks`` during
``bench/completion_bench.py``), while finding almost nothing: these objects live as long as the document or the
process.

So after each step that leaves many such objects behind (the warm-up, indexing a document version, jedi parsing a
newly opened file), :func:`settle` collects once and moves the survivors to the permanent generation. The
collection walks only what is not frozen yet (what the step created), and later collections walk only what came
after. Frozen objects are still freed when nothing refers to them (a replaced document's index: no cycles); only
garbage cycles among them wait until the process ends. In jedi's process those are the inference state in use
when a file was opened, once it is renewed (about 9,000 objects, measured on a timm file), and the parso nodes an
edit replaces in a tree frozen when its file was opened: bounded by what each settle froze, not growing with
edits or saves.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Collect what is garbage now, then keep every surviving object out of later collections."""
    gc.collect()
    gc.freeze()
