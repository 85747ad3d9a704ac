"""Bottleneck 1, serial computation: one training step of recurrent models vs a Transformer, across lengths.

h_t = f(h_{t-1}, x_t) makes a recurrent layer take seq_len dependent steps; a Transformer layer takes one.
Each point times forward + loss + backward + optimizer step (median, IQR), counts the bytes saved for backward
(BPTT memory), the analytic FLOPs, and the dependent steps on the critical path.
"""

from __future__ import annotations

import dataclasses
import math

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
    prepared_step,
    step_bytes,
    tagged,
    time_points,
)
from core.findings.serial import takeaways
from core.harness import bench, guard
from core.harness import flops as fl
from core.harness.device import DEVICES, environment, resolve_device
from core.models import registry
from core.models.registry import RECURRENT
from core.store.results import tidy

COLUMNS = ("model", "n_layers", "d_model", "batch_size", "seq_len", "params", "train_ms", "train_iqr_ms",
           "noisy", "ratio_to_recurrent", "ratio_q25", "ratio_q75", "ratio_base", "tokens_per_s",
           "saved_bytes", "peak_bytes", "predicted_bytes", "seq_steps", "flops", "flop_convention",
           "achieved_flops_per_s", "peak_flops_per_s", "peak_before_flops_per_s", "peak_after_flops_per_s",
           "utilization", "above_ceiling", "step_latency_s", "status", "note", "seed")  # fmt: skip
TEXT = ("model", "ratio_base", "flop_convention")  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ("noisy", "above_ceiling")


@dataclasses.dataclass(frozen=True)
class SerialConfig:
    models: tuple[str, ...] = tagged("serial", help="which models to compare (every model tagged serial)")
    d_model: int = spec(128, lo=8, hi=4096, help="width of every model (hidden size, embedding size)")
    n_layers: int = spec(1, lo=1, hi=32, help="stacked layers in every model")
    batch_size: int = spec(8, lo=1, hi=1024, help="sequences per training step")
    seq_lens: tuple[int, ...] = spec((64, 256, 1024), lo=2, hi=65535, help="sequence lengths to sweep")
    vocab_size: int = spec(64, lo=2, hi=65536, help="small, so the output layer does not dominate")
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")
    seed: int = spec(0, lo=0, hi=2**31 - 1)
    warmup: int = spec(1, lo=0, hi=50, help="untimed steps first (the first oneDNN step costs ~2x)")
    repeats: int = spec(5, lo=1, hi=200, help="timed steps; the median and IQR are reported")
    max_point_s: float = spec(3.0, lo=0.05, hi=600.0, help="stop repeating a point after this much timed work")


# each timed sample lasts at least this long (a short step run back to back and averaged, as timeit does),
# so one preemption cannot make a point noisy (docs/BENCHMARKS.md)
MIN_SAMPLE_S = 0.05

PRESETS = {
    "quick": {"seq_lens": (64, 256, 1024), "warmup": 1, "repeats": 5, "max_point_s": 1.0},
    # a second or two: for testing the command line and scripts/gpu_reference.sh, not for reading
    "tiny": TINY_STEP,
    # scripts/gpu_reference.sh's preset, for its limit of 45 s (sizing: docs/GPU.md)
    "gpu": {"seq_lens": (16, 64, 256, 1024, 4096), "warmup": 2, "repeats": 5, "max_point_s": 3.0},
    "full": {"seq_lens": (16, 32, 64, 128, 256, 512, 1024, 2048, 4096), "warmup": 2, "repeats": 7, "max_point_s": 10.0},
}


def measure_length(
    cfg: SerialConfig, seq_len: int, names: list[str], device: torch.device, after_round=None
) -> dict[str, dict]:
    """Every model in `names` at one length, timed interleaved so background load falls on all alike; then the
    bytes each saves for backward. Row fields per model; one that runs out of memory is an oom row."""
    prepared, fields = guard.prepare_each(names, lambda name: prepared_step(name, cfg, seq_len, device), device)
    steps = {name: p[1] for name, p in prepared.items()}
    timings, failed = time_points(steps, cfg, device, after_round, min_sample_s=MIN_SAMPLE_S)
    fields.update(failed)
    for name, timing in timings.items():
        model, step, loss_fn, (tokens, targets) = prepared[name]
        saved = bench.saved_activation_bytes(loss_fn, exclude=(*model.parameters(), tokens, targets))
        peak = bench.cuda_peak_bytes(step, device)
        kind = registry.get(name)
        flops = fl.training_step(kind.forward_flops(cfg.batch_size, seq_len, cfg.d_model, cfg.n_layers, cfg.vocab_size))
        seconds = timing.median_ms / 1e3
        fields[name] = ok_fields(
            model,
            timing,
            tokens_per_s=cfg.batch_size * seq_len / seconds,
            saved_bytes=saved,
            peak_bytes=peak if peak is not None else math.nan,
            flops=flops,
            achieved_flops_per_s=flops / seconds,
        )
    prepared.clear()
    if device.type == "cuda":
        guard.free(device)
    _paired_ratios(fields)
    return fields


