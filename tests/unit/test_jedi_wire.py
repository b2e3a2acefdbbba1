"""What crosses the pipes to the jedi process is plain data or a wire type importable by name, in both directions.

The child runs ``python -m torchls.jedi_host``: a class defined in that module pickles as ``__main__.X`` there and
could not be unpickled in the server (every hover that fell back to jedi failed with an AttributeError). These
tests go through the real child process for every method that answers with more than a scalar.
"""

from __future__ import annotations

import importlib
import io
import pickle
from dataclasses import dataclass

import pytest

from torchls.docinfo import JediHit, SymbolDoc
from torchls.jedi_host import HostError, HostProcess
from torchls.jedi_wire import WIRE_TYPES, WireError, decode, encode, read_frame, write_frame


@dataclass(frozen=True)
class NotOnTheWire:
    value: int


def test_every_wire_type_is_importable_by_its_module_name_and_not_main():
    for kind in WIRE_TYPES:
        assert kind.__module__ != "__main__"
        assert not kind.__module__.endswith("jedi_host"), "the child runs jedi_host as __main__"
        assert getattr(importlib.import_module(kind.__module__), kind.__qualname__) is kind


def test_wire_types_and_plain_data_round_trip():
    doc = SymbolDoc("torch.nn.Linear", "class", ("Linear(in_features: int)",), ("in_features",), {"in_features": "x"})
    value = ("ok", [JediHit(doc, is_instance=True), {"a": (1, 2.5, None, True)}, frozenset({"b"}), b"\x00"])
    assert decode(encode(value)) == value


def test_a_class_that_is_not_a_wire_type_is_refused_when_written():
    stream = io.BytesIO()
    with pytest.raises(WireError, match="NotOnTheWire"):
        write_frame(stream, ("ok", [NotOnTheWire(1)]))
    assert stream.getvalue() == b"", "nothing is written, so the stream stays in step"


def test_a_frame_naming_another_class_is_refused_when_read_and_the_next_frame_still_reads():
    stream = io.BytesIO()
    foreign = pickle.dumps(("ok", NotOnTheWire(1)))
    stream.write(len(foreign).to_bytes(4, "big") + foreign)
    write_frame(stream, ("ok", 7))
    stream.seek(0)
    with pytest.raises(WireError, match="not a wire type"):
        read_frame(stream)
    assert read_frame(stream) == ("ok", 7)


def test_a_damaged_frame_is_a_wire_error():
    with pytest.raises(WireError):
        decode(b"\x80\x05not a pickle")


@pytest.fixture(scope="module")
def host():
    process = HostProcess(None)
    yield process
    process.close()


TEXT = "import torch\n\ndef make():\n    return torch.randn(2, 3)\n\n# 中文注释 🔥\ny = make()\ny.view\n"


def test_resolve_at_crosses_the_pipe_as_a_jedi_hit(host):
    hit = host.call("resolve_at", TEXT, None, 7, 3)
    assert isinstance(hit, JediHit) and isinstance(hit.doc, SymbolDoc)
    assert hit.doc.name.endswith(".view") and hit.doc.signatures


def test_every_method_with_a_structured_answer_crosses_the_pipe(host):
    assert isinstance(host.call("describe", "torch.nn.Linear"), SymbolDoc)
    names, kinds = host.call("list_members", "torch.nn", False)
    assert "Linear" in names and isinstance(kinds, dict)
    assert any(name == "view" for name, _, _ in host.call("complete_at", TEXT, None, 7, 2))
    assert any("Tensor" in full for full, _ in host.call("receiver_types", TEXT, None, 7, 1))
    executable, sys_path, problem = host.call("environment_info")
    assert executable and sys_path and problem is None
    for method, args in (("preparse", (TEXT, None)), ("infer_end", ("import torch\ntorch",))):
        assert host.call(method, *args) is None
    with pytest.raises(HostError, match="unknown method"):
        host.call("no_such_method")


def test_the_child_ends_quietly_when_the_server_has_gone(caplog):
    """An editor restarting the server during the warm-up: the child's answer meets a closed pipe."""
    import logging
    import os

    from torchls.jedi_host import JediHost, serve

    requests = io.BytesIO()
    write_frame(requests, ("infer_end", ("import torch\ntorch",)))
    requests.seek(0)
    read_end, write_end = os.pipe()
    os.close(read_end)
    answers = os.fdopen(write_end, "wb")
    with caplog.at_level(logging.DEBUG, logger="torchls.jedi_host"):
        serve(JediHost(), requests, answers)  # returns: no BrokenPipeError escapes
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("has gone" in r.getMessage() for r in caplog.records)
