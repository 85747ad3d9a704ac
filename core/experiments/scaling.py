"""Bottleneck 1 measured on any multi-core machine: how much faster each model's training step gets with more threads.

The serial experiment's training step (forward, loss, backward, SGD update; `core.experiments.common.prepared_step`) is
timed at 1, 2, 4, … threads up to the cores this process may use. A Transformer step is a few large matrix
products that split across cores; an LSTM step is n small products, each waiting for the previous state, too small
to split. Amdahl's law (1967) turns each model's speed-ups into the share of its step that did not split
(`core.findings.scaling`): the same physics that makes the LSTM lose on a GPU's thousands of lanes.

Each round walks the thread counts and times every model once at each (orders rotating), the count set between
timed calls, with a small untimed parallel op to settle the pool. A speed-up at p threads is the median and
quartiles of 1-thread ÷ p-thread times from the same round, so background load falls on both sides.
"""

from __future__ import annotations

import dataclasses
import time

import pandas as pd
import torch

from core.config import Experiment, spec
from core.experiments.common import Rows, copied, fitting, paired, prepared_step, quartiles, step_bytes, tagged
from core.findings.scaling import fit_group, takeaways
from core.harness import bench, guard, heap
from core.harness.device import DEVICES, environment, physical_cores, resolve_device, torch_threads
from core.store.results import tidy
from core.terms import status

COLUMNS = ("model", "seq_len", "threads", "threads_requested", "train_ms", "train_iqr_ms", "noisy", "speedup",
           "speedup_q25", "speedup_q75", "efficiency", "repeats", "serial_fraction", "serial_fraction_se",
           "serial_fraction_lo", "serial_fraction_hi", "fit_points", "fit_flag", "gpu_width",
           "gpu_speedup_extrapolated", "gpu_speedup_lo", "gpu_speedup_hi", "d_model", "n_layers", "batch_size",
           "status", "note", "seed")  # fmt: skip
TEXT = ("model", "fit_flag")  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ("noisy",)


@dataclasses.dataclass(frozen=True)
class ScalingConfig:
    models: tuple[str, ...] = tagged("scaling", help="which models to time")
    max_threads: int = spec(
        0,
        lo=0,
        hi=1024,
        help="most threads to try: 1, 2, 4, … and this (0 = every usable "
        "core; more than the cores oversubscribes them)",
    )
    seq_lens: tuple[int, ...] = spec((256, 1024), lo=2, hi=65535, help="sequence lengths to sweep")
    d_model: int = spec(128, lo=8, hi=4096, help="width of every model")
    n_layers: int = spec(1, lo=1, hi=32, help="stacked layers in every model")
    batch_size: int = spec(8, lo=1, hi=1024, help="sequences per training step")
    vocab_size: int = spec(64, lo=2, hi=65536, help="small, so the output layer does not dominate")
    device: str = spec("cpu", choices=DEVICES, help="threads are CPU threads: on another device rows are unsupported")
    seed: int = spec(0, lo=0, hi=2**31 - 1)
    warmup: int = spec(1, lo=0, hi=50, help="untimed steps at every thread count first")
    repeats: int = spec(5, lo=1, hi=200, help="timed rounds; medians and paired quartiles are reported")
    max_point_s: float = spec(
        3.0,
        lo=0.05,
        hi=600.0,
        help="per (model, threads): stop adding rounds after this much timed work (3 rounds are kept)",
    )


PRESETS = {
    "quick": {"seq_lens": (64, 256, 512), "max_threads": 0, "warmup": 1, "repeats": 5, "max_point_s": 1.0},
    "full": {"seq_lens": (64, 256, 1024), "max_threads": 0, "warmup": 2, "repeats": 7, "max_point_s": 10.0},
}


def thread_counts(max_threads: int) -> list[int]:
    """1, 2, 4, … below the top count, then the top count itself (0: every core this process may use)."""
    top = max_threads or physical_cores()
    counts = [1]
    while counts[-1] * 2 < top:
        counts.append(counts[-1] * 2)
    return counts + ([top] if top > 1 else [])


def _rotate(items: list, r: int) -> list:
    return items[r % len(items) :] + items[: r % len(items)] if items else items


_SETTLE = torch.ones(1 << 17)  # big enough that torch splits its sum across threads


def _settle() -> None:
    """One small parallel op, untimed, so the pool runs at the new thread count before a timed step."""
    _SETTLE.sum()


