"""The Transformer's own bottleneck: memory and time of one attention layer against sequence length n.

Self-attention forms an n × n score matrix per head: the explicit path (`naive`) keeps it for backward (O(n²)
memory), fused kernels (`sdpa`: FlashAttention, Dao et al. 2022) recompute it in tiles (O(n)); both do O(n²) work.
`linear` attention (Katharopoulos et al. 2020) is O(n) in both but computes another function; an LSTM's state stays
fixed. Each point reports forward + backward time, exact bytes saved for backward, a peak, and one score matrix's size.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import torch

from core.config import Experiment, spec
from core.experiments.common import Rows, copied
from core.findings.attention_cost import takeaways, wall
from core.harness import bench, guard
from core.harness.device import DEVICES, environment, resolve_device
from core.harness.memory_formulas import score_bytes
from core.models import attention
from core.models.attention import BACKENDS
from core.store.results import tidy
from core.terms import status
from core.workloads.attention_point import elem_bytes, needs_live_peak, predicted_bytes, shape_of
from core.workloads.attention_point import inputs as _inputs  # noqa: F401 - the tests and the smoke test use it
from core.workloads.attention_point import measure_attention as _measure_attention
from core.workloads.attention_point import measure_lstm as _measure_lstm

IMPLS = ("naive", "sdpa", "linear", "lstm_state")  # the default comparison; any registered implementation runs
DTYPES = ("float32", "bfloat16", "float16", "auto")  # auto: bfloat16 on CUDA (flash needs it), else float32
COLUMNS = ("impl", "backend", "requested_backend", "mode", "seq_len", "batch_size", "n_heads", "head_dim",
           "dtype", "causal", "time_ms", "time_iqr_ms", "noisy", "fresh_bytes", "peak_bytes", "peak_kind", "saved_bytes",
           "formula_saved_bytes", "analytic_bytes", "state_bytes", "predicted_bytes", "budget_bytes", "point",
           "fits_budget", "device", "status", "note", "seed")  # fmt: skip
TEXT = (
    "impl",
    "backend",
    "requested_backend",
    "mode",
    "dtype",
    "peak_kind",
    "point",
)  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ("causal", "noisy", "fits_budget")


@dataclasses.dataclass(frozen=True)
class AttentionCostConfig:
    impls: tuple[str, ...] = spec(IMPLS, choices=lambda: tuple(attention.IMPLS), help="implementations to compare")
    backends: tuple[str, ...] = spec(
        (attention.AUTO,),
        choices=BACKENDS,
        help="SDPA backends for 'sdpa': auto = the device's best; others are forced",
    )
    seq_lens: tuple[int, ...] = spec((256, 512, 1024, 2048), lo=2, hi=2**21, help="sequence lengths n to sweep")
    batch_size: int = spec(1, lo=1, hi=1024)
    n_heads: int = spec(4, lo=1, hi=256)
    head_dim: int = spec(32, lo=1, hi=512)
    dtype: str = spec("float32", choices=DTYPES, help="CUDA flash needs bfloat16 or float16; auto = bf16 on CUDA")
    causal: bool = spec(False, help="causal mask (decoder); off = every token sees every token")
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")
    seed: int = spec(0, lo=0, hi=2**31 - 1)
    warmup: int = spec(1, lo=0, hi=50, help="untimed calls first")
    repeats: int = spec(5, lo=1, hi=200, help="timed calls; the median and IQR are reported")
    max_point_s: float = spec(2.0, lo=0.05, hi=600.0, help="stop repeating a point after this much timed work")
    time_limit_s: float = spec(
        60.0, lo=0.1, hi=3600.0, help="skip a point whose time, extrapolated from smaller n, would exceed this"
    )
    budget_mib: float = spec(0.0, lo=0.0, hi=1e9, help="memory budget for the wall; 0 = the guard's (half of free)")
    verify_wall: bool = spec(False, help="after the sweep, run just below and above each predicted wall if affordable")

    def check(self):
        with_backends = [i for i in self.impls if attention.get(i).uses_backends]
        if not with_backends and self.backends != (attention.AUTO,):
            users = ", ".join(n for n, r in attention.IMPLS.items() if r.uses_backends)
            raise ValueError(f"backends: only used by {users}; add it to impls")


PRESETS = {
    "quick": {"seq_lens": (256, 512, 1024, 2048), "warmup": 2, "repeats": 3, "max_point_s": 0.5},
    # a second or two: for testing the command line and scripts/gpu_reference.sh, not for reading
    "tiny": {"seq_lens": (32, 64), "backends": ("auto", "math"), "warmup": 0, "repeats": 1, "max_point_s": 0.1},
    # scripts/gpu_reference.sh's preset, for its limit of 55 s (sizing: docs/GPU.md)
    "gpu": {
        "seq_lens": (128, 512, 2048, 8192, 16384, 32768, 65536, 131072),
        "dtype": "auto",
        "backends": BACKENDS,
        "warmup": 1,
        "repeats": 5,
        "max_point_s": 2.0,
        "time_limit_s": 6.0,
        "verify_wall": True,
    },
    # up to 128K: on a GPU the guard finds the wall; on a CPU the long points come back at once as rows saying
    # what they would need (memory) or take (time)
    "full": {
        "seq_lens": (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072),
        "dtype": "auto",
        "backends": BACKENDS,
        "warmup": 2,
        "repeats": 7,
        "max_point_s": 10.0,
        "time_limit_s": 45.0,
        "verify_wall": True,
    },
}


def predicted_seconds(
    impl: str, cfg: AttentionCostConfig, n: int, device: torch.device, history: list[tuple[int, float]]
) -> tuple[float, str]:
    """Seconds for one call: extrapolated from the largest smaller n measured (∝ n² for softmax attention, n for
    the others); with no history, the FLOPs at this device's measured matmul peak (a lower bound)."""
    record = attention.get(impl)
    smaller = [(m, t) for m, t in history if m < n and math.isfinite(t)]
    if smaller:
        m, t_ms = max(smaller)
        power = record.time_exponent
        return t_ms / 1e3 * (n / m) ** power, f"extrapolated from n={m}"
    if record.latency_bound and n > 4096:  # n dependent steps: latency-bound, not FLOP-bound
        return n * bench.cell_loop_latency_s(str(device)), "n steps × this device's step latency"
    flops = record.flops(shape_of(cfg, n))
    if flops < 1e9:  # too little work to be worth measuring the device's peak
        return 0.0, "small"
    return flops / bench.peak_flops_estimate(str(device), cfg.dtype), "FLOPs at this device's matmul peak"


