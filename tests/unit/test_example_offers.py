"""The run-example action's title names the device setting, not how far the probe of the interpreter has got: the
same setting reads the same in every editor (VS Code asks for code actions again and again and saw the probe's
answer; Neovim asked once, before it)."""

from __future__ import annotations

import pytest

from torchls.examples import offers
from torchls.kb.base import shipped_folder
from torchls.kb.loader import load_file
from torchls.runner import TorchInfo

CPU_ONLY = TorchInfo("/usr/bin/python3", "3.11.7", "2.13.0", None, (), False)
ONE_GPU = TorchInfo("/usr/bin/python3", "3.11.7", "2.13.0", "13.0", ("NVIDIA H100",), False)


@pytest.fixture(scope="module")
def entry():
    folder = shipped_folder()
    entry, errors = load_file(folder / "torch" / "nn" / "CrossEntropyLoss.yaml", folder)
    assert entry is not None and not errors
    return entry


@pytest.mark.parametrize(
    ("setting", "info", "shown"),
    [
        ("auto", CPU_ONLY, "自动选择的设备"),
        ("auto", ONE_GPU, "自动选择的设备"),
        ("cpu", CPU_ONLY, " cpu "),
        ("cuda", ONE_GPU, " cuda "),
    ],
)
def test_the_title_is_the_same_before_and_after_the_probe(entry, setting, info, shown):
    before = [offer.label for offer in offers(entry, setting, None)]
    after = [offer.label for offer in offers(entry, setting, info)]
    assert before == after
    assert all(label.startswith(f"在{shown}上运行示例：torch.nn.CrossEntropyLoss") for label in after)


def test_after_the_probe_the_action_asks_for_the_device_it_found(entry):
    assert {offer.device for offer in offers(entry, "auto", ONE_GPU)} == {"cuda"}
    assert {offer.device for offer in offers(entry, "auto", None)} == {"auto"}


def test_a_device_the_probe_found_missing_runs_on_cpu_and_says_why(entry):
    labels = [offer.label for offer in offers(entry, "cuda", CPU_ONLY)]
    assert labels and all(label.startswith("在 cpu 上运行示例") and "（cuda 不可用）" in label for label in labels)
    assert {offer.device for offer in offers(entry, "cuda", CPU_ONLY)} == {"cpu"}
