"""What the recall-frontier rows say, computed from them: the smallest state at which each model recalled, who
stayed at chance, how recall fell as the pairs grew, and whether selectivity separated the models on selective
copying. The verdicts and the home page read it.

Rows come from core.experiments.recall_frontier: one per (task, mixer, width, pairs, seed, chunk of steps); a run's
final row is the one with its largest step.
"""

from __future__ import annotations

import pandas as pd

from core.findings import listing, model_name
from core.findings.long_range import over_seeds, pct, seed_spread
from core.harness.memory_formulas import KV_PAGE, format_bytes
from core.models import registry
from core.terms import status
from core.terms.rules import NEAR_CHANCE, SEPARATED, SOLVED

ATTENTION_MODEL = "transformer"
BYTES = 4  # float32
KEYS = ("task", "mixer", "d_model", "n_pairs")


def final(df: pd.DataFrame) -> pd.DataFrame:
    """Per (task, mixer, width, pairs) over its seeds' final rows that trained: the median accuracy, the lowest and
    the highest, the seeds, the most steps, the state and parameters, chance."""
    first = ("state_bytes", "params", "n_layers", "chance", "seq_len")
    if df is None or not len(df) or "state_bytes" not in df:
        return over_seeds(pd.DataFrame(), KEYS, first)
    runs = [k for k in ("source", "device", "run", *KEYS, "seed") if k in df.columns]
    last = df.sort_values("step").groupby(runs, as_index=False, sort=False).tail(1)
    return over_seeds(last[last["status"] == status.OK], KEYS, first)


def runs_shown(f: pd.DataFrame) -> list[pd.DataFrame]:
    """The final rows of each run shown (live, reference, uploaded), one frame each."""
    keys = [k for k in ("source", "device", "run") if k in f.columns]
    return [g for _, g in f.groupby(keys, sort=False)] if keys and len(f) else [f]


def _mqar(df: pd.DataFrame, pick) -> pd.DataFrame:
    """MQAR's final rows, `pick(rows)` of each run shown."""
    f = final(df)
    f = f[f["task"] == "mqar"]
    parts = [pick(g) for g in runs_shown(f) if len(g)]
    return pd.concat(parts, ignore_index=True) if parts else f


def frontier(df: pd.DataFrame) -> pd.DataFrame:
    """MQAR at the largest number of pairs each run measured: one point per (mixer, width)."""
    return _mqar(df, lambda g: g[g["n_pairs"] == g["n_pairs"].max()])


def _pairs_panel(g: pd.DataFrame) -> pd.DataFrame:
    """A run's rows at the width where it measured the most numbers of pairs (the smallest such width)."""
    counts = g.groupby("d_model")["n_pairs"].nunique()
    return g[g["d_model"] == int(counts[counts == counts.max()].index.min())]


def pairs_width(df: pd.DataFrame) -> int | None:
    """The width at which the most numbers of pairs were measured (the pairs panel's), in the first run shown."""
    pr = pairs(df)
    return int(pr["d_model"].iloc[0]) if len(pr) else None


def pairs(df: pd.DataFrame) -> pd.DataFrame:
    """MQAR at each run's pairs width, every number of pairs measured there."""
    return _mqar(df, _pairs_panel)


def copying(df: pd.DataFrame) -> pd.DataFrame:
    f = final(df)
    return f[f["task"] == "selective_copy"]


def at_chance(rows: pd.DataFrame) -> bool:
    """Every point within NEAR_CHANCE of chance (its best seed included)."""
    return bool(len(rows)) and bool((rows["hi"] < rows["chance"] + NEAR_CHANCE).all())


def smallest_recalling(rows: pd.DataFrame):
    """The point with the smallest state whose median accuracy reached SOLVED, or None."""
    ok = rows[rows["accuracy"] >= SOLVED].sort_values("state_bytes")
    return ok.iloc[0] if len(ok) else None


def _first_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """The pairs panel of the first run shown (the run its takeaways and verdict speak of)."""
    pr = pairs(df)
    return runs_shown(pr)[0] if len(pr) else pr


def fall(df: pd.DataFrame, model: str) -> dict | None:
    """At the pairs panel's width: `model`'s accuracy with the fewest and with the most pairs; None without both."""
    return _fall(_first_pairs(df), model)


def _fall(pr: pd.DataFrame, model: str) -> dict | None:
    if not len(pr) or pr["n_pairs"].nunique() < 2:
        return None
    rows = pr[pr["mixer"] == model].set_index("n_pairs")
    lo_p, hi_p = int(pr["n_pairs"].min()), int(pr["n_pairs"].max())
    if lo_p not in rows.index or hi_p not in rows.index:
        return None
    return {
        "model": model,
        "d": int(pr["d_model"].iloc[0]),
        "lo_p": lo_p,
        "hi_p": hi_p,
        "lo": float(rows.loc[lo_p, "accuracy"]),
        "hi": float(rows.loc[hi_p, "accuracy"]),
        "chance": float(rows["chance"].iloc[0]),
    }


def copy_groups(df: pd.DataFrame) -> dict | None:
    """Selective copying: the median accuracy of the mixers whose gates read the input (selective) and of those
    with a fixed decay or kernel (time-invariant), and the gap; None without both groups."""
    c = copying(df)
    if not len(c):
        return None
    kind = {m: registry.get(m).selective for m in c["mixer"] if m in registry.MODELS}
    sel = c[[kind.get(m) is True for m in c["mixer"]]]
    fixed = c[[kind.get(m) is False for m in c["mixer"]]]
    if not len(sel) or not len(fixed):
        return None
    a, b = float(sel["accuracy"].median()), float(fixed["accuracy"].median())
    return {
        "selective": sel,
        "fixed": fixed,
        "sel_acc": a,
        "fixed_acc": b,
        "gap": a - b,
        "separated": a - b >= SEPARATED,
    }


