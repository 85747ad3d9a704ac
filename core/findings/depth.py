"""What the depth page and the home page conclude from depth rows: outcomes, gradient profiles, takeaways.

The variants compared (plain vs residual LSTM stack, Post-LN vs Pre-LN, Pre-LN without its skip
connection) are found by their records' facts in the model registry, not by their names.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import pandas as pd

from core.findings import sci
from core.models import registry
from core.models.registry import ATTENTION, RECURRENT
from core.terms.rules import FINAL_FRACTION, LEARNED_FRACTION, UNDERFLOW

COLUMNS = ("model", "n_layers", "layer", "step", "phase", "grad_norm", "loss", "lr", "lr_now", "warmup_steps", "clip",
           "clipped", "seed", "d_model", "vocab_size", "noise", "seq_len", "batch_size", "status", "note",
           "predicted_bytes")  # fmt: skip
TEXT = ("model", "phase")  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ("clipped",)


class Roles(NamedTuple):
    """The depth page's variants by what they are, each a registered kind's name (None if none is registered)."""

    plain: str | None  # an LSTM stack without skip connections
    residual: str | None  # the same with GNMT's residual connections
    post: str | None  # Transformer, LayerNorm after each residual sum (2017)
    pre: str | None  # Transformer, LayerNorm inside each branch (GPT-2)
    no_skip: str | None  # Pre-LN blocks with the skip connection removed


def roles() -> Roles:
    among = registry.names("depth")
    return Roles(
        registry.find(among, family=RECURRENT, residual=False),
        registry.find(among, family=RECURRENT, residual=True),
        registry.find(among, family=ATTENTION, norm="post", residual=True),
        registry.find(among, family=ATTENTION, norm="pre", residual=True),
        registry.find(among, family=ATTENTION, residual=False),
    )


def chain_entropy(vocab_size: int, noise: float) -> float:
    """The best achievable loss (nats): entropy of the next token given the current one."""
    p_hit = 1 - noise + noise / vocab_size
    p_other = noise / vocab_size
    h = -p_hit * math.log(p_hit)
    if p_other > 0:
        h -= (vocab_size - 1) * p_other * math.log(p_other)
    return h


def to_frame(rows) -> pd.DataFrame:
    """The result frame: every column of COLUMNS present (NaN where absent), `layer` as a nullable integer; from row
    dicts or a frame, so a page's partial live rows read the same as a finished run."""
    df = pd.DataFrame(rows).copy()
    for c in COLUMNS:
        if c not in df.columns:
            df[c] = math.nan
    df = df[list(COLUMNS) + [c for c in df.columns if c not in COLUMNS]]
    df["layer"] = df["layer"].astype("Int64")  # empty for whole-model rows
    return df


def loss_bounds(df: pd.DataFrame) -> tuple[float, float]:
    """(ceiling, floor) of the loss, both formulas: log(vocab) for a uniform guess, the chain's entropy."""
    V, noise = int(df["vocab_size"].iloc[0]), float(df["noise"].iloc[0])
    return math.log(V), chain_entropy(V, noise)


RUN_KEYS = ("model", "n_layers", "warmup_steps", "seed", "lr", "clip")


SUMMARY = ("status", "final_loss", "gap_closed", "outcome", "diverged_step", "clipped_share", "logged_steps")


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per training run: final loss, share of the learnable gap closed, outcome, divergence, clipping.
    outcome: 'trained' (closed ≥ LEARNED_FRACTION of log V − entropy), 'stalled', 'diverged', 'skipped'/'oom'."""
    keys = [*RUN_KEYS, *(c for c in ("source", "device") if c in df.columns)]
    if df is None or not len(df) or "phase" not in df:
        return pd.DataFrame(columns=[*keys, *SUMMARY])
    if "layer" in df:  # the whole-model training rows first: to_frame copies what it is given
        df = df[(df["phase"] == "train") & df["layer"].isna()]
    df = to_frame(df)
    out = []
    for key, g in df[(df["phase"] == "train") & df["layer"].isna()].groupby(keys, sort=False, dropna=False):
        ceiling, floor = loss_bounds(g)
        ok = g[g["status"] == "ok"].sort_values("step")
        bad = g[g["status"] != "ok"]
        status = "diverged" if (bad["status"] == "diverged").any() else (bad["status"].iloc[0] if len(bad) else "ok")
        final = float(ok["loss"].tail(max(1, math.ceil(FINAL_FRACTION * len(ok)))).mean()) if len(ok) else math.nan
        gap = (ceiling - final) / (ceiling - floor) if len(ok) else math.nan
        outcome = status if status != "ok" else "trained" if gap >= LEARNED_FRACTION else "stalled"
        diverged = float(bad["step"].min()) if status == "diverged" else math.nan
        clipped = float(ok["clipped"].astype(bool).mean()) if len(ok) else math.nan
        out.append(dict(zip([*keys, *SUMMARY], (*key, status, final, gap, outcome, diverged, clipped, len(ok)))))
    return pd.DataFrame(out, columns=[*keys, *SUMMARY])


def init_profile(df: pd.DataFrame) -> pd.DataFrame:
    """Per-layer gradient norm at initialisation, geometric mean over seeds: model, n_layers, layer, grad_norm."""
    init = to_frame(df) if len(df) and "phase" in df else pd.DataFrame()
    init = init[(init["phase"] == "init") & (init["status"] == "ok") & init["layer"].notna()] if len(init) else init
    if not len(init):
        return pd.DataFrame(columns=["model", "n_layers", "layer", "grad_norm"])
    logs = init.assign(log_g=lambda x: x["grad_norm"].astype(float).clip(lower=1e-300).map(math.log))
    g = logs.groupby(["model", "n_layers", "layer"], sort=False)["log_g"].mean().map(math.exp)
    return g.rename("grad_norm").reset_index()


def number(x: float) -> str:
    """Two significant digits; a geometric mean that hit the 1e-300 floor was an exact 0 (float underflow)."""
    if not math.isfinite(x):
        return "–"
    return "0" if x <= 1e-299 else sci(x, 2)


def lstm_contrast(df: pd.DataFrame) -> dict | None:
    """At initialisation: the plain LSTM stack's first-layer gradient at d0 and d1 layers, its last layer's at d1,
    the loss factor per added layer, and the residual stack's first and last layer at d1 (NaN if not run)."""
    R = roles()
    prof = init_profile(df)
    if not len(prof):
        return None
    first = prof[prof["layer"] == 1].set_index(["model", "n_layers"])["grad_norm"]
    last = prof[prof["layer"] == prof["n_layers"]].set_index(["model", "n_layers"])["grad_norm"]
    if R.plain not in first.index.get_level_values(0):
        return None
    g = first[R.plain].sort_index()
    if len(g) < 2:
        return None
    d0, d1 = int(g.index[0]), int(g.index[-1])
    # per-layer loss over the depths whose gradient is still well above float underflow
    usable = g[g > UNDERFLOW]
    dd = int(usable.index[-1]) if len(usable) >= 2 else d1
    factor = (g.iloc[0] / g[dd]) ** (1 / (dd - d0)) if g[dd] > 0 and dd > d0 else math.inf
    return {
        "d0": d0,
        "d1": d1,
        "g0": float(g.iloc[0]),
        "g1": float(g.iloc[-1]),
        "factor": float(factor),
        "top": float(last.get((R.plain, d1), math.nan)),
        "residual": R.residual,
        "res_g": float(first.get((R.residual, d1), math.nan)),
        "res_top": float(last.get((R.residual, d1), math.nan)),
    }
