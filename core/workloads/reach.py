"""Gradient reach, measured: how strongly the last output of a layer depends on an input k steps back.

For one layer at initialisation and a random input of length T, the Frobenius norm of the Jacobian
∂y_T/∂x_{T−k} for every distance k. A recurrent layer multiplies k step Jacobians along the path, so the norm
decays (or explodes) exponentially with k (Pascanu, Mikolov & Bengio 2013); in self-attention every earlier
position is one step away (path length O(1), Vaswani et al. 2017, Table 1), so the norm stays flat.
The exact Jacobian comes from one backward pass: the input is repeated d times in a batch and row b of the
batch back-propagates only output component b.

The config, run and columns two experiments share, each with its own presets and takeaways: `gradient_reach` (the
chapter's layers, page 2) and `answers_reach` (page 5's mixers).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import pandas as pd
import torch
from torch import nn

from core.config import Progress, spec
from core.harness.device import DEVICES, environment, resolve_device
from core.models import registry
from core.models.layers import n_params
from core.models.registry import CHAPTER, Spec
from core.store.results import tidy
from core.terms.rules import REACH_FACTOR

COLUMNS = ("model", "seq_len", "d_model", "distance", "grad_norm", "relative", "reach", "params", "rnn_radius",
           "forget_bias", "compute_ms", "status", "note", "seed")  # fmt: skip
TEXT = ("model",)  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ()
JACOBIAN_CHUNK = 64  # Jacobian rows per backward pass, so memory stays bounded at large width


@dataclasses.dataclass(frozen=True)
class GradientReachConfig:
    # by default the chapter's, and attention over an LSTM (#17)
    models: tuple[str, ...] = spec(
        registry.tagged("gradient_reach:quick"),
        choices=registry.tagged("gradient_reach"),
        help="which layers to compare (page 5's mixers included)",
    )
    seq_len: int = spec(200, lo=2, hi=4096, help="T: length of the input sequence")
    d_model: int = spec(128, lo=4, hi=512, help="width of every layer (input and hidden size)")
    rnn_radius: float = spec(
        0.0, lo=0.0, hi=4.0, help="tanh RNN: rescale the recurrent matrix to this spectral radius; 0 = PyTorch's init"
    )
    forget_bias: float = spec(
        0.0, lo=-10.0, hi=10.0, help="LSTM forget-gate bias (PyTorch's init is about 0; Jozefowicz et al. 2015 use 1)"
    )
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")
    seed: int = spec(0, lo=0, hi=2**31 - 1)


def spectral_radius(w: torch.Tensor) -> float:
    # to the CPU first, then float64: MPS has no float64, and eigvals runs on the CPU anyway
    return float(torch.linalg.eigvals(w.detach().cpu().double()).abs().max())


def build_layer(name: str, cfg: GradientReachConfig) -> nn.Module:
    """One layer of width d_model at initialisation: (B, T, d) → (B, T, d); seeded by cfg.seed."""
    torch.manual_seed(cfg.seed)
    kind = registry.get(name)
    if CHAPTER not in kind.tags:  # page 5's mixers: `reach_depth` layers of the parallel form
        return kind.reach_layer(cfg.d_model)
    layer = kind.layer(Spec(cfg.d_model, forget_bias=cfg.forget_bias))
    if kind.recurrent_weight is not None and cfg.rnn_radius > 0:
        with torch.no_grad():
            w = kind.recurrent_weight(layer)
            w.mul_(cfg.rnn_radius / spectral_radius(w))
    return layer


def jacobian_norms(
    layer: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, chunk: int = JACOBIAN_CHUNK
) -> torch.Tensor:
    """‖∂y_T/∂x_{T−k}‖_F for k = 0..T−1, exactly; `x` is one sequence (T, d_in), `layer` maps (B, T, d) → (B, T, d_out).
    Batch row b back-propagates only output component b of the last position: its gradient is row b of the Jacobian."""
    T = x.shape[0]
    with torch.no_grad():
        d_out = layer(x[None]).shape[-1]
    sq = torch.zeros(T, dtype=torch.float64)
    for lo in range(0, d_out, chunk):
        rows = torch.arange(lo, min(lo + chunk, d_out), device=x.device)
        xs = x[None].repeat(len(rows), 1, 1).requires_grad_(True)  # (rows, T, d_in)
        y_last = layer(xs)[:, -1]  # (rows, d_out)
        y_last.gather(1, rows[:, None]).sum().backward()
        sq += xs.grad.cpu().double().pow(2).sum(dim=(0, 2))  # (T,) over rows and features; float64: 1e-30² ≠ 0
    return sq.sqrt().flip(0)  # index k = distance back from the last position


def reach(norms: torch.Tensor | list, factor: float = REACH_FACTOR) -> float:
    """The first distance k ≥ 1 where the norm is `factor` times below its k=1 value; NaN if it never falls so far."""
    norms = [float(v) for v in norms]
    if len(norms) < 2 or not norms[1] > 0:
        return math.nan
    for k in range(1, len(norms)):
        if norms[k] < norms[1] / factor:
            return float(k)
    return math.nan


def run(cfg: GradientReachConfig, on_progress=None) -> pd.DataFrame:
    """One row per (model, distance k), k = 0..seq_len−1."""
    device = resolve_device(cfg.device)
    env = environment(device)
    g = torch.Generator().manual_seed(cfg.seed)
    x = torch.randn(cfg.seq_len, cfg.d_model, generator=g).to(device)  # the same input for every layer
    rows = []
    for i, name in enumerate(cfg.models):
        layer = build_layer(name, cfg).to(device)
        t0 = time.perf_counter()
        norms = jacobian_norms(layer, x)
        ms = (time.perf_counter() - t0) * 1e3
        finite = bool(torch.isfinite(norms).all())
        k_reach = reach(norms) if finite else math.nan
        kind = registry.get(name)  # page 5's mixers: no recurrent matrix, no forget gate
        weight = kind.recurrent_weight
        radius = spectral_radius(weight(layer)) if weight is not None else math.nan
        underflow = int((norms == 0).sum())
        note = f"{underflow} distances below float32's smallest number (exactly 0)" if underflow else ""
        same = {
            "model": name,
            **{f: getattr(cfg, f) for f in ("seq_len", "d_model", "seed")},
            "reach": k_reach,
            "params": n_params(layer),
            "rnn_radius": radius,
            "forget_bias": cfg.forget_bias if kind.forget_gate else math.nan,
            "compute_ms": ms,
            "status": "ok" if finite else "diverged",
            "note": note if finite else "gradient overflowed to inf/NaN",
            **env,
        }
        grads = norms.tolist() if finite else [math.nan] * len(norms)
        g1 = grads[1] if finite and cfg.seq_len > 1 and grads[1] > 0 else math.nan  # relative: to the norm at k = 1
        new = [{**same, "distance": k, "grad_norm": v, "relative": v / g1} for k, v in enumerate(grads)]
        rows.extend(new)
        if on_progress is not None:
            on_progress(Progress(i + 1, len(cfg.models), f"{name} T={cfg.seq_len}", tuple(new)))
    return tidy(rows, COLUMNS)