def fall_line(df: pd.DataFrame, tr) -> str | None:
    """'At width d, from a to b pairs: model x% → y%; …' for every model of the pairs panel."""
    pr = _first_pairs(df)
    falls = [f for f in (_fall(pr, m) for m in dict.fromkeys(pr["mixer"])) if f is not None]
    if not falls:
        return None
    items = [
        tr("recall.take.fall_item", model=model_name(f["model"], tr), lo=pct(f["lo"]), hi=pct(f["hi"])) for f in falls
    ]
    d, lo_p, hi_p = (falls[0][k] for k in ("d", "lo_p", "hi_p"))
    return tr("recall.take.fall", d=d, lo_p=lo_p, hi_p=hi_p, items=tr("recall.sep").join(items))


LONG = 1 << 16  # a length past any window: a state still growing there grows with every token read


def state_words(m: str, tr) -> str:
    """What model m's state holds, in words: its own sentence where the catalogue has one (`recall.state.<m>`), else
    one built from its record: whether the state grows with the tokens read, and how a token is written into it (a
    key–value state, gates that read the token, a fixed decay or kernel, or attention's keys and values)."""
    own = tr(f"recall.state.{m}")
    if not own.startswith("«") or m not in registry.MODELS:
        return own
    model, spec = registry.get(m), registry.Spec(64)
    size = "grows" if model.state_floats(2 * LONG, spec) > model.state_floats(LONG, spec) else "fixed"
    kind = {True: "selective", False: "time_invariant", None: "attention"}[model.selective]
    how = "keyed" if model.recall is not None else kind
    return tr("recall.state_default", size=tr(f"recall.state_default.{size}"), how=tr(f"recall.state_default.{how}"))


def _order(fr: pd.DataFrame) -> list[str]:
    """Attention first, then the models that recalled (smallest state first), then the rest by their best accuracy."""

    def key(m: str):
        rows = fr[fr["mixer"] == m]
        hit = smallest_recalling(rows)
        return (m != ATTENTION_MODEL, hit is None, hit["state_bytes"] if hit is not None else -rows["accuracy"].max())

    return sorted(dict.fromkeys(fr["mixer"]), key=key)


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """The frontier (smallest recalling state per model, beside attention's cache), the models at chance and why,
    the fall with more pairs, and selective copying's split; every number from the rows."""
    out = []
    fr = frontier(df)
    if len(fr):
        P, T = int(fr["n_pairs"].iloc[0]), int(fr["seq_len"].iloc[0])
        att = fr[fr["mixer"] == ATTENTION_MODEL]
        att_best = smallest_recalling(att) if len(att) else None
        for m in _order(fr):
            rows = fr[fr["mixer"] == m].sort_values("state_bytes")
            best = rows.loc[rows["accuracy"].idxmax()]
            hit = smallest_recalling(rows)
            if m == ATTENTION_MODEL:
                key = "recall.take.attention" if hit is not None else "recall.take.attention_short"
            elif at_chance(rows):
                key = "recall.take.chance"
            else:
                key = "recall.take.reached" if hit is not None else "recall.take.short"
            point = hit if hit is not None else best
            out.append(
                tr(
                    key,
                    model=model_name(m, tr),
                    P=P,
                    T=T,
                    state=format_bytes(point["state_bytes"]),
                    d=int(point["d_model"]),
                    acc=pct(point["accuracy"]) + seed_spread(point, tr),
                    best=pct(best["accuracy"]),
                    best_state=format_bytes(best["state_bytes"]),
                    best_d=int(best["d_model"]),
                    chance=pct(float(rows["chance"].iloc[0])),
                    what=state_words(m, tr),
                )
            )
        if att_best is not None:
            d, layers = int(att_best["d_model"]), int(att_best.get("n_layers", 2))
            cache = lambda n: BYTES * layers * registry.get(ATTENTION_MODEL).state_floats(n, registry.Spec(d))
            per_token = cache(KV_PAGE) / KV_PAGE  # it grows a page at a time: a whole page's bytes per token
            out.append(
                tr(
                    "recall.take.cache",
                    T=T,
                    state=format_bytes(att_best["state_bytes"]),
                    d=d,
                    per_token=format_bytes(per_token),
                    T2=f"{10 * T:,}",
                    state2=format_bytes(att_best["state_bytes"] + cache(10 * T) - cache(T)),
                )
            )
    fell = fall_line(df, tr)
    if fell:
        out.append(fell)
    g = copy_groups(df)
    if g is not None:
        names = lambda rows: listing([f"{model_name(r.mixer, tr)} {pct(r.accuracy)}" for r in rows.itertuples()], tr)
        best = lambda rows: rows.loc[rows["accuracy"].idxmax()]
        bs, bf = best(g["selective"]), best(g["fixed"])
        key = "recall.take.copy_split" if g["separated"] else "recall.take.copy_no_split"
        diff = tr("recall.take.higher" if g["gap"] >= 0 else "recall.take.lower", gap=f"{100 * abs(g['gap']):.0f}")
        out.append(
            tr(
                key,
                sel=names(g["selective"]),
                fixed=names(g["fixed"]),
                a=pct(g["sel_acc"]),
                b=pct(g["fixed_acc"]),
                diff=diff,
                best_sel=f"{model_name(bs.mixer, tr)} {pct(bs.accuracy)}",
                best_fixed=f"{model_name(bf.mixer, tr)} {pct(bf.accuracy)}",
            )
        )
    return out
