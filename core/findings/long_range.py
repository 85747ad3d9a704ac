"""What the long-range page and the home page conclude from training rows: final accuracy per distance, which
distances each model solved, and the contrast between the recurrent and the attention model."""

from __future__ import annotations

import math

import pandas as pd

from core.findings import labelled, listing
from core.models import registry
from core.models.registry import ATTENTION, RECURRENT
from core.terms import status
from core.terms.rules import SOLVED

COLUMNS = ("task", "model", "distance", "step", "loss", "accuracy", "chance")


def final(df: pd.DataFrame) -> pd.DataFrame:
    """The last row of every (task, model, distance, seed) run: its final accuracy, or its divergence."""
    if df is None or not len(df):
        return pd.DataFrame(columns=list(COLUMNS))
    keys = [k for k in ("source", "device", "task", "model", "distance", "seed") if k in df.columns]
    return df.sort_values("step").groupby(keys, as_index=False, sort=False).tail(1).sort_values(keys)


def by_distance(df: pd.DataFrame) -> pd.DataFrame:
    """Per (task, model, distance) over its seeds' final rows that trained: the median accuracy, the lowest and the
    highest, the number of seeds, the most steps any of them took, its parameters and chance."""
    last = final(df)
    if "status" in last:
        last = last[last["status"] == status.OK]
    return over_seeds(last, ("task", "model", "distance"), ("params", "chance"))


def over_seeds(last: pd.DataFrame, keys, first) -> pd.DataFrame:
    """Per `keys` (within each source, device and run given) over the seeds' final rows `last`: the median accuracy,
    the lowest and the highest, the number of seeds, the most steps, and each `first` column's first value."""
    if not len(last):
        return pd.DataFrame(columns=[*keys, "accuracy", "lo", "hi", "seeds", "step", *first])
    keys = [k for k in ("source", "device", "run", *keys) if k in last.columns]
    out = last.groupby(keys, sort=False).agg(
        accuracy=("accuracy", "median"),
        lo=("accuracy", "min"),
        hi=("accuracy", "max"),
        seeds=("accuracy", "size"),
        step=("step", "max"),
        **{c: (c, "first") for c in first if c in last},
    )
    return out.reset_index().sort_values(keys).reset_index(drop=True)


def first_task(df: pd.DataFrame | None) -> str | None:
    """The task a run trained first (in its rows' order, not the alphabet's)."""
    if df is None or not len(df) or "task" not in df:
        return None
    return str(df["task"].iloc[0])


def chapter_pair(df: pd.DataFrame | None) -> dict | None:
    """The chapter's contrast: on the first task, at the longest distance both families trained, each one's median
    accuracy over ok seeds, with chance and the most steps taken; None without such a distance."""
    stats, task = by_distance(df), first_task(df)
    t = stats[(stats["task"] == task) & stats["accuracy"].notna()] if len(stats) else stats
    if not len(t):
        return None
    models = {f: registry.representative(f, t["model"]) for f in (RECURRENT, ATTENTION)}
    if None in models.values():
        return None
    common = set(t[t["model"] == models[RECURRENT]]["distance"]) & set(t[t["model"] == models[ATTENTION]]["distance"])
    if not common:
        return None
    d = max(common)
    at = t[t["distance"] == d].set_index("model")
    out = {
        "task": task,
        "distance": int(d),
        "chance": float(at["chance"].iloc[0]),
        "steps": int(at["step"].max()),
    }
    return out | {
        f: {"model": m, "accuracy": float(at.loc[m, "accuracy"]), "step": int(at.loc[m, "step"])}
        for f, m in models.items()
    }


def pct(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:.0f}%"


def seed_spread(r, tr) -> str:
    """' (n seeds: lo–hi)' after a median, nothing for a single seed."""
    return tr("long_range.take.spread", n=int(r.seeds), lo=pct(r.lo), hi=pct(r.hi)) if r.seeds > 1 else ""


TASK_ORDER = ("recall", "mqar")  # one name, then several pairs: the order the page's question tells them in
ANSWERING = ("contrast", "lstm_held", "tfm_failed")  # the kinds of takeaway that answer the page's question


