"""Bottleneck 2a, gradient reach: how strongly the last output of a layer depends on an input k steps back.

For one layer at initialisation and a random input of length T, the Frobenius norm of the Jacobian
∂y_T/∂x_{T−k} for every distance k. A recurrent layer multiplies k step Jacobians along the path, so the norm
decays (or explodes) exponentially with k (Pascanu, Mikolov & Bengio 2013); in self-attention every earlier
position is one step away (path length O(1), Vaswani et al. 2017, Table 1), so the norm stays flat.
The exact Jacobian comes from one backward pass: the input is repeated d times in a batch and row b of the
batch back-propagates only output component b.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import pandas as pd
import torch
from torch import nn

from core.config import Experiment, spec
from core.experiments.common import Rows, copied, tagged
from core.findings import listing, sci
from core.harness.device import DEVICES, environment, resolve_device
from core.models import registry
from core.models.layers import n_params
from core.models.registry import ATTENTION, CHAPTER, Spec
from core.store.results import tidy
from core.terms.rules import FLAT_FACTOR, REACH_FACTOR

COLUMNS = ("model", "seq_len", "d_model", "distance", "grad_norm", "relative", "reach", "params", "rnn_radius",
           "forget_bias", "compute_ms", "status", "note", "seed")  # fmt: skip
TEXT = ("model",)  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ()
JACOBIAN_CHUNK = 64  # Jacobian rows per backward pass, so memory stays bounded at large width


@dataclasses.dataclass(frozen=True)
class GradientReachConfig:
    # by default the chapter's, and attention over an LSTM (#17)
    models: tuple[str, ...] = tagged(
        "gradient_reach", "gradient_reach:quick", help="which layers to compare (page 5's mixers included)"
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


PRESETS = {
    "quick": {"seq_len": 200, "d_model": 64},
    "tiny": {"seq_len": 16, "d_model": 8},  # for testing the command line and scripts/gpu_reference.sh
    # scripts/gpu_reference.sh's preset, for its limit of 20 s (sizing: docs/GPU.md)
    "gpu": {"seq_len": 1000, "d_model": 128},
    "full": {"seq_len": 1000, "d_model": 128},
}


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
    out = Rows(len(cfg.models), on_progress)
    for name in cfg.models:
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
            **copied(cfg, "seq_len", "d_model", "seed"),
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
        out.add(new, f"{name} T={cfg.seq_len}", advance=1)
    return tidy(out.rows, COLUMNS)


def path_length(model: str) -> str:
    """Vaswani et al. 2017, Table 1: maximum path length between two positions, for a layer of this family."""
    known = registry.MODELS.get(model)  # its Table 1 row's, as the home page's Table 1 says
    if known is not None and known.table1:
        return known.path
    return "O(n)" if registry.family_of(model) == registry.RECURRENT else "O(1)"


def reach_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per model and run: the measured reach (NaN = never fell REACH_FACTOR× within T) beside Table 1's path length."""
    keys = [k for k in ("run", "model") if k in df.columns]
    rows = df.drop_duplicates(keys)[keys + ["seq_len", "reach"]].copy()
    rows["path_length"] = rows["model"].map(path_length)
    return rows.reset_index(drop=True)


def _at(df: pd.DataFrame, model: str, k: int) -> float:
    hit = df[(df["model"] == model) & (df["distance"] == k)]["grad_norm"]
    return float(hit.iloc[0]) if len(hit) else math.nan


def _levels_off(sub: pd.DataFrame, far: int) -> bool:
    """Falls from k = 1 and then holds: from k = `far` on, within a factor of 100 and below the value at k = 1."""
    tail = sub[sub["distance"] >= far]["grad_norm"]
    g1 = _at(sub, sub["model"].iloc[0], 1)
    return len(tail) > 1 and tail.min() > 0 and tail.max() / tail.min() < 100 and tail.max() < g1


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Per model: the norm at k=1 and far back, and whether it decays (with its reach), stays flat, falls and then
    levels off, or grows."""
    if df is None or not len(df) or "grad_norm" not in df:
        return []
    out = []
    T = int(df["seq_len"].max())
    far = max(1, min(T - 1, 50))
    kinds = {}
    for model in dict.fromkeys(df["model"].dropna()):  # a status row ('stopped': a time limit) names no model
        name = tr(f"long_range.model.{model}")
        sub = df[(df["model"] == model) & (df["status"] == "ok")]
        if not len(sub):
            out.append(tr("long_range.reach.take.diverged", model=name))
            continue
        g1, gfar = _at(sub, model, 1), _at(sub, model, far)
        back = sub[sub["distance"] >= 1]["grad_norm"]
        r = float(sub["reach"].iloc[0])
        values = {"model": name, "g1": sci(g1), "k": far, "gfar": sci(gfar), "T": T - 1}  # T: farthest k
        if not math.isnan(r):
            kinds[model] = "decay"
            zeros = int((back == 0).sum())
            out.append(
                tr("long_range.reach.take.decay", reach=int(r), factor=f"{REACH_FACTOR:,.0f}", **values)
                + (tr("ui.sentence_sep") + tr("long_range.reach.take.underflow", n=zeros) if zeros else "")
            )
        elif back.min() > 0 and back.max() / back.min() < FLAT_FACTOR:
            kinds[model] = "flat"
            out.append(tr("long_range.reach.take.flat", lo=sci(back.min()), hi=sci(back.max()), **values))
        elif _levels_off(sub, far):  # a direct path beside a decaying one (attention over a recurrence's states)
            kinds[model] = "floor"
            tail = sub[sub["distance"] >= far]["grad_norm"]
            out.append(tr("long_range.reach.take.floor", lo=sci(tail.min()), hi=sci(tail.max()), **values))
        else:
            kinds[model] = "grows"
            out.append(tr("long_range.reach.take.grows", **values))
    decaying = [m for m, k in kinds.items() if k == "decay"]
    attention = registry.representative(ATTENTION, kinds)
    if attention is not None and kinds.get(attention) == "flat" and decaying:
        reaches = df.drop_duplicates("model").set_index("model")["reach"]
        out.append(
            tr(
                "long_range.reach.take.contrast",
                models=listing([tr(f"long_range.model.{m}") for m in decaying], tr),
                reach=int(max(reaches[m] for m in decaying)),
                T=T - 1,
            )
        )
    return out


EXPERIMENT = Experiment(
    "gradient_reach",
    GradientReachConfig,
    run,
    PRESETS,
    "‖∂y_T/∂x_(T−k)‖ at initialisation for every distance k: RNN/LSTM/GRU vs an attention block",
    takeaways,
    point=("model",),
)
