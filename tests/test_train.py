"""The one training loop: warm-up, clipping, chunked reports, and one divergence policy for every page."""

import math

import pytest
import torch

from core.terms import status
from core.terms.rules import DIVERGED_LOSS_FACTOR
from core.training import loop as train_loop


def _setup(scale=1.0):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    x, y = torch.randn(8, 4), torch.randint(3, (8,))
    return model, (lambda: (x, y)), (lambda out, t: scale * torch.nn.functional.cross_entropy(out, t))


def test_a_healthy_run_reports_every_chunk_and_learns():
    model, batch, loss = _setup()
    steps, chunks, losses = [], [], []
    spec = train_loop.TrainSpec(steps=25, lr=0.1, chunk_steps=10)
    out = train_loop.train(model, batch, loss, spec, lambda s: (steps.append(s.step), losses.append(s.loss)),
                           lambda n, t: chunks.append(n))  # fmt: skip
    assert out.status == status.OK and out.steps == 25 and steps == list(range(1, 26))
    assert chunks == [10, 10, 5] and sum(chunks) == 25  # the last, shorter chunk is reported too
    assert losses[-1] < losses[0] and out.train_s > 0


@pytest.mark.parametrize(
    "scale, why",
    [(float("nan"), "loss became nan"), (float("inf"), "loss became inf"), (1e4, "rose above the bound")],
)
def test_divergence_is_a_status_not_an_exception(scale, why):
    model, batch, loss = _setup(scale)
    seen = []
    spec = train_loop.TrainSpec(steps=5, lr=0.1, max_loss=train_loop.loss_bound(3), chunk_steps=1)
    out = train_loop.train(model, batch, loss, spec, seen.append, lambda n, t: seen.append("chunk"))
    assert out.status == status.DIVERGED and out.steps == 1 and why in out.note and not seen


def test_the_loss_bound_is_the_stated_multiple_of_a_uniform_guess():
    assert train_loop.loss_bound(16) == pytest.approx(DIVERGED_LOSS_FACTOR * math.log(16))


def test_an_infinite_gradient_diverges():
    model, batch, _ = _setup()

    def loss(out, t):  # finite value, infinite gradient: sqrt at 0
        return torch.nn.functional.cross_entropy(out, t) + torch.sqrt(out.sum() * 0)

    out = train_loop.train(model, batch, loss, train_loop.TrainSpec(steps=3, lr=0.1))
    assert out.status == status.DIVERGED and "gradient norm" in out.note


def test_clipping_caps_the_update_and_warm_up_ramps_the_rate():
    model, batch, loss = _setup(scale=50.0)
    before = [p.detach().clone() for p in model.parameters()]
    seen = []
    spec = train_loop.TrainSpec(steps=1, lr=1.0, optimizer="adamw", clip=0.5, warmup_steps=4)
    train_loop.train(model, batch, loss, spec, seen.append)
    assert seen[0].clipped and seen[0].grad_norm > 0.5 and seen[0].lr == 0.25
    assert [train_loop.lr_at(s, 1.0, 4) for s in (1, 2, 4, 5)] == [0.25, 0.5, 1.0, 1.0]
    moved = sum(((p - b) ** 2).sum() for p, b in zip(model.parameters(), before))
    assert moved > 0


def test_past_the_step_count_and_the_rate_every_setting_is_named():
    """Given by position, a field added in the middle once shifted depth's clip into the decay (nothing was clipped):
    the spec takes its settings by name only."""
    with pytest.raises(TypeError):
        train_loop.TrainSpec(10, 0.1, "adam", 0, 1.0)
    assert train_loop.TrainSpec(10, 0.1, clip=1.0).decay_to == 1.0