def measure_point(
    impl: str,
    backend: str,
    cfg: AttentionCostConfig,
    n: int,
    device: torch.device,
    history: list | None = None,
    point: str = "sweep",
    budget: int | None = None,
) -> dict:
    """One row, guarded first by memory (bytes predicted from the shape; nothing is allocated for a refused
    point), then by time (a point that would exceed `time_limit_s`); a bad point is a row, never an exception."""
    record = attention.get(impl)
    row = {
        "impl": impl,
        "requested_backend": backend,
        "backend": backend,
        "mode": record.mode,
        "seq_len": n,
        **copied(cfg, "batch_size", "n_heads", "head_dim", "dtype", "causal", "seed"),
        "analytic_bytes": score_bytes(cfg.batch_size, cfg.n_heads, n, elem_bytes(cfg.dtype)),
        "point": point,
        "note": "",
    }
    predicted = predicted_bytes(impl, backend, cfg, n, device)
    budget = guard.budget_bytes(device) if budget is None else budget
    if not guard.fits(predicted, device, budget):
        return {**row, **guard.guarded(dict, predicted, device, budget)}  # the guard's refusal: nothing allocated
    failed = lambda why, note: {**row, "status": why, "predicted_bytes": predicted, "note": note}
    calls = cfg.warmup + min(cfg.repeats, 3) + 2  # warm-up, timed repeats (capped), saved-bytes and peak passes
    if record.mode == "inference":  # off CUDA its live-peak pass dispatches every step's operators through Python
        calls = min(cfg.repeats, 3) + (8 if needs_live_peak(device) else 2)
    seconds, how = predicted_seconds(impl, cfg, n, device, history or [])
    seconds *= calls
    if seconds > cfg.time_limit_s:
        return failed(status.SKIPPED_TIME, f"would take ~{seconds:,.0f} s ({how}); limit {cfg.time_limit_s:,.0f} s")
    measure = (
        (lambda: _measure_lstm(cfg, n, device))
        if record.mode == "inference"
        else (lambda: _measure_attention(impl, backend, cfg, n, device))
    )
    try:
        fields = guard.guarded(measure, predicted, device, budget)
    except RuntimeError as err:  # a kernel this device, dtype or shape cannot run: "No viable backend", a cuDNN or
        guard.free(device)  # CUDA error in a forced backend or in auto's choice; run() then checks the device
        return failed(status.UNSUPPORTED, str(err).splitlines()[0][:160])
    return {**row, **fields}


