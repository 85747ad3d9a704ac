"""What page 5 and the home page conclude about gradient reach: where each mixer's gradient ends (a window's or
kernel's receptive field) or decays, against Table 1's path lengths."""

from __future__ import annotations

import math

import pandas as pd

from core.findings.answers import names_text, ok_rows
from core.models import registry
from core.models.registry import ANSWERS, CONVOLUTION, RECURRENT, Spec, family_of


def reach_profiles(df: pd.DataFrame | None) -> pd.DataFrame:
    """Per model: its Table 1 row, where its gradient ends exactly (a window's or kernel's receptive field), and
    its decay reach (the first distance REACH_FACTOR× below distance 1)."""
    ok = ok_rows(df)
    rows = []
    for m, g in ok.groupby("model", sort=False) if len(ok) else ():
        g = g.sort_values("distance")
        nonzero = g[g["grad_norm"] > 0]["distance"]
        T = int(g["distance"].max()) + 1
        end = int(nonzero.max()) + 1 if len(nonzero) else 0
        back = g[g["distance"] >= 1]["grad_norm"]
        table1 = registry.get(m).table1 if registry.has(m, ANSWERS) else None  # else the chapter's layers
        table1 = table1 or ("recurrent" if family_of(m) == RECURRENT else "self_attention")
        # an end only for a window or receptive field: a recurrence's far gradients can underflow to 0 too
        ends = table1 in ("restricted", "convolutional") and end < T
        rows.append(
            {
                "model": m,
                "table1": table1,
                "T": T,
                "end": end if ends else math.nan,
                "reach": float(g["reach"].iloc[0]),
                "lo": float(back.min()),
                "hi": float(back.max()),
                "d_model": int(g["d_model"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


def reach_takeaways(df: pd.DataFrame, tr) -> list[str]:
    prof = reach_profiles(df)
    if not len(prof):
        return []
    out = []
    decays = prof[prof["reach"].notna() & prof["end"].isna()]
    if len(decays):
        lo, hi = int(decays["reach"].min()), int(decays["reach"].max())
        out.append(tr("answers.take.decay", names=names_text(decays["model"], tr), lo=lo, hi=hi))
    for _, r in prof[prof["end"].notna() & prof["model"].isin(registry.names(ANSWERS))].iterrows():
        spec, end = Spec(r["d_model"]), int(r["end"]) - 1
        if registry.get(r["model"]).family == CONVOLUTION:  # a stack of kernels of size k: k^levels tokens
            k, levels = spec.kernel, spec.levels
            out.append(tr("answers.take.field", end=end, k=k, levels=levels, field=k**levels))
        else:
            layers = registry.get(r["model"]).reach_depth
            out.append(tr("answers.take.window_reach", end=end, layers=layers, r=spec.window, per=spec.window - 1))
    level = prof[prof["reach"].isna() & prof["end"].isna() & (prof["lo"] > 0)]
    if len(level):
        out.append(tr("answers.take.kept", names=names_text(level["model"], tr), T=int(level["T"].max()) - 1))
    return out
