"""What the long-range page and the home page conclude from training rows: final accuracy per distance, which
distances each model solved, and the contrast between the recurrent and the attention model. Torch-free."""

from __future__ import annotations

import math

import pandas as pd

from core import status
from core.models import registry
from core.models.registry import ATTENTION, RECURRENT
from core.rules import SOLVED

COLUMNS = ("task", "model", "distance", "step", "loss", "accuracy", "chance")


def final(df: pd.DataFrame) -> pd.DataFrame:
    """The last row of every (task, model, distance) run: its final accuracy, or its divergence."""
    if df is None or not len(df):
        return pd.DataFrame(columns=list(COLUMNS))
    keys = [k for k in ("source", "device", "task", "model", "distance") if k in df.columns]
    return df.sort_values("step").groupby(keys, as_index=False, sort=False).tail(1).sort_values(keys)


def _pct(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:.0f}%"


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Per task: up to which distance each model solved it, where it stayed near chance, and the honest caveat."""
    last = final(df)
    if not len(last):
        return []
    out = []
    for task_id in dict.fromkeys(last["task"]):
        t = last[last["task"] == task_id]
        task = tr(f"long_range.task.{task_id}")
        chance = float(t["chance"].iloc[0])
        steps = int(t["step"].max())
        solved = {}
        for model in dict.fromkeys(t["model"]):
            m = t[(t["model"] == model) & (t["status"] == status.OK)].sort_values("distance")
            if not len(m):
                out.append(tr("long_range.take.diverged", task=task, model=tr(f"long_range.model.{model}")))
                continue
            ok = m[m["accuracy"] >= SOLVED]["distance"].tolist()
            fail = m[m["accuracy"] < SOLVED]
            solved[model] = (ok, fail)
            accs = ", ".join(f"d={int(r.distance)}: {_pct(r.accuracy)}" for r in m.itertuples())
            out.append(
                tr(
                    "long_range.take.model",
                    task=task,
                    model=tr(f"long_range.model.{model}"),
                    params=f"{int(m['params'].iloc[0]):,}",
                    steps=steps,
                    accs=accs,
                    chance=_pct(chance),
                )
            )
        lstm, tfm = (solved.get(registry.representative(f, solved)) for f in (RECURRENT, ATTENTION))
        if lstm is None or tfm is None:
            continue
        lstm_fail = lstm[1]["distance"].tolist()
        beaten = [d for d in lstm_fail if d in tfm[0]]
        if beaten:
            worst = lstm[1][lstm[1]["distance"] == max(beaten)]["accuracy"].iloc[0]
            out.append(
                tr(
                    "long_range.take.contrast",
                    task=task,
                    distances=", ".join(str(int(d)) for d in beaten),
                    acc=_pct(worst),
                    chance=_pct(chance),
                    steps=steps,
                )
            )
        elif not lstm_fail:
            out.append(tr("long_range.take.lstm_held", task=task, steps=steps, d=int(max(lstm[0]))))
        if len(tfm[1]):
            out.append(
                tr(
                    "long_range.take.tfm_failed",
                    task=task,
                    distances=", ".join(str(int(d)) for d in tfm[1]["distance"]),
                    steps=steps,
                )
            )
    return out
