from __future__ import annotations

import pytest

from torchls.kb.canonical import candidates, split_module


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
    assert public in candidates(jedi_name)


def test_public_namespace_functions_are_not_shortened():
    # F.relu must never be confused with torch.relu.
    assert candidates("torch.nn.functional.relu") == ["torch.nn.functional.relu"]


def test_the_name_itself_comes_first():
    assert candidates("torch.nn.modules.loss.CrossEntropyLoss")[0] == "torch.nn.modules.loss.CrossEntropyLoss"


def test_a_module_with_entries_of_its_own_still_leads_up_to_the_exported_name():
    # torch.serialization has entries (safe_globals); torch.save is defined there and exported as torch.save.
    options = candidates("torch.serialization.save", {"torch.serialization"})
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
    assert public in candidates(jedi_name)


@pytest.mark.parametrize("name", ["torch.device.type", "torch.device.index", "torch.dtype.is_floating_point"])
def test_members_of_lowercase_classes_stay_members(name):
    options = candidates(name)
    assert options[0] == name
    assert "torch.type" not in options and "torch.index" not in options
    assert split_module(name) == (["torch"], name.split(".")[1:])


def test_the_lowercase_classes_themselves_are_not_split():
    assert split_module("torch.device") == (["torch"], ["device"])
