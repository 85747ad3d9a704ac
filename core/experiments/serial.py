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
import torch.nn.functional as F

from core import bench, guard
from core import flops as fl
from core.config import Experiment, Progress, spec
from core.device import DEVICES, environment, resolve_device
from core.findings.serial import takeaways
from core.models import registry
from core.models.layers import n_params
from core.models.registry import n_heads_for
from core.results import tidy

MODELS = ("rnn", "lstm", "gru", "lstm_loop", "transformer")  # the default comparison; any kind for "serial" runs
COLUMNS = (
    "model",
    "n_layers",
    "d_model",
    "batch_size",
    "seq_len",
    "params",
    "train_ms",
    "train_iqr_ms",
    "noisy",
    "tokens_per_s",
    "saved_bytes",
    "peak_bytes",
    "predicted_bytes",
    "seq_steps",
    "flops",
    "achieved_flops_per_s",
    "peak_flops_per_s",
    "step_latency_s",
    "utilization",
    "status",
    "note",
    "seed",
)


@dataclasses.dataclass(frozen=True)
class SerialConfig:
    models: tuple[str, ...] = spec(MODELS, choices=lambda: registry.names("serial"), help="which models to compare")
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

    def check(self):
        if self.d_model % n_heads_for(self.d_model):
            raise ValueError(f"d_model: {self.d_model} must be divisible by the number of heads")


PRESETS = {
    "quick": {"seq_lens": (32, 128, 512, 1024), "warmup": 1, "repeats": 3, "max_point_s": 1.0},
    "full": {"seq_lens": (16, 32, 64, 128, 256, 512, 1024, 2048, 4096), "warmup": 2, "repeats": 7, "max_point_s": 10.0},
}


def build_model(name: str, cfg: SerialConfig) -> torch.nn.Module:
    return registry.get(name).build(cfg.vocab_size, cfg.d_model, cfg.n_layers)


def predicted_bytes(model: str, cfg: SerialConfig, seq_len: int) -> float:
    """A generous estimate of a point's peak memory, for the guard: activations, logits, weights, Adam-free SGD."""
    B, T, d, L, V = cfg.batch_size, seq_len, cfg.d_model, cfg.n_layers, cfg.vocab_size
    per_token_layer = registry.get(model).activation_floats * d  # SDPA keeps no T×T matrix
    activations = B * T * (L * per_token_layer + 4 * V + 2 * d) * 4
    weights = 4 * (L * 12 * d * d + 2 * V * d) * 4
    return 2.0 * activations + weights


def _measure(name: str, cfg: SerialConfig, seq_len: int, device: torch.device) -> dict:
    torch.manual_seed(cfg.seed)
    model = build_model(name, cfg).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(cfg.seed)
    tokens = torch.randint(cfg.vocab_size, (cfg.batch_size, seq_len), generator=g).to(device)
    targets = torch.randint(cfg.vocab_size, (cfg.batch_size, seq_len), generator=g).to(device)

    def loss_fn():
        return F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn().backward()
        opt.step()

    timing = bench.time_fn(step, warmup=cfg.warmup, repeats=cfg.repeats, device=device, max_seconds=cfg.max_point_s)
    saved = bench.saved_activation_bytes(loss_fn, exclude=(*model.parameters(), tokens, targets))
    peak = bench.cuda_peak_bytes(step, device)
    flops = fl.training_step(
        registry.get(name).forward_flops(cfg.batch_size, seq_len, cfg.d_model, cfg.n_layers, cfg.vocab_size)
    )
    seconds = timing.median_ms / 1e3
    return {
        "params": n_params(model),
        "train_ms": timing.median_ms,
        "train_iqr_ms": timing.iqr_ms,
        "noisy": timing.noisy,
        "tokens_per_s": cfg.batch_size * seq_len / seconds,
        "saved_bytes": saved,
        "peak_bytes": peak if peak is not None else math.nan,
        "flops": flops,
        "achieved_flops_per_s": flops / seconds,
    }


def run(cfg: SerialConfig, on_progress=None) -> pd.DataFrame:
    """One row per (sequence length, model); shortest lengths first so memory-hungry points run last."""
    device = resolve_device(cfg.device)
    env = environment(device)
    peak = bench.peak_flops(str(device))
    latency = bench.step_latency_s(str(device))
    points = [(T, m) for T in sorted(cfg.seq_lens) for m in cfg.models]
    rows = []
    for i, (T, name) in enumerate(points):
        fields = guard.guarded(
            lambda name=name, T=T: _measure(name, cfg, T, device), predicted_bytes(name, cfg, T), device
        )
        row = {
            "model": name,
            "n_layers": cfg.n_layers,
            "d_model": cfg.d_model,
            "batch_size": cfg.batch_size,
            "seq_len": T,
            "seq_steps": registry.get(name).seq_steps(T, cfg.n_layers),
            "peak_flops_per_s": peak,
            "step_latency_s": latency,
            "seed": cfg.seed,
            "note": "",
            **fields,
            **env,
        }
        row["utilization"] = row.get("achieved_flops_per_s", math.nan) / peak
        rows.append(row)
        if on_progress is not None:
            on_progress(Progress(i + 1, len(points), f"{name} T={T}", (row,)))
    return to_frame(rows)


def to_frame(rows: list[dict]) -> pd.DataFrame:
    return tidy(rows, COLUMNS)


EXPERIMENT = Experiment(
    "serial",
    SerialConfig,
    run,
    PRESETS,
    "training-step time, FLOP/s and BPTT memory vs sequence length: RNN/LSTM/GRU vs Transformer",
    takeaways,
)
