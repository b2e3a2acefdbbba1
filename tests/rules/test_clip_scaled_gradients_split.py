"""TL407 where a trainer class splits the step: the scaled backward in one method, the clipping and
``scaler.step`` in another. Reported only where nothing in the file could unscale."""

from __future__ import annotations

from textwrap import dedent

from torchls.core.checker import check_source

TRAINER = """
import torch
import torch.nn as nn

class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.scaler = torch.amp.GradScaler("cuda")

    def training_step(self, batch):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = self.model(batch).mean()
        self.scaler.scale(loss).backward()
        {after_backward}

    def _optimizer_step(self):
        说明 = "裁剪 ✂️"; norm = nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        {between}
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad()
"""


def _lines(after_backward: str = "pass", between: str = "pass") -> list[int]:
    source = dedent(TRAINER).format(after_backward=after_backward, between=between)
    return [f.span.start.line + 1 for f in check_source(source, select=["TL407"]).findings]


def test_clipping_in_another_method_than_the_scaled_backward_is_reported():
    assert _lines() == [17]


def test_unscaling_after_the_backward_in_its_own_method_is_silent():
    assert _lines(after_backward="self.scaler.unscale_(self.optimizer)") == []


def test_a_scaler_handed_to_a_hook_is_silent():
    assert _lines(between="self.callbacks.on_before_step(self.scaler)") == []


def test_clipping_in_a_method_that_does_not_step_the_scaler_is_silent():
    source = dedent(TRAINER).format(after_backward="pass", between="pass")
    source = source.replace("        self.scaler.step(self.optimizer)\n", "")
    assert [f.span.start.line for f in check_source(source, select=["TL407"]).findings] == []


def test_without_a_scaled_backward_the_scaler_step_alone_is_silent():
    source = dedent(TRAINER).format(after_backward="pass", between="pass")
    source = source.replace("self.scaler.scale(loss).backward()", "loss.backward()")
    assert check_source(source, select=["TL407"]).findings == []