def run(cfg: AttentionCostConfig, on_progress=None) -> pd.DataFrame:
    """One row per (n, implementation, backend), shortest n first so the memory-hungry points run last."""
    device = resolve_device(cfg.device)
    if cfg.dtype == "auto":
        cfg = dataclasses.replace(cfg, dtype="bfloat16" if device.type == "cuda" else "float32")
    env = environment(device)
    # the wall's budget (yours, or the guard's)
    budget = int(cfg.budget_mib * 2**20) if cfg.budget_mib > 0 else guard.budget_bytes(device)
    guard_budget = guard.budget_bytes(device)  # what may really be allocated now
    variants = [(impl, b) for impl in cfg.impls for b in attention.get(impl).backends(cfg.backends)]
    points = [(n, impl, b) for n in sorted(cfg.seq_lens) for impl, b in variants]
    history: dict[tuple, list] = {v: [] for v in variants}
    out = Rows(len(points) + (2 * len(variants) if cfg.verify_wall else 0), on_progress)

    def add(row, message):
        row = {**env, **row, "budget_bytes": budget}  # a row may say it ran on fewer threads
        ok = row["status"] == status.OK
        row["fits_budget"] = bool(row.get("peak_bytes", math.nan) <= budget) if ok else math.nan
        out.add(row, message)

    def measured(impl, b, n, point="sweep") -> bool:
        """Measure and add one point; False once the device has stopped computing (a broken CUDA context)."""
        row = measure_point(impl, b, cfg, n, device, history[(impl, b)], point=point, budget=guard_budget)
        history[(impl, b)].append((n, row.get("time_ms", math.nan)))
        label = f"{impl}{'/' + b if attention.get(impl).uses_backends else ''} n={n}"
        add(row, label if point == "sweep" else f"checking the wall: {label}")
        if row["status"] != status.UNSUPPORTED or guard.device_ok(device):
            return True
        note = f"the device stopped computing after {label} ({row['note']}); the rest of the sweep was not run"
        add({**row, "status": status.STOPPED, "note": note, "point": point}, "the device stopped computing")
        return False

    for n, impl, b in points:
        if not measured(impl, b, n):
            return tidy(out.rows, COLUMNS)
    if cfg.verify_wall:
        walls = wall(tidy(out.rows, COLUMNS), budget)
        for impl, b in variants:
            found = walls[(walls.impl == impl) & (walls.requested_backend == b)]
            n_max = float(found.n_max.iloc[0]) if len(found) else math.nan
            for side, factor in (("below", 0.9), ("above", 1.1)):
                if not math.isfinite(n_max) or n_max * factor > 2**21:
                    continue
                if not measured(impl, b, max(2, int(n_max * factor)), point=f"wall_{side}"):
                    return tidy(out.rows, COLUMNS)
    return tidy(out.rows, COLUMNS)


EXPERIMENT = Experiment(
    "attention_cost",
    AttentionCostConfig,
    run,
    PRESETS,
    "memory and time of one attention layer vs n: naive O(n²) vs fused SDPA vs linear vs an LSTM's state",
    takeaways,
    point=("impl", "seq_len"),
)
