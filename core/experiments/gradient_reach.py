"""Bottleneck 2a, gradient reach: how strongly the last output of a layer depends on an input k steps back.

For one layer at initialisation and a random input of length T, the Frobenius norm of the Jacobian
∂y_T/∂x_{T−k} for every distance k. A recurrent layer multiplies k step Jacobians along the path, so the norm
decays (or explodes) exponentially with k (Pascanu, Mikolov & Bengio 2013); in self-attention every earlier
position is one step away (path length O(1), Vaswani et al. 2017, Table 1), so the norm stays flat.
The measurement (config, run, columns) is core.workloads.reach's, which answers_reach runs over page 5's mixers;
this experiment's own are its presets and takeaways.
"""

from __future__ import annotations

import math

import pandas as pd

from core.config import Experiment
from core.findings import listing, sci
from core.models import registry
from core.models.registry import ATTENTION
from core.terms.rules import FLAT_FACTOR, REACH_FACTOR
from core.workloads.reach import GradientReachConfig, run  # the page reads them here too

PRESETS = {
    "quick": {"seq_len": 200, "d_model": 64},
    "tiny": {"seq_len": 16, "d_model": 8},  # for testing the command line and scripts/gpu_reference.sh
    # scripts/gpu_reference.sh's preset, for its limit of 20 s (sizing: docs/GPU.md)
    "gpu": {"seq_len": 1000, "d_model": 128},
    "full": {"seq_len": 1000, "d_model": 128},
}


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
