"""What the experiments share: a config field of models chosen by tag (`tagged`), a config's settings as row fields
(`copied`), a run's rows reported as they come (`Rows`, and `ChunkRows` a chunk of training at a time), the memory
guard's refusals before a length is measured (`fitting`), points timed interleaved with their failures as rows
(`time_points`, `ok_fields`), the quartiles of paired ratios (`paired`), and the serial page's training step of a
registry model (`prepared_step`, `step_bytes`, `TINY_STEP`), which four experiments time."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from core.config import Progress, spec
from core.harness import bench, guard
from core.harness.bench import timed
from core.models import registry
from core.models.layers import n_params
from core.terms import status
from core.training.step import training_step

# the tiny preset of every experiment that times the serial step (serial, checkpoint, answers_speed)
TINY_STEP = {"seq_lens": (8, 16), "d_model": 16, "batch_size": 2, "warmup": 0, "repeats": 1, "max_point_s": 0.1}


@dataclasses.dataclass(frozen=True)
class MixerSizes:
    """The sizes page 5's mixers take beyond the width; the configs that build them by name inherit these fields."""

    window: int = spec(32, lo=1, hi=4096, help="sliding window: tokens each query sees")
    kernel: int = spec(2, lo=2, hi=8, help="dilated convolution: kernel size (dilations kernel^i)")
    levels: int = spec(6, lo=1, hi=16, help="dilated convolution: layers (receptive field kernel^levels)")
    d_state: int = spec(16, lo=1, hi=64, help="selective SSM: state numbers per channel")

    def check_sizes(self) -> None:
        if self.kernel**self.levels > 2**16:
            raise ValueError(f"levels: a receptive field of {self.kernel}^{self.levels} tokens is over 65,536")


def tagged(tag: str, default: str | None = None, **more):
    """A config field choosing models by tag: any model tagged `tag`, by default those tagged `default` (or every one
    tagged `tag`), both read whenever a config is made (a model registered later is among them)."""
    return spec(registry.tagged(default or tag), choices=registry.tagged(tag), **more)


def copied(cfg, *names: str) -> dict:
    """The config's fields `names` as row fields: a row repeats the settings it was measured with."""
    return {name: getattr(cfg, name) for name in names}


class Rows:
    """A run's rows, each batch reported to `on_progress` as it is added: Progress(done, total, message, new rows).
    `done` counts the rows unless `advance` says how far a batch moves the run (a model, a chunk of steps)."""

    def __init__(self, total: int, on_progress=None):
        self.rows, self.done, self.total, self.on_progress = [], 0, total, on_progress

    def add(self, new: dict | list[dict], message: str, advance: int | None = None) -> None:
        new = [new] if isinstance(new, dict) else list(new)
        self.rows.extend(new)
        self.done += len(new) if advance is None else advance
        self.say(message, new)

    def say(self, message: str, new=()) -> None:
        """Progress with no new rows (between rounds of timing: a page's chance to move its bar and to Stop)."""
        if self.on_progress is not None:
            self.on_progress(Progress(self.done, self.total, message, tuple(new)))


class ChunkRows(Rows):
    """Rows that arrive a chunk of training at a time, each reported with describe(row) as its message against a
    total of chunks known at the start: a run that ends early counts its remaining chunks done."""

    def __init__(self, total: int, on_progress, describe):
        super().__init__(total, on_progress)
        self.describe = describe

    def __call__(self, row: dict, skipped_chunks: int = 0) -> None:
        self.add(row, self.describe(row), advance=1 + skipped_chunks)


def step_model(name: str, cfg) -> torch.nn.Module:
    """Model `name` at the config's vocab_size, d_model and n_layers: the serial step's model."""
    return registry.get(name).build(cfg.vocab_size, cfg.d_model, cfg.n_layers)


def prepared_step(name: str, cfg, seq_len: int, device: torch.device):
    """(model, one training step, the loss alone, its inputs) of the serial step for model `name` at one length, at
    the config's sizes (vocab_size, d_model, n_layers, batch_size); seeded by cfg.seed."""
    torch.manual_seed(cfg.seed)
    model = step_model(name, cfg).to(device)
    return (model, *training_step(model, cfg.vocab_size, cfg.batch_size, seq_len, cfg.seed, device))


def step_bytes(name: str, cfg, seq_len: int) -> float:
    """A generous estimate of the serial step's peak memory, for the guard: activations, logits, weights, SGD."""
    B, T, d, L, V = cfg.batch_size, seq_len, cfg.d_model, cfg.n_layers, cfg.vocab_size
    per_token_layer = registry.get(name).activation_floats * d  # SDPA keeps no T×T matrix
    activations = B * T * (L * per_token_layer + 4 * V + 2 * d) * 4
    weights = 4 * (L * 12 * d * d + 2 * V * d) * 4
    return 2.0 * activations + weights


def fitting(keys, predicted, device) -> tuple[list, dict]:
    """(the keys whose `predicted(key)` bytes fit the guard's budget, {key: the guard's refusal row} for the rest)."""
    runnable, refused = [], {}
    for key in keys:
        need = predicted(key)
        if guard.fits(need, device):
            runnable.append(key)
        else:
            refused[key] = guard.guarded(dict, need, device)  # the guard's refusal row
    return runnable, refused


def time_points(steps: dict, cfg, device, after_round=None, **options) -> tuple[dict, dict]:
    """({key: Timing}, {key: oom fields}) of `steps` timed interleaved with the config's warm-up, repeats and
    per-point limit (`options` override or add to them); a step that runs out of memory is dropped, freed, a row."""
    options = {"warmup": cfg.warmup, "repeats": cfg.repeats, "max_seconds": cfg.max_point_s, **options}
    timings, errors = bench.time_interleaved(
        steps, device=device, is_fatal=guard.is_oom, after_round=after_round, **options
    )
    return timings, guard.failed_fields(errors, device)


def ok_fields(model, timing: bench.Timing, **more) -> dict:
    """A timed point's row fields: status ok, the model's parameters, its timing, `more`, and the times of its repeats
    (`times_ms`, for the paired ratios: dropped once they are taken)."""
    return {"status": status.OK, "params": n_params(model), **timed(timing), **more, "times_ms": timing.times_ms}


def quartiles(values) -> tuple[float, float, float]:
    """(q25, median, q75) of `values`; NaN where there are none."""
    return tuple(float(x) for x in np.quantile(values, [0.25, 0.5, 0.75])) if len(values) else (math.nan,) * 3


def paired(num, den) -> tuple[float, float, float]:
    """(q25, median, q75) of num ÷ den over the rounds both ran in, round by round (they ran side by side)."""
    return quartiles([a / b for a, b in zip(num, den) if b > 0])
