"""Page 3's instant view: each layer's gradient norm at initialisation in stacks of L layers (the depth reference's
`init` rows): a plain LSTM stack, a residual one, and Post-LN and Pre-LN Transformers."""

from __future__ import annotations

import pandas as pd

from core.terms import status

SHOWN = ("lstm", "lstm_residual", "post_ln", "pre_ln")


def depths(rows: pd.DataFrame) -> list[int]:
    init = rows[(rows["phase"] == "init") & rows["model"].isin(SHOWN)]
    return sorted(int(n) for n in init["n_layers"].unique())


def layers(rows: pd.DataFrame, n_layers: int) -> pd.DataFrame:
    """model, layer (1 = the first, nearest the input), grad_norm: seed 0's rows at initialisation."""
    init = rows[
        (rows["phase"] == "init")
        & (rows["n_layers"] == n_layers)
        & rows["model"].isin(SHOWN)
        & rows["layer"].notna()
        & (rows["status"] == status.OK)
    ]
    init = init[init["seed"] == init["seed"].min()] if len(init) else init
    out = init[["model", "layer", "grad_norm"]].copy()
    out["layer"] = out["layer"].astype(int)
    return out.sort_values(["model", "layer"]).reset_index(drop=True)


def ratios(frame: pd.DataFrame) -> dict[str, float]:
    """Per model: the first layer's gradient norm ÷ the last layer's."""
    out = {}
    for model, g in frame.groupby("model", sort=False):
        g = g.sort_values("layer")
        if len(g) and g["grad_norm"].iloc[-1] > 0:
            out[model] = float(g["grad_norm"].iloc[0] / g["grad_norm"].iloc[-1])
    return out


def ratio_text(r: float) -> str:
    return f"{r:.2g}" if 0.01 <= r < 100 else f"{r:.1e}"


def lines(frame: pd.DataFrame, n_layers: int, tr) -> list[str]:
    r = ratios(frame)
    if not r:
        return []
    parts = [tr("depth.instant.model_ratio", model=tr(f"depth.model.{m}"), ratio=ratio_text(v)) for m, v in r.items()]
    return [tr("depth.instant.ratio", n=n_layers, models=tr("instant.list_sep").join(parts))]
