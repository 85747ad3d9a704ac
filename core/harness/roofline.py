"""A labelled *model*, not a measurement: time ≈ max(FLOPs / peak, dependent steps × per-step latency).

It explains why a fused LSTM can beat a Transformer on a 2-core CPU (few FLOP/s, so FLOPs dominate) yet lose badly
on a GPU (huge FLOP/s, so the n dependent steps dominate). Hardware presets other than 'this device' are
assumptions, labelled as such; reference rows measured on that hardware validate them where present.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Hardware:
    name: str
    peak_flops_per_s: float  # sustained matmul FLOP/s
    step_latency_s: float  # seconds per dependent step, forward + backward
    measured: bool  # True when both numbers were measured on this device


# assumed, not measured: an H100-class GPU at fp32, a few kernel launches per step; the page says so
DATACENTRE_GPU = Hardware("data-centre GPU", 60e12, 10e-6, False)


def predict_ms(flops: float, seq_steps: int, hw: Hardware) -> float:
    return max(flops / hw.peak_flops_per_s, seq_steps * hw.step_latency_s) * 1e3


def bound(flops: float, seq_steps: int, hw: Hardware) -> str:
    """Which term wins: 'compute' or 'latency'."""
    return "compute" if flops / hw.peak_flops_per_s >= seq_steps * hw.step_latency_s else "latency"