def task_order(tasks) -> list[str]:
    """The tasks among `tasks` in TASK_ORDER, any other after them: the same order in every language."""
    return [t for t in TASK_ORDER if t in set(tasks)] + [t for t in dict.fromkeys(tasks) if t not in TASK_ORDER]


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Per task: up to which distance each model solved it (median over seeds, with their range), where it stayed
    near chance, and the honest caveat."""
    return [line for _, line in _takeaways(df, tr)]


def answering(df: pd.DataFrame, tr) -> list[str]:
    """The takeaways that answer the page's question: per task, whether the Transformer solved a distance the LSTM
    did not."""
    return [line for kind, line in _takeaways(df, tr) if kind in ANSWERING]


def _takeaways(df: pd.DataFrame, tr) -> list[tuple[str, str]]:
    """The takeaways as (kind, sentence), kind the catalogue key's last part ('model', 'contrast', …)."""
    stats = by_distance(df)
    last = final(df)
    if not len(last):
        return []
    out = []
    for task_id in task_order(last["task"]):
        t = stats[stats["task"] == task_id]
        mine = last[last["task"] == task_id]
        task, steps = tr(f"long_range.task.{task_id}"), int(mine["step"].max())
        chance = pct(float(mine["chance"].iloc[0]))
        solved = {}
        for model in dict.fromkeys(mine["model"]):
            m = t[t["model"] == model].sort_values("distance")
            name = tr(f"long_range.model.{model}")
            if not len(m):
                out.append(("diverged", tr("long_range.take.diverged", task=task, model=name)))
                continue
            solved[model] = (m[m["accuracy"] >= SOLVED], m[m["accuracy"] < SOLVED])
            accs = tr("long_range.take.sep").join(  # 'd=…: accuracy (spread), d=…: …' in the page's punctuation
                labelled(f"d={int(r.distance)}", pct(r.accuracy) + seed_spread(r, tr), tr) for r in m.itertuples()
            )
            params, trained = f"{int(m['params'].iloc[0]):,}", int(m["step"].max())
            said = {"task": task, "model": name, "params": params, "steps": trained}
            out.append(("model", tr("long_range.take.model", **said, accs=accs, chance=chance)))
        rec, att = (registry.representative(f, solved) for f in (RECURRENT, ATTENTION))
        if rec is None or att is None:
            continue
        lstm, tfm = solved[rec], solved[att]
        beaten = [d for d in lstm[1]["distance"] if d in set(tfm[0]["distance"])]
        if beaten:
            d = max(beaten)
            worst = lstm[1][lstm[1]["distance"] == d].iloc[0]
            acc, distances = pct(worst.accuracy) + seed_spread(worst, tr), listing([str(int(d)) for d in beaten], tr)
            said = {"task": task, "distances": distances, "acc": acc, "chance": chance, "steps": steps}
            out.append(("contrast", tr("long_range.take.contrast", **said)))
            at = t[t["distance"] == d].set_index("model")
            for other in [m for m in solved if m not in (rec, att) and m in at.index]:  # e.g. attention over an LSTM
                r, tf = at.loc[other], at.loc[att]
                said = {"task": task, "model": tr(f"long_range.model.{other}"), "d": int(d)}
                accs = {"acc": pct(r.accuracy) + seed_spread(r, tr), "tfm": pct(tf.accuracy)}
                out.append(("other", tr("long_range.take.other", **said, **accs, lstm=pct(worst.accuracy))))
        elif not len(lstm[1]):
            said = {"task": task, "steps": steps, "d": int(lstm[0]["distance"].max())}
            out.append(("lstm_held", tr("long_range.take.lstm_held", **said)))
        if len(tfm[1]):
            distances = listing([f"{int(r.distance)}{seed_spread(r, tr)}" for r in tfm[1].itertuples()], tr)
            out.append(("tfm_failed", tr("long_range.take.tfm_failed", task=task, distances=distances, steps=steps)))
    return out
