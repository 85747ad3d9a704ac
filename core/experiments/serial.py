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

from core import bench, fit, guard, roofline
from core import flops as fl
from core.config import Experiment, Progress, spec
from core.device import DEVICES, environment, resolve_device
from core.i18n import translator
from core.models import LoopLSTMLM, RecurrentLM, TransformerLM, n_heads_for, n_params
from core.results import tidy

MODELS = ("rnn", "lstm", "gru", "lstm_loop", "transformer")
RECURRENT_MODELS = ("rnn", "lstm", "gru", "lstm_loop")
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
    models: tuple[str, ...] = spec(MODELS, choices=MODELS, help="which models to compare")
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
    if name == "lstm_loop":
        return LoopLSTMLM(cfg.vocab_size, cfg.d_model, cfg.n_layers)
    if name == "transformer":
        return TransformerLM(cfg.vocab_size, cfg.d_model, cfg.n_layers, n_heads_for(cfg.d_model), norm="pre")
    return RecurrentLM(name, cfg.vocab_size, cfg.d_model, cfg.n_layers)


def seq_steps(model: str, seq_len: int, n_layers: int) -> int:
    """Dependent steps on the critical path of one forward pass: T per recurrent layer, 1 per Transformer layer."""
    return n_layers if model == "transformer" else seq_len * n_layers


def predicted_bytes(model: str, cfg: SerialConfig, seq_len: int) -> float:
    """A generous estimate of a point's peak memory, for the guard: activations, logits, weights, Adam-free SGD."""
    B, T, d, L, V = cfg.batch_size, seq_len, cfg.d_model, cfg.n_layers, cfg.vocab_size
    per_token_layer = 40 * d if model == "transformer" else 12 * d
    attn = 0  # SDPA keeps no T×T matrix
    activations = B * T * (L * per_token_layer + 4 * V + 2 * d) * 4
    weights = 4 * (L * 12 * d * d + 2 * V * d) * 4
    return 2.0 * (activations + attn) + weights


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
    flops = fl.training_step(fl.model_forward(name, cfg.batch_size, seq_len, cfg.d_model, cfg.n_layers, cfg.vocab_size))
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
            "seq_steps": seq_steps(name, T, cfg.n_layers),
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


def scaling_exponents(df: pd.DataFrame) -> pd.DataFrame:
    """Per model and run (or device): fitted log-log slope of step time and of saved bytes against seq_len."""
    ok = df[df["status"] == "ok"]
    by = "run" if "run" in ok.columns else "device"
    rows = []
    for (model, run), g in ok.groupby(["model", by], sort=False):
        rows.append(
            {
                "model": model,
                by: run,
                "time_slope": fit.tail_slope(g["seq_len"], g["train_ms"]),
                "memory_slope": fit.tail_slope(g["seq_len"], g["saved_bytes"]),
                "points": len(g),
            }
        )
    return pd.DataFrame(rows)


def hardware_for(df: pd.DataFrame, tr=None) -> list[roofline.Hardware]:
    """This device as measured (peak matmul FLOP/s, tiny-recurrence step latency), then the assumed GPU."""
    tr = tr or translator("en")
    ok = df[df["status"] == "ok"]
    hw = []
    if len(ok):
        peak, lat = float(ok["peak_flops_per_s"].median()), float(ok["step_latency_s"].median())
        label = tr("serial.hw.measured", gflops=f"{peak / 1e9:.0f}", us=f"{lat * 1e6:.0f}")
        hw.append(roofline.Hardware(label, peak, lat, True))
    gpu = roofline.DATACENTRE_GPU
    label = tr("serial.hw.assumed", tflops=f"{gpu.peak_flops_per_s / 1e12:.0f}", us=f"{gpu.step_latency_s * 1e6:.0f}")
    hw.append(dataclasses.replace(gpu, name=label))
    return hw


