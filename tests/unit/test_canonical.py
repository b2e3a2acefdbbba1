from __future__ import annotations

import pytest

from torchls.kb import identity
from torchls.kb.canonical import candidates, split_module

# The installed torch's names per object (built once by a subprocess, then read from the cache).
TABLE = identity.load()


@pytest.mark.parametrize(
    ("jedi_name", "public"),
    [
        ("torch.serialization.save", "torch.save"),
        ("torch._C._distributed_c10d.ReduceOp.SUM", "torch.distributed.ReduceOp.SUM"),
        ("torch._C.TensorBase.view", "torch.Tensor.view"),
        ("torch._tensor.Tensor.backward", "torch.Tensor.backward"),
        ("torch._C._VariableFunctions.cat", "torch.cat"),
        ("torch.nn.modules.loss.CrossEntropyLoss", "torch.nn.CrossEntropyLoss"),
        ("torch.optim.adamw.AdamW", "torch.optim.AdamW"),
        ("torch.autograd.grad_mode.no_grad", "torch.no_grad"),
        ("torch.nn.modules.module.Module.parameters", "torch.nn.Module.parameters"),
        ("torch.optim.adamw.AdamW.step", "torch.optim.Optimizer.step"),
        ("torch.serialization.save", "torch.save"),
        ("torch.utils.data.dataloader.DataLoader", "torch.utils.data.DataLoader"),
        ("torch._C.float32", "torch.float32"),
        ("torch.nn.parameter.Parameter", "torch.nn.Parameter"),
    ],
)
def test_candidates_reach_the_public_name(jedi_name, public):
    assert public in candidates(jedi_name, identity=TABLE)


def test_public_namespace_functions_are_not_shortened():
    # F.relu must never be confused with torch.relu.
    assert candidates("torch.nn.functional.relu") == ["torch.nn.functional.relu"]


def test_the_name_itself_comes_first():
    assert candidates("torch.nn.modules.loss.CrossEntropyLoss")[0] == "torch.nn.modules.loss.CrossEntropyLoss"


def test_a_module_with_entries_of_its_own_still_leads_up_to_the_exported_name():
    # torch.serialization has entries (safe_globals); torch.save is defined there and exported as torch.save.
    options = candidates("torch.serialization.save", {"torch.serialization"}, TABLE)
    assert options[0] == "torch.serialization.save" and "torch.save" in options


@pytest.mark.parametrize(
    ("jedi_name", "public"),
    [
        ("torch.FloatTensor.shape", "torch.Tensor.shape"),
        ("torch.cuda.FloatTensor.view", "torch.Tensor.view"),
        ("torch.LongTensor.to", "torch.Tensor.to"),
        ("torch.cuda.amp.GradScaler.scale", "torch.amp.GradScaler.scale"),
        ("torch.cuda.amp.grad_scaler.GradScaler.step", "torch.amp.GradScaler.step"),
    ],
)
def test_legacy_classes_reach_the_members_they_inherit(jedi_name, public):
    assert public in candidates(jedi_name, identity=TABLE)


@pytest.mark.parametrize("name", ["torch.device.type", "torch.device.index", "torch.dtype.is_floating_point"])
def test_members_of_lowercase_classes_stay_members(name):
    options = candidates(name)
    assert options[0] == name
    assert "torch.type" not in options and "torch.index" not in options
    assert split_module(name) == (["torch"], name.split(".")[1:])


def test_the_lowercase_classes_themselves_are_not_split():
    assert split_module("torch.device") == (["torch"], ["device"])


@pytest.mark.parametrize(
    ("jedi_name", "sibling"),
    [
        # The autograd-aware collectives: other signatures, and they pass gradients; not the c10d functions.
        ("torch.distributed.nn.functional.all_gather", "torch.distributed.all_gather"),
        ("torch.distributed.nn.functional.all_reduce", "torch.distributed.all_reduce"),
        ("torch.distributed.nn.all_gather", "torch.distributed.all_gather"),
        # ``torch.random.Generator`` is ``collections.abc.Generator``, not ``torch.Generator``.
        ("torch.random.Generator", "torch.Generator"),
        # A Python wrapper over the C function: another object, another signature.
        ("torch._C._nn.l1_loss", "torch.nn.functional.l1_loss"),
    ],
)
def test_a_name_never_climbs_to_another_object_with_the_same_last_part(jedi_name, sibling):
    assert sibling not in candidates(jedi_name, identity=TABLE)


@pytest.mark.parametrize(
    ("jedi_name", "public"),
    [
        ("torch.nn.modules.linear.Linear", "torch.nn.Linear"),
        ("torch.nn.modules.linear.Linear.forward", "torch.nn.Linear.forward"),
        ("torch.functional.norm", "torch.norm"),
        ("torch.serialization.load", "torch.load"),
    ],
)
def test_a_true_re_export_climbs(jedi_name, public):
    assert TABLE is not None and TABLE.same_object(jedi_name, public)
    assert public in candidates(jedi_name, identity=TABLE)


def test_without_the_table_nothing_climbs():
    # Before the table is built (or where it cannot be), only rules and exact names: never a same-name guess.
    assert candidates("torch.distributed.nn.functional.all_gather") == ["torch.distributed.nn.functional.all_gather"]
    assert candidates("torch.nn.modules.linear.Linear") == ["torch.nn.modules.linear.Linear"]
    assert "torch.cat" in candidates("torch._C._VariableFunctions.cat")