def measure_length(
    cfg: ScalingConfig, seq_len: int, names: list[str], counts: list[int], device: torch.device, after_round=None
) -> dict[str, dict]:
    """Every (model, threads) pair at one length, round-robin (see the module docstring); row fields per model and
    thread count, keyed (model, threads). A model that runs out of memory is a row with status oom at every count."""
    steps, oom = guard.prepare_each(names, lambda name: prepared_step(name, cfg, seq_len, device)[1], device)
    fields = {(name, p): f for name, f in oom.items() for p in counts}
    failed: dict[str, BaseException] = {}
    used = {}
    for p in counts:  # warm-up at every count: the first step at a count may start threads or build kernels
        with torch_threads(p):
            used[p] = torch.get_num_threads()
            _settle()
            live = {n: step for n, step in steps.items() if n not in failed}
            failed.update(
                bench.time_interleaved(live, warmup=cfg.warmup, repeats=0, device=device, is_fatal=guard.is_oom)[1]
            )
    times = {(n, p): [] for n in steps for p in counts}
    spent = 0.0
    for r in range(cfg.repeats):
        for p in _rotate(counts, r):
            live = _rotate([n for n in steps if n not in failed], r)
            if not live:
                break
            with torch_threads(p):
                _settle()
                t0 = time.perf_counter()
                timings, errors = bench.time_interleaved(
                    {n: steps[n] for n in live}, warmup=0, repeats=1, device=device, is_fatal=guard.is_oom
                )
                spent += time.perf_counter() - t0
            failed.update(errors)
            for n, t in timings.items():
                times[(n, p)].append(t.times_ms[0])
        if after_round is not None:
            after_round(r + 1)
        if r >= 2 and spent > cfg.max_point_s * max(1, len(times)):
            break
    for name, err in failed.items():
        guard.free(device)
        fields.update({(name, p): guard.oom_fields(err) for p in counts})
    for name in steps:
        if name not in failed:
            fields.update(_speedups(name, counts, used, times))
    return fields


def _speedups(name: str, counts: list[int], used: dict, times: dict) -> dict:
    """One model's rows: median and IQR of its times at each count, and its speed-up over 1 thread round by round."""
    one = times[(name, counts[0])]
    out = {}
    for p in counts:
        ts = times[(name, p)]
        q25, q50, q75 = quartiles(ts)  # as torch's Measurement computes
        timing = bench.Timing(q50, q75 - q25, tuple(ts))
        s25, s50, s75 = paired(one, ts)
        out[(name, p)] = {
            "status": status.OK,
            "threads": used[p],
            "threads_requested": p,
            "train_ms": q50,
            "train_iqr_ms": timing.iqr_ms,
            "noisy": timing.noisy,
            "speedup": s50,
            "speedup_q25": s25,
            "speedup_q75": s75,
            "efficiency": s50 / used[p],
            "repeats": len(ts),
        }
    return out


def run(cfg: ScalingConfig, on_progress=None) -> pd.DataFrame:
    """One row per (length, model, thread count), shortest first, each with its model's Amdahl fit at that length.
    `threads` is the count in force while timed (empty where nothing ran), `threads_requested` the count asked."""
    device = resolve_device(cfg.device)
    env = environment(device)
    counts = thread_counts(cfg.max_threads)
    lengths = sorted(cfg.seq_lens)
    out = Rows(len(lengths) * len(cfg.models) * len(counts), on_progress)
    sizes = ("d_model", "n_layers", "batch_size")
    for T in lengths:
        if device.type != "cpu":
            note = f"thread scaling is measured on the CPU; on {device.type} torch threads only drive the host"
            runnable, refused = [], {name: {"status": status.UNSUPPORTED, "note": note} for name in cfg.models}
        else:
            runnable, refused = fitting(cfg.models, lambda name, T=T: step_bytes(name, cfg, T), device)
        fields = {(name, p): f for name, f in refused.items() for p in counts}
        after_round = lambda r, T=T: out.say(f"n={T}: round {r} of {cfg.repeats}")  # the chance to Stop there
        if runnable:
            with heap.freed_memory_reused():  # one for the whole length: each timed call is one step
                fields.update(measure_length(cfg, T, runnable, counts, device, after_round))
        for name in cfg.models:
            same = {**env, "model": name, "seq_len": T, "threads": None, **copied(cfg, *sizes, "seed"), "note": ""}
            group = [{**same, "threads_requested": p, **fields[(name, p)]} for p in counts]
            measured = pd.DataFrame([g for g in group if g["status"] == status.OK])
            fit = fit_group(measured) if len(measured) else {}
            for row in group:
                row.update(fit if row["status"] == status.OK else {})
                out.add(row, f"{name} n={T} threads={row['threads']}")
    return tidy(out.rows, COLUMNS)


EXPERIMENT = Experiment(
    "scaling",
    ScalingConfig,
    run,
    PRESETS,
    "training-step speed-up with 1, 2, 4, … threads per model, Amdahl's serial fraction and its GPU extrapolation",
    takeaways,
    point=("model", "seq_len", "threads"),
)
