"""The jedi process: started on the first request, started again after it dies, ended with the resolver."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from torchls.jedi_host import HostError, HostProcess
from torchls.resolve import Resolver


@pytest.fixture
def resolver():
    resolver = Resolver()
    yield resolver
    resolver.close()


def test_a_dead_jedi_process_is_started_again_on_the_next_request(resolver):
    assert "Linear" in resolver.submit(resolver.members, "torch.nn", False).result(120)
    first = resolver._host._process
    first.kill()
    first.wait(10)
    # The member lists already read stay with the resolver; new work goes to a new process.
    assert "Linear" in resolver.cached_members("torch.nn", False)
    doc = resolver.submit(resolver.describe, "torch.nn.Conv2d").result(120)
    assert doc is not None and "in_channels" in doc.param_names
    assert resolver._host._process is not first and resolver._host._process.poll() is None


def test_a_request_the_process_cannot_answer_is_an_error_not_a_hang():
    host = HostProcess(None)
    try:
        with pytest.raises(HostError, match="unknown method"):
            host.call("no_such_method")
        assert host.call("infer_end", "import torch\ntorch") is None  # the process goes on answering
    finally:
        host.close()


def test_closing_the_resolver_ends_the_jedi_process():
    resolver = Resolver()
    resolver.submit(resolver.preparse, "import torch\n", None).result(120)
    process = resolver._host._process
    resolver.close()
    deadline = time.monotonic() + 10
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is not None
    with pytest.raises(HostError):
        resolver._host.call("preparse", "x = 1\n", None)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("m.training", "torch.nn.modules.module.Module.training"),
        ("m.weight", "torch.nn.modules.linear.Linear.weight"),
        ("t.requires_grad", "torch._tensor.Tensor.requires_grad"),
        ("t.data", "torch._tensor.Tensor.data"),
    ],
)
def test_an_attribute_a_method_assigns_is_named_as_a_member_of_its_class(line, expected):
    # jedi names ``self.training = mode`` in ``Module.train`` ``Module.train.training``; a card needs the member.
    from torchls.jedi_host import JediHost

    text = f"import torch\nm = torch.nn.Linear(2, 3)\nt = torch.randn(2)\n{line}\n"
    hit = JediHost().resolve_at(text, None, 3, len(line))
    assert hit is not None and hit.doc.name == expected


def _descendants(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    found = [int(child) for child in children.read_text().split()] if children.exists() else []
    return found + [grand for child in found for grand in _descendants(child)]


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc (Linux) to see what is loaded")
def test_jedi_reads_torch_from_its_stubs_without_importing_torch(resolver):
    """jedi's answers on torch's compiled modules come from their stubs; no process of the jedi host imports torch
    (230 MB held for the session, with torch's shared libraries mapped)."""
    cat = resolver.submit(resolver.describe, "torch.cat").result(120)
    assert cat is not None and cat.signatures and "tensors" in cat.param_names and cat.docstring
    view = resolver.submit(resolver.describe, "torch.Tensor.view").result(120)
    assert view is not None and len(view.signatures) >= 2  # the overloads, from the stub
    assert "view" in resolver.submit(resolver.members, "torch.Tensor", True).result(120)
    host = resolver._host._process.pid
    processes = [host, *_descendants(host)]
    assert len(processes) >= 2, "jedi's helper process for the environment should be running"
    for pid in processes:
        assert "libtorch" not in Path(f"/proc/{pid}/maps").read_text(), f"process {pid} imported torch"
