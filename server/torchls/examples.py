"""Which knowledge-base examples can run at a place in a document, and on which device: the engine behind the
"运行示例" code action (no LSP types here; :mod:`torchls.runner` runs them).

Only examples of the knowledge base are ever offered, each as its own action, and only on a torch symbol that
has some. The action names the device it will use: the configured one, or cpu when the configured one is known
to be missing (with the reason in the title). Examples that need cuda or mps are offered only where the
interpreter's torch is known to have it.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchls.kb.schema import Entry
from torchls.runner import DeviceUnavailable, TorchInfo, choose_device


@dataclass(frozen=True, slots=True)
class ExampleOffer:
    name: str  # the entry
    index: int  # which of its examples
    device: str  # what the action asks the runner for
    label: str  # the action's title, in Chinese


def _device_label(requested: str, info: TorchInfo | None) -> tuple[str, str, str]:
    """``(device to request, how the title names it, why cpu is used instead)``.

    The title names the setting, never what a probe of the interpreter found so far: the same setting gives the
    same title in every editor, whether the probe had finished when the editor asked or not. Only a device the
    probe found missing changes it (to cpu, saying why)."""
    if info is None:
        return requested, "自动选择的设备" if requested == "auto" else requested, ""
    try:
        chosen = choose_device(requested, info)
    except DeviceUnavailable:
        return "cpu", "cpu", f"（{requested} 不可用）"
    if requested == "auto":
        return chosen, "自动选择的设备", ""
    return chosen, requested, ""


def offers(entry: Entry, requested: str, info: TorchInfo | None) -> list[ExampleOffer]:
    """One offer per example that can run here (``info``: the interpreter's torch, None until probed)."""
    device, shown, note = _device_label(requested, info)
    runnable = []
    for index, example in enumerate(entry.examples):
        if example.device == "cuda" and not (info and info.cuda_devices):
            continue
        if example.device == "mps" and not (info and info.mps):
            continue
        wanted = device if example.device == "any" else example.device
        runnable.append((index, example, wanted, shown if example.device == "any" else example.device))
    result = []
    for index, example, wanted, where in runnable:
        spaced = f" {where} " if where.isascii() else where  # 在 cpu 上 / 在自动选择的设备上
        label = f"在{spaced}上运行示例：{entry.name}{note}"
        if len(runnable) > 1:
            label += f"（{example.title}）"
        result.append(ExampleOffer(entry.name, index, wanted, label))
    return result
