"""One point of the attention-cost experiment: its predicted size (for the guard) and its measurement.

`predicted_bytes` and `formula_saved` read the attention registry's formulas for the point's shape; the two
`measure_*` functions run one implementation at one length and return its row fields (time, bytes saved for
backward, peak). `core.experiments.attention_cost` guards and sequences the points.
"""

from __future__ import annotations

import math
from typing import Protocol

import torch

from core.harness import bench
from core.harness.device import one_thread, threads_used
from core.harness.memory_formulas import DTYPE_BYTES
from core.models import attention
from core.models.attention import Shape


class PointConfig(Protocol):
    """What a point reads of its experiment's config (attention_cost's AttentionCostConfig, which imports this)."""

    batch_size: int
    n_heads: int
    head_dim: int
    dtype: str
    causal: bool
    seed: int
    warmup: int
    repeats: int
    max_point_s: float


# ---- predictions (for the guard) ----------------------------------------------------------------------------


def elem_bytes(dtype: str) -> int:
    return int(DTYPE_BYTES[dtype])


def shape_of(cfg: PointConfig, n: int) -> Shape:
    return Shape(cfg.batch_size, cfg.n_heads, n, cfg.head_dim, elem_bytes(cfg.dtype), cfg.causal)


def predicted_bytes(impl: str, backend: str, cfg: PointConfig, n: int, device: torch.device) -> float:
    """A generous peak estimate for the guard: computed from the shape alone, before anything is allocated."""
    return attention.get(impl).predicted_bytes(shape_of(cfg, n), backend, device.type)


def formula_saved(impl: str, backend: str, cfg: PointConfig, n: int) -> float:
    """The exact bytes saved for backward by formula, where one is known (fp32); NaN otherwise."""
    formula = attention.get(impl).saved_formula
    if cfg.dtype != "float32" or formula is None:
        return math.nan
    return formula(shape_of(cfg, n), backend)


# ---- measuring one point -------------------------------------------------------------------------------------


def inputs(cfg: PointConfig, n: int, device: torch.device, requires_grad: bool = True):
    g = torch.Generator().manual_seed(cfg.seed)
    dtype = getattr(torch, cfg.dtype)
    shape = (cfg.batch_size, cfg.n_heads, n, cfg.head_dim)  # (B, H, n, head_dim)
    q, k, v, grad = (torch.randn(shape, generator=g).to(device, dtype) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(requires_grad)
    return q, k, v, grad


def measure_attention(impl: str, backend: str, cfg: PointConfig, n: int, device: torch.device) -> dict:
    q, k, v, grad = inputs(cfg, n, device)
    record = attention.get(impl)

    def forward():
        return record.attend(q, k, v, cfg.causal, backend)

    def step():
        forward().backward(grad)
        q.grad = k.grad = v.grad = None

    with bench.LivePeak(exclude=(q, k, v, grad)) as live:
        step()  # also the first warm-up call; records which kernel ran
    ran = bench.backend_from_ops(live.ops) if record.uses_backends else attention.NO_BACKEND
    timing = bench.time_fn(
        step, warmup=max(cfg.warmup - 1, 0), repeats=cfg.repeats, device=device, max_seconds=cfg.max_point_s
    )
    saved = bench.saved_activation_bytes(forward, exclude=(q, k, v, grad))
    return {
        "backend": ran,
        **_timed(timing, bench.cuda_peak_bytes(step, device), live),
        "saved_bytes": saved,
        "formula_saved_bytes": formula_saved(impl, ran, cfg, n),
    }


def measure_lstm(cfg: PointConfig, n: int, device: torch.device) -> dict:
    """An LSTM of the same width (H·head_dim) reads n tokens at inference, one step at a time, keeping only (h, c)."""
    d = cfg.n_heads * cfg.head_dim
    dtype = getattr(torch, cfg.dtype)
    torch.manual_seed(cfg.seed)
    cell = torch.nn.LSTMCell(d, d).to(device, dtype)
    x = torch.randn(n, cfg.batch_size, d, generator=torch.Generator().manual_seed(cfg.seed)).to(device, dtype)
    state = {}

    @torch.no_grad()
    def read():
        h = c = x.new_zeros(cfg.batch_size, d)
        for t in range(n):  # h_t = f(h_{t-1}, x_t): the state is overwritten, never grows
            h, c = cell(x[t], (h, c))
        state["bytes"] = h.untyped_storage().nbytes() + c.untyped_storage().nbytes()

    live = None
    with one_thread():  # tiny sequential steps: threads cost more than they save
        if needs_live_peak(device):
            with bench.LivePeak(exclude=(x, *cell.parameters())) as live:
                read()
        timing = bench.time_fn(read, warmup=0, repeats=cfg.repeats, device=device, max_seconds=cfg.max_point_s)
        cuda_peak = bench.cuda_peak_bytes(read, device)
    return {
        "threads": threads_used(device, 1),
        "backend": "-",
        **_timed(timing, cuda_peak, live),
        "state_bytes": state["bytes"],
    }


def _timed(timing: bench.Timing, cuda_peak: int | None, live: bench.LivePeak | None) -> dict:
    """A point's time (median, IQR) and peak: the CUDA allocator's where there is one, else the live tensors'."""
    return {
        **bench.timed(timing, "time"),
        "fresh_bytes": timing.fresh_bytes,
        "peak_bytes": cuda_peak if cuda_peak is not None else live.peak,
        "peak_kind": "cuda_max_allocated" if cuda_peak is not None else "live_tensors",
    }


def needs_live_peak(device: torch.device) -> bool:
    """Whether the peak comes from a LivePeak pass (every operator dispatched through Python, so slow) rather than
    from the CUDA allocator's own counter."""
    return device.type != "cuda"