def roofline_frame(df: pd.DataFrame, tr=None, models=("lstm", "transformer")) -> pd.DataFrame:
    """The model's predicted step time for each hardware preset, at the lengths and shapes measured in `df`."""
    ok = df[(df["status"] == "ok") & df["model"].isin(models)]
    rows = []
    for hw in hardware_for(df, tr):
        for _, r in ok.drop_duplicates(["model", "seq_len"]).iterrows():
            ms = roofline.predict_ms(r["flops"], int(r["seq_steps"]), hw)
            rows.append(
                {
                    "hardware": hw.name,
                    "model": r["model"],
                    "seq_len": int(r["seq_len"]),
                    "predicted_ms": ms,
                    "bound": roofline.bound(r["flops"], int(r["seq_steps"]), hw),
                    "measured": hw.measured,
                }
            )
    return pd.DataFrame(rows)


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Sentences computed from the rows of one run (one device)."""
    ok = df[df["status"] == "ok"].drop_duplicates(["model", "seq_len"], keep="last")
    if not len(ok):
        return [tr("serial.take.none")]
    out = []
    T = int(ok["seq_len"].max())
    at = ok[ok["seq_len"] == T].set_index("model")
    fastest = at["train_ms"].idxmin()
    out.append(tr("serial.take.fastest", T=T, model=fastest, ms=f"{at.loc[fastest, 'train_ms']:.3g}"))
    if {"lstm", "transformer"} <= set(at.index):
        lstm, tf = at.loc["lstm"], at.loc["transformer"]
        ratio = tf["train_ms"] / lstm["train_ms"]
        key = "serial.take.tf_slower" if ratio > 1 else "serial.take.tf_faster"
        out.append(
            tr(
                key,
                T=T,
                ratio=f"{max(ratio, 1 / ratio):.2g}",
                lstm_steps=int(lstm["seq_steps"]),
                tf_steps=int(tf["seq_steps"]),
                flop_ratio=f"{tf['flops'] / lstm['flops']:.2g}",
                gflops=f"{lstm['peak_flops_per_s'] / 1e9:.0f}",
            )
        )
        out.append(
            tr("serial.take.utilization", tf=f"{100 * tf['utilization']:.0f}", lstm=f"{100 * lstm['utilization']:.0f}")
        )
        if "lstm_loop" in at.index:
            out.append(
                tr(
                    "serial.take.loop",
                    ratio=f"{at.loc['lstm_loop', 'train_ms'] / lstm['train_ms']:.2g}",
                    util=f"{100 * at.loc['lstm_loop', 'utilization']:.0f}",
                )
            )
        gpu = next(h for h in hardware_for(ok, tr) if not h.measured)
        pl = roofline.predict_ms(lstm["flops"], int(lstm["seq_steps"]), gpu)
        pt = roofline.predict_ms(tf["flops"], int(tf["seq_steps"]), gpu)
        out.append(
            tr(
                "serial.take.model_gpu",
                T=T,
                lstm=f"{pl:.2g}",
                tf=f"{pt:.2g}",
                bound=tr(f"serial.bound.{roofline.bound(lstm['flops'], int(lstm['seq_steps']), gpu)}"),
            )
        )
    slopes = scaling_exponents(ok).set_index("model")
    rec = [m for m in ("lstm", "gru", "rnn") if m in slopes.index and slopes.loc[m, "points"] >= 2]
    if rec:
        m = rec[0]
        g = ok[ok["model"] == m]  # its own longest length: a stopped run may not have reached T with every model
        longest = g[g["seq_len"] == g["seq_len"].max()].iloc[0]
        out.append(
            tr(
                "serial.take.memory",
                model=m,
                slope=f"{slopes.loc[m, 'memory_slope']:.2f}",
                T=int(longest["seq_len"]),
                mib=f"{longest['saved_bytes'] / 2**20:.3g}",
            )
        )
    if "transformer" in slopes.index and "lstm" in slopes.index and slopes.loc["lstm", "points"] >= 2:
        out.append(
            tr(
                "serial.take.slopes",
                lstm=f"{slopes.loc['lstm', 'time_slope']:.2f}",
                tf=f"{slopes.loc['transformer', 'time_slope']:.2f}",
            )
        )
    noisy = int(ok["noisy"].astype(bool).sum()) if "noisy" in ok else 0
    if noisy:
        out.append(tr("serial.take.noisy", n=noisy))
    return out


EXPERIMENT = Experiment(
    "serial",
    SerialConfig,
    run,
    PRESETS,
    "training-step time, FLOP/s and BPTT memory vs sequence length: RNN/LSTM/GRU vs Transformer",
    takeaways,
)
