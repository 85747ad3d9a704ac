"""Page 2's instant view: the gradient that reaches token 0 from token d at initialisation (the gradient-reach
reference, exact Jacobian norms), and what trained models recall at the distances trained (the long_range
reference)."""

from __future__ import annotations

import pandas as pd

from core.findings import long_range as findings
from core.models import registry
from core.models.registry import ATTENTION, RECURRENT
from core.terms import status
from core.terms.i18n import device_words

SHOWN = ("rnn", "lstm", "attention")  # the gradient-reach rows drawn: a plain RNN, the LSTM, attention


def reach(rows: pd.DataFrame) -> pd.DataFrame:
    """The gradient-reach rows drawn: model, distance, the gradient norm relative to distance 1's."""
    ok = rows[(rows["status"] == status.OK) & rows["model"].isin(SHOWN) & (rows["distance"] >= 1)]
    return ok[["model", "distance", "relative"]].sort_values(["model", "distance"]).reset_index(drop=True)


def at(frame: pd.DataFrame, d: int) -> dict[str, float]:
    """Each model's relative gradient at distance d (its last measured distance if d lies beyond)."""
    out = {}
    for model, g in frame.groupby("model", sort=False):
        g = g[g["distance"] <= d]
        if len(g):
            out[model] = float(g.iloc[-1]["relative"])
    return out


def first_zero(frame: pd.DataFrame, model: str) -> int | None:
    """The first distance at which `model`'s gradient underflows float32 to exactly 0 (None if it never does)."""
    zero = frame[(frame["model"] == model) & (frame["relative"] == 0)]
    return int(zero["distance"].min()) if len(zero) else None


def said_value(frame: pd.DataFrame, model: str, v: float, tr) -> str:
    if v == 0:
        return tr("long_range.instant.underflow", d=f"{first_zero(frame, model):,}")
    return f"{v:.1e}" if v < 0.01 else f"{v:.2f}"


def trained(rows: pd.DataFrame, d: int) -> pd.DataFrame:
    """Trained recall at the farthest distance trained that is ≤ d: per chapter model, the median accuracy over
    seeds with its lowest and highest, seeds, steps and chance (empty when nothing was trained that far)."""
    return trained_from(findings.by_distance(rows), d)


def trained_from(stats: pd.DataFrame, d: int) -> pd.DataFrame:
    """`trained` from the rows' findings.by_distance (computed once, read at every d)."""
    stats = stats[(stats["task"] == "recall") & (stats["distance"] <= d)] if len(stats) else stats
    if not len(stats):
        return stats
    far = stats["distance"].max()
    stats = stats[stats["distance"] == far]
    if "device" in stats:  # one run: the fullest device's at that distance
        stats = stats[stats["device"] == stats["device"].value_counts().idxmax()]
    pair = [registry.representative(f, stats["model"]) for f in (RECURRENT, ATTENTION)]
    return stats[stats["model"].isin([m for m in pair if m])].reset_index(drop=True)


def lines(frame: pd.DataFrame, trained_at: pd.DataFrame, d: int, tr) -> list[str]:
    values = at(frame, d)
    out = []
    if values:
        said = {m: said_value(frame, m, v, tr) for m, v in values.items()}
        out.append(tr("long_range.instant.reach", d=f"{d:,}", **{m: said.get(m, "–") for m in SHOWN}))
    if len(trained_at):
        far = int(trained_at["distance"].iloc[0])
        parts = [tr("long_range.instant.model_acc", model=tr(f"long_range.model.{r.model}"), acc=f"{100 * r.accuracy:.0f}",
                    lo=f"{100 * r.lo:.0f}", hi=f"{100 * r.hi:.0f}") for r in trained_at.itertuples()]  # fmt: skip
        r = trained_at.iloc[0]
        device = device_words(str(r["device"]), tr) if "device" in trained_at else ""
        out.append(tr("long_range.instant.trained", far=f"{far:,}", models=tr("instant.list_sep").join(parts), seeds=int(r["seeds"]),
                      device=device,
                      steps=f"{int(trained_at['step'].max()):,}", chance=f"{100 * r['chance']:.1f}"))  # fmt: skip
    return out
