"""Checkpointed BPTT on the serial page's axes: memory bought back with a second forward pass.

Each recurrent model trains the serial experiment's step twice per length: `plain`, and `checkpointed`
(core.models.checkpointed: segments of ⌈√n⌉ tokens, only each segment's entering state kept, its forward rerun in
backward). Both forms are timed interleaved, freed memory reused as a GPU's allocator does (core.harness.heap).
Per point: step time, bytes kept for backward split into the recurrent layers' share and the rest, the formula
for the kept states, and the dependent steps.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import torch

from core.config import Experiment, spec
from core.experiments.common import (
    TINY_STEP,
    Rows,
    copied,
    fitting,
    ok_fields,
    paired,
    step_bytes,
    step_model,
    tagged,
    time_points,
)
from core.findings.checkpoint import takeaways
from core.harness import bench, guard
from core.harness.device import DEVICES, environment, resolve_device
from core.models import registry
from core.models.checkpointed import SegmentCheckpointed, kept_state_bytes, n_segments, segment_for
from core.store.results import tidy
from core.training.step import training_step

PLAIN, CHECKPOINTED = "plain", "checkpointed"
FORMS = (PLAIN, CHECKPOINTED)
COLUMNS = ("model", "bptt", "seq_len", "segment", "segments", "n_layers", "d_model", "batch_size", "params",
           "train_ms", "train_iqr_ms", "noisy", "fresh_bytes", "time_ratio", "time_ratio_q25", "time_ratio_q75", "saved_bytes",
           "layer_saved_bytes", "head_saved_bytes", "predicted_layer_bytes", "seq_steps", "status", "note",
           "seed")  # fmt: skip
TEXT = ("model", "bptt")  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ("noisy",)


@dataclasses.dataclass(frozen=True)
class CheckpointConfig:
    models: tuple[str, ...] = tagged("checkpoint", "checkpoint:quick", help="recurrent models with fused layers")
    seq_lens: tuple[int, ...] = spec((256, 1024, 4096), lo=2, hi=65535, help="sequence lengths to sweep")
    segment: int = spec(0, lo=0, hi=65535, help="tokens per checkpointed segment (0 = ⌈√n⌉ at each length)")
    d_model: int = spec(128, lo=8, hi=4096, help="width of every model")
    n_layers: int = spec(1, lo=1, hi=32, help="stacked recurrent layers")
    batch_size: int = spec(8, lo=1, hi=1024, help="sequences per training step")
    vocab_size: int = spec(64, lo=2, hi=65536, help="small, so the output layer does not dominate")
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")
    seed: int = spec(0, lo=0, hi=2**31 - 1)
    warmup: int = spec(1, lo=0, hi=50, help="untimed steps first")
    repeats: int = spec(5, lo=1, hi=200, help="timed rounds; medians and paired quartiles are reported")
    max_point_s: float = spec(3.0, lo=0.05, hi=600.0, help="stop adding rounds at a length after this much timed work")


PRESETS = {
    "quick": {"seq_lens": (256, 1024, 4096), "warmup": 1, "repeats": 3, "max_point_s": 1.0},
    "tiny": TINY_STEP,
    # scripts/gpu_reference.sh's preset, for its limit of 25 s (sizing: docs/GPU.md)
    "gpu": {"seq_lens": (256, 1024, 4096, 16384), "warmup": 1, "repeats": 5, "max_point_s": 3.0},
    "full": {"seq_lens": (256, 1024, 4096, 16384), "warmup": 1, "repeats": 7, "max_point_s": 8.0},
}


def _prepare(name: str, form: str, cfg: CheckpointConfig, T: int, device: torch.device):
    """(model, its features function, one training step, the loss alone, its inputs); seeded, so both forms match."""
    torch.manual_seed(cfg.seed)
    lm = step_model(name, cfg).to(device)
    model = SegmentCheckpointed(lm, cfg.segment) if form == CHECKPOINTED else lm
    features = model.features if form == CHECKPOINTED else (lambda tokens: lm.body(lm.embed(tokens)))
    return (model, features, *training_step(model, cfg.vocab_size, cfg.batch_size, T, cfg.seed, device))


def measure_length(cfg: CheckpointConfig, T: int, names: list[str], device, after_round=None) -> dict:
    """Both forms of every model at one length, timed interleaved; then the saved bytes of each, one by one."""
    keys = [(n, f) for n in names for f in FORMS]
    prepared, fields = guard.prepare_each(keys, lambda key: _prepare(*key, cfg, T, device), device)
    steps = {key: p[2] for key, p in prepared.items()}
    timings, failed = time_points(steps, cfg, device, after_round)
    fields.update(failed)
    for key, timing in timings.items():
        model, features, _, loss_fn, (tokens, targets) = prepared[key]
        exclude = (*model.parameters(), tokens, targets)
        whole = bench.saved_activation_bytes(loss_fn, exclude=exclude)
        # the recurrent layers' share: their features, summed (a sum keeps nothing)
        layers = bench.saved_activation_bytes(lambda f=features, x=tokens: f(x).sum(), exclude=exclude)
        more = {"saved_bytes": whole, "layer_saved_bytes": layers, "head_saved_bytes": whole - layers}
        fields[key] = ok_fields(model, timing, fresh_bytes=timing.fresh_bytes, **more)
    prepared.clear()
    guard.free(device)
    for name in names:  # checkpointed ÷ plain, round by round
        a, b = fields.get((name, CHECKPOINTED), {}), fields.get((name, PLAIN), {})
        if "times_ms" in a and "times_ms" in b:
            q25, q50, q75 = paired(a["times_ms"], b["times_ms"])
            a.update(time_ratio=q50, time_ratio_q25=q25, time_ratio_q75=q75)
    for f in fields.values():
        f.pop("times_ms", None)
    return fields


def predicted_bytes(name: str, cfg: CheckpointConfig, T: int) -> float:
    """The plain step's generous peak estimate (the serial experiment's): checkpointing only lowers it."""
    return step_bytes(name, cfg, T)


def run(cfg: CheckpointConfig, on_progress=None) -> pd.DataFrame:
    """One row per (length, model, form), shortest lengths first."""
    device = resolve_device(cfg.device)
    env = environment(device)
    lengths = sorted(cfg.seq_lens)
    out = Rows(len(lengths) * len(cfg.models) * len(FORMS), on_progress)
    for T in lengths:
        runnable, refused = fitting(cfg.models, lambda name, T=T: predicted_bytes(name, cfg, T), device)
        fields = {(name, f): refusal for name, refusal in refused.items() for f in FORMS}
        after_round = lambda r, T=T: out.say(f"n={T}: round {r} of {cfg.repeats}")
        if runnable:
            fields.update(measure_length(cfg, T, runnable, device, after_round))
        for name in cfg.models:
            kind = registry.get(name)
            states = 2 if kind.forget_gate else 1  # (h, c) for an LSTM
            for form in FORMS:
                ck = form == CHECKPOINTED
                row = {
                    **env,
                    "model": name,
                    "bptt": form,
                    "seq_len": T,
                    "note": "",
                    **copied(cfg, "n_layers", "d_model", "batch_size", "seed"),
                    "segment": segment_for(T, cfg.segment) if ck else None,
                    "segments": n_segments(T, cfg.segment) if ck else None,
                    "predicted_layer_bytes": kept_state_bytes(
                        T, cfg.segment, cfg.batch_size, cfg.d_model, states * cfg.n_layers
                    )
                    if ck
                    else None,
                    "seq_steps": kind.seq_steps(T, cfg.n_layers),
                    **fields[(name, form)],
                }
                out.add(row, f"{name} ({form}) n={T}")
    return tidy(out.rows, COLUMNS)


EXPERIMENT = Experiment(
    "checkpoint",
    CheckpointConfig,
    run,
    PRESETS,
    "checkpointed BPTT (segments of ~√n tokens) vs the plain training step: saved bytes and step time",
    takeaways,
    point=("model", "seq_len"),
)
