"""One training loop for every page that trains (depth, long-range, the shipped checkpoints).

Batches, optimizer, learning-rate warm-up, gradient clipping and one divergence policy: a step whose loss is NaN,
infinite or above `max_loss` (by default DIVERGED_LOSS_FACTOR × a uniform guess's loss), or whose gradient norm is
not finite, ends the run with status 'diverged'. Work is reported in chunks (every `chunk_steps` steps, or every
`chunk_seconds`), so a page can show progress and stop between chunks (minGPT's Trainer callbacks).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import torch

from core.harness import cancel
from core.terms import status
from core.terms.rules import DIVERGED_LOSS_FACTOR


@dataclasses.dataclass(frozen=True)
class TrainSpec:
    steps: int
    lr: float
    _: dataclasses.KW_ONLY  # the rest by name: placed by position, a new field once shifted depth's clip into decay_to
    optimizer: str = "adam"  # 'adam' or 'adamw' (PyTorch's defaults otherwise)
    warmup_steps: int = 0  # linear warm-up from lr/warmup to lr over these steps; 0 = none
    clip: float = 0.0  # clip the global gradient norm to this; 0 = no clipping
    max_loss: float = math.inf  # a loss above this counts as divergence (see `loss_bound`)
    chunk_steps: int = 10  # report at least every this many steps …
    chunk_seconds: float | None = None  # … or this often, whichever comes first
    decay_to: float = 1.0  # after the warm-up, a cosine from lr down to lr × decay_to at the last step; 1 = constant


@dataclasses.dataclass(frozen=True)
class Step:
    """One step as the callbacks see it: after backward, before clipping and the update."""

    step: int
    loss: float
    grad_norm: float
    lr: float
    clipped: bool


@dataclasses.dataclass(frozen=True)
class Outcome:
    status: str  # status.OK or status.DIVERGED
    steps: int  # steps taken (the diverging one included)
    train_s: float  # seconds spent training, callbacks excluded
    note: str = ""
    loss: float = math.nan  # the last loss seen
    grad_norm: float = math.nan


def loss_bound(vocab_size: int) -> float:
    """The divergence bound for a cross-entropy over `vocab_size` classes: DIVERGED_LOSS_FACTOR × log V."""
    return DIVERGED_LOSS_FACTOR * math.log(vocab_size)


def lr_at(step: int, lr: float, warmup_steps: int, steps: int = 0, decay_to: float = 1.0) -> float:
    """Linear warm-up from lr/warmup to lr over the first `warmup_steps` steps (1-based), then constant, or with
    `decay_to` < 1 a half cosine from lr at the warm-up's end to lr × decay_to at step `steps`."""
    if warmup_steps > 0 and step <= warmup_steps:
        return lr * step / warmup_steps
    if decay_to >= 1.0 or steps <= warmup_steps:
        return lr
    done = min(1.0, (step - warmup_steps) / (steps - warmup_steps))
    return lr * (decay_to + (1 - decay_to) * 0.5 * (1 + math.cos(math.pi * done)))


def train(
    model: torch.nn.Module,
    batch: Callable[[], tuple[torch.Tensor, torch.Tensor]],
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    spec: TrainSpec,
    on_step: Callable[[Step], None] | None = None,
    on_chunk: Callable[[int, float], None] | None = None,
) -> Outcome:
    """Train `model` for spec.steps steps on `batch()`; `on_step(Step)` after every backward, `on_chunk(steps_done,
    train_s)` after every chunk (True ends the run). A diverging run returns at once, its Outcome says where."""
    params = list(model.parameters())
    optimizer = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[spec.optimizer]
    opt = optimizer(params, lr=lr_at(1, spec.lr, spec.warmup_steps, spec.steps, spec.decay_to))
    train_s, last_chunk, chunk_start = 0.0, 0, time.perf_counter()
    for step in range(1, spec.steps + 1):
        cancel.check()  # a page's Stop ends the run between steps, not only between chunks
        t0 = time.perf_counter()
        lr_now = lr_at(step, spec.lr, spec.warmup_steps, spec.steps, spec.decay_to)
        for group in opt.param_groups:
            group["lr"] = lr_now
        x, y = batch()
        opt.zero_grad(set_to_none=True)
        loss_t = loss_fn(model(x), y)
        loss = float(loss_t.detach())
        grad_norm = math.nan
        loss_ok = math.isfinite(loss) and loss <= spec.max_loss
        if loss_ok:
            loss_t.backward()
            grads = [p.grad for p in params if p.grad is not None]
            norm_t = torch.nn.utils.get_total_norm(grads) if grads else torch.tensor(0.0)
            grad_norm = float(norm_t)
        if not loss_ok or not math.isfinite(grad_norm):
            train_s += time.perf_counter() - t0
            if loss_ok:
                what = f"gradient norm became {grad_norm}"
            elif math.isfinite(loss):
                what = f"loss {loss:.3g} rose above the bound {spec.max_loss:.3g}"
            else:
                what = f"loss became {loss}"
            return Outcome(status.DIVERGED, step, train_s, f"{what} at step {step}", loss, grad_norm)
        clipped = spec.clip > 0 and grad_norm > spec.clip
        train_s += time.perf_counter() - t0
        if on_step is not None:
            on_step(Step(step, loss, grad_norm, lr_now, clipped))
        t0 = time.perf_counter()
        if spec.clip > 0:  # as clip_grad_norm_ does: scale by min(1, clip / norm), computed once
            torch.nn.utils.clip_grads_with_norm_(params, spec.clip, norm_t)
        opt.step()
        train_s += time.perf_counter() - t0
        now = time.perf_counter()
        late = spec.chunk_seconds is not None and now - chunk_start > spec.chunk_seconds
        if on_chunk is not None and (step % spec.chunk_steps == 0 or late or step == spec.steps):
            if on_chunk(step - last_chunk, train_s) is True:  # the caller has seen enough (e.g. the task is solved)
                return Outcome(status.OK, step, train_s, "stopped early: done", loss, grad_norm)
            last_chunk, chunk_start = step, time.perf_counter()
    return Outcome(status.OK, spec.steps, train_s, "", loss, grad_norm)