def _paired_ratios(fields: dict[str, dict]) -> None:
    """Each model's time ÷ the chapter's recurrent model's, repeat by repeat (they ran side by side): the median
    and the interquartile range of those ratios, so a comparison carries its own spread."""
    measured = [n for n, f in fields.items() if "times_ms" in f]
    base = registry.representative(RECURRENT, measured)
    for name in measured:
        f = fields[name]
        if base is None:
            f["ratio_to_recurrent"] = f["ratio_q25"] = f["ratio_q75"] = math.nan
            continue
        q25, q50, q75 = paired(f["times_ms"], fields[base]["times_ms"])
        f.update(ratio_to_recurrent=q50, ratio_q25=q25, ratio_q75=q75, ratio_base=base)
    for f in fields.values():
        f.pop("times_ms", None)


def run(cfg: SerialConfig, on_progress=None) -> pd.DataFrame:
    """One row per (sequence length, model), shortest first; the matmul ceiling is measured before and after every
    length, and a point's utilization is its FLOP/s over the better of the two (see `_utilization`)."""
    device = resolve_device(cfg.device)
    env = environment(device)
    same = copied(cfg, "n_layers", "d_model", "batch_size", "seed")  # what every row repeats
    same.update(flop_convention=fl.CONVENTION, step_latency_s=bench.step_latency_s(str(device)), note="")
    lengths = sorted(cfg.seq_lens)
    out = Rows(len(lengths) * len(cfg.models), on_progress)
    ceiling_before = bench.peak_flops(str(device))
    for T in lengths:
        runnable, fields = fitting(cfg.models, lambda name, T=T: step_bytes(name, cfg, T), device)
        # progress text between rounds, and the chance to Stop there
        after_round = lambda r, T=T: out.say(f"n={T}: repeat {r} of {cfg.repeats}")
        fields.update(measure_length(cfg, T, runnable, device, after_round))
        ceiling_after = bench.peak_flops(str(device))
        for name in cfg.models:
            f = fields[name]
            row = {
                "model": name,
                "seq_len": T,
                "seq_steps": registry.get(name).seq_steps(T, cfg.n_layers),
                "predicted_bytes": step_bytes(name, cfg, T),
                "peak_before_flops_per_s": ceiling_before,
                "peak_after_flops_per_s": ceiling_after,
                "peak_flops_per_s": max(ceiling_before, ceiling_after),
                **same,
                **f,
                **env,
            }
            _utilization(row, device)
            out.add(row, f"{name} T={T}")
        ceiling_before = ceiling_after
    return tidy(out.rows, COLUMNS)


def _utilization(row: dict, device: torch.device) -> None:
    """achieved ÷ ceiling. A point above its ceiling has the ceiling measured again (twice the matmul size); if it
    is still above, the share is capped at 1 and the row says so: either the count or the ceiling is wrong."""
    achieved = row.get("achieved_flops_per_s", math.nan)
    row["above_ceiling"] = False
    if not achieved > row["peak_flops_per_s"]:
        row["utilization"] = achieved / row["peak_flops_per_s"]
        return
    again = bench.peak_flops(str(device), n=2 * (8192 if device.type == "cuda" else 1024))
    row["peak_flops_per_s"] = max(row["peak_flops_per_s"], again)
    share = achieved / row["peak_flops_per_s"]
    row["above_ceiling"] = share > 1
    if share > 1:
        row["note"] = f"achieved {share:.0%} of the measured ceiling: shown as 100%"
    row["utilization"] = min(share, 1.0)


EXPERIMENT = Experiment(
    "serial",
    SerialConfig,
    run,
    PRESETS,
    "training-step time, FLOP/s and BPTT memory vs sequence length: RNN/LSTM/GRU vs Transformer",
    takeaways,
    point=("model", "seq_len"),
)
