"""What the real-text rows say: whether each model beats the count baselines (counting, and counting that copies),
the copy probe (a span's repeat against the control, the same span at the same place with no first copy), each
model's effective context or the shape of its context curve, and where the Transformer's lead lives; what the
training logs say is core.findings.text_training's, the reading of rows they share core.findings.text_rows'.

Olsson et al. 2022: with induction heads a span's second occurrence costs a fraction of its first. Kaplan et al.
2020 (Fig. 7, §3.2.1, App. D.5): an LSTM plateaus after fewer than 100 tokens while a Transformer keeps improving,
its loss a power law in position. Khandelwal et al. 2018: an LSTM LM's effective context is about 200 word tokens.
Theirs are word or BPE tokens, ours bytes (BYTES_PER_TOKEN to a token).
"""

from __future__ import annotations

import math

import pandas as pd

from core.findings import clauses, listing, text_training
from core.findings.text_rows import BASELINES, NGRAM, NGRAM_COPY, measured, pair, per_model, seeds_said, signed, span
from core.harness.fit import loglog_fit
from core.terms.rules import BYTES_PER_TOKEN, CONTEXT_WITHIN, COPY_ASKED_AT, COPY_GAIN_BITS

FIT_FROM = 8  # the power-law fit reads positions from here on (the first bytes of a window are a different regime)
# published marks over our curves: (source, position in its tokens, label key), drawn at BYTES_PER_TOKEN
MARKS = (("kaplan", 100, "long_range.text.mark.kaplan"), ("khandelwal", 200, "long_range.text.mark.khandelwal"))


def marks(tr) -> pd.DataFrame:
    """The published marks as rows: x in bytes (tokens × BYTES_PER_TOKEN), the label in the page's language."""
    return pd.DataFrame(
        [{"source": src, "tokens": n, "x": n * BYTES_PER_TOKEN, "label": tr(key, tokens=n)} for src, n, key in MARKS]
    )


COPY_COLUMNS = ["model", "seed", "x", "first", "repeat", "control", "gain"]


def copy_gain(df: pd.DataFrame) -> pd.DataFrame:
    """Per (model, seed, x = distance): bits per byte on the span's first copy, on its repeat, on the control (the
    repeat's bytes at the same place with no first copy), and gain = control − repeat (what having read it x bytes
    earlier saved). Rows without a control (a CSV of an older probe) give nothing."""
    cp = measured(df, "copy")
    if not len(cp):
        return pd.DataFrame(columns=COPY_COLUMNS)
    wide = cp.pivot_table(index=["model", "seed", "x"], columns="split", values="bits_per_byte", sort=False)
    wide = wide.reset_index().rename_axis(None, axis=1)
    if not {"first", "repeat", "control"} <= set(wide.columns):  # an older probe, or a run stopped mid-way
        return pd.DataFrame(columns=COPY_COLUMNS)
    wide = wide.dropna(subset=["first", "repeat", "control"])
    return wide.assign(gain=wide["control"] - wide["repeat"])[COPY_COLUMNS]


def longest_copy(df: pd.DataFrame) -> pd.DataFrame:
    """copy_gain's rows at the longest distance measured."""
    g = copy_gain(df)
    return g[g["x"] == g["x"].max()] if len(g) else g


def asked_copy(df: pd.DataFrame) -> pd.DataFrame:
    """copy_gain's rows at the distance the question asks about (COPY_ASKED_AT), else the longest measured below it,
    else the shortest."""
    g = copy_gain(df)
    if not len(g):
        return g
    below = g[g["x"] <= COPY_ASKED_AT]["x"]
    return g[g["x"] == (below.max() if len(below) else g["x"].min())]


def against_baseline(df: pd.DataFrame, baseline: str = NGRAM) -> pd.DataFrame:
    """Per (model, seed), baselines left out: mean bits per byte over every position of the windows read (`bits`),
    the `baseline`'s on the same windows (`baseline`), and whether the model beats it (`beats`)."""
    pos = measured(df, "position")
    if not len(pos) or baseline not in set(pos["model"]):
        return pd.DataFrame(columns=["model", "seed", "bits", "baseline", "beats"])
    mean = pos.groupby(["model", "seed"], sort=False)["bits_per_byte"].mean().reset_index(name="bits")
    base = float(mean[mean["model"] == baseline]["bits"].mean())
    out = mean[~mean["model"].isin(BASELINES)].assign(baseline=base)
    return out.assign(beats=out["bits"] < out["baseline"])


def power_law(df: pd.DataFrame) -> pd.DataFrame:
    """Per (model, seed): bits ≈ a·x^b fitted over positions x ≥ FIT_FROM; b the exponent (Kaplan's App. D.5)."""
    pos = measured(df, "position")
    rows = []
    for (model, seed), g in pos.groupby(["model", "seed"], sort=False):
        g = g[g["x"] >= FIT_FROM]
        a, b = loglog_fit(g["x"], g["bits_per_byte"])
        rows.append({"model": model, "seed": int(seed), "a": math.exp(a) if math.isfinite(a) else a, "b": b})
    return pd.DataFrame(rows)


def effective_context(df: pd.DataFrame, within: float = CONTEXT_WITHIN) -> pd.DataFrame:
    """Per (model, seed): the shortest context x from which on the tail loss stays within `within` of the longest
    context's (`x_eff`), that full-context loss (`full`), the longest x (`longest`), where the loss is lowest
    (`x_low`, `low`), and `rises`: the curve is U-shaped, its full-context loss more than `within` above its lowest."""
    ctx = measured(df, "context")
    rows = []
    for (model, seed), g in ctx.groupby(["model", "seed"], sort=False):
        by_x = g.groupby("x")["bits_per_byte"].mean().sort_index()
        longest, full = by_x.index.max(), float(by_x.iloc[-1])
        above = [x for x, v in by_x.items() if v > full * (1 + within)]  # too far from the full-context loss
        x_eff = min(x for x in by_x.index if not above or x > max(above))
        rows.append(
            {
                "model": model,
                "seed": int(seed),
                "x_eff": int(x_eff),
                "full": full,
                "longest": int(longest),
                "x_low": int(by_x.idxmin()),
                "low": float(by_x.min()),
                "rises": bool(full > float(by_x.min()) * (1 + within)),
            }
        )
    return pd.DataFrame(rows)


def recall_split(df: pd.DataFrame) -> pd.DataFrame:
    """Per (model, seed): bits per byte on recall bytes and on the others, and how many recall bytes there were."""
    rs = measured(df, "recall_split")
    if not len(rs):
        return pd.DataFrame()
    wide = rs.pivot_table(index=["model", "seed"], columns="split", values=["bits_per_byte", "n_bytes"], sort=False)
    out = pd.DataFrame(
        {
            "recall": wide[("bits_per_byte", "recall")],
            "other": wide[("bits_per_byte", "other")],
            "n_recall": wide[("n_bytes", "recall")],
            "n_other": wide[("n_bytes", "other")],
        }
    )
    return out.reset_index()


def copiers(df: pd.DataFrame) -> list[str]:
    """The models (baselines left out) whose gain at the asked distance is at least COPY_GAIN_BITS in every seed."""
    g = asked_copy(df)
    g = g[~g["model"].isin(BASELINES)] if len(g) else g
    return [m for m, rows in g.groupby("model", sort=False) if (rows["gain"] >= COPY_GAIN_BITS).all()]


def pair_copy(df: pd.DataFrame) -> dict | None:
    """The chapter's pair on the copy probe at the asked distance: each one's gain (control − repeat) per seed,
    distance, seeds, option. option: 0 the Transformer, 1 the LSTM, 2 both gained ≥ COPY_GAIN_BITS in every seed;
    None if mixed or neither."""
    g = asked_copy(df)
    att, rec = pair(g["model"]) if len(g) else (None, None)
    if att is None or rec is None:
        return None
    of = {role: g[g["model"] == m] for role, m in (("att", att), ("rec", rec))}

    def copies(rows) -> bool | None:
        return (
            True if (rows["gain"] >= COPY_GAIN_BITS).all() else False if (rows["gain"] < COPY_GAIN_BITS).all() else None
        )

    a, r = copies(of["att"]), copies(of["rec"])
    option = None if a is None or r is None else {(True, False): 0, (False, True): 1, (True, True): 2}.get((a, r))
    said = {role: signed(rows.sort_values("seed")["gain"]) for role, rows in of.items()}
    return {**said, "distance": int(g["x"].max()), "seeds": g["seed"].nunique(), "rows": g, "option": option}


def _baseline_line(df: pd.DataFrame, tr) -> list[str]:
    """Counting first (a model that counting beats has not learned the language), then counting that copies: whom it
    beats, who is below it, and, when those below it are the models that copy, that copying is what sets them apart."""
    vs = against_baseline(df)
    if not len(vs):
        return []
    parts = per_model(vs, "base_part", tr, bits=lambda g: span(g["bits"]))
    losers = [tr(f"model.{m}") for m, g in vs.groupby("model", sort=False) if not g["beats"].all()]
    key = "long_range.text.take.base_all" if not losers else "long_range.text.take.base_some"
    said = [
        tr(
            key,
            parts=listing(parts, tr),
            base=f"{vs['baseline'].iloc[0]:.2f}",
            losers=listing(losers, tr),
            ngram=tr(f"model.{NGRAM}"),
        )
    ]
    cp = against_baseline(df, NGRAM_COPY)
    if len(cp):
        beaten = cp.groupby("model", sort=False)["beats"].all()  # the model beats the copying count in every seed
        below, above = list(beaten[beaten].index), list(beaten[~beaten].index)

        def named(models) -> str:
            rows = cp[cp["model"].isin(models)]
            return listing(per_model(rows, "base_part", tr, bits=lambda g: span(g["bits"], "{:.3f}")), tr)

        values = {
            "copy": f"{cp['baseline'].iloc[0]:.3f}",
            "above": named(above),
            "below": named(below),
            "n": len(below),
        }
        if not above:
            key = "copy_behind"
        elif not below:
            key = "copy_ahead"
        else:
            key = "copy_split_copiers" if set(below) == set(copiers(df)) else "copy_split"
        said.append(tr(f"long_range.text.take.{key}", **values))
    return [tr("ui.sentence_sep").join(said)]


def _copy_lines(df: pd.DataFrame, tr) -> list[str]:
    """The copy probe at the asked distance and, if longer, at the longest: control → repeat per model."""
    out = []
    asked = asked_copy(df)
    for g, key in ((asked, "copy"), (longest_copy(df), "copy_far")):
        g = g[g["model"] != NGRAM] if len(g) else g  # counting reads 5 bytes back: it cannot gain
        if not len(g) or (key == "copy_far" and int(g["x"].max()) == int(asked["x"].max())):
            continue
        parts = per_model(
            g,
            "copy_part",
            tr,
            control=lambda r: span(r["control"]),
            repeat=lambda r: span(r["repeat"]),
            gain=lambda r: signed(r.sort_values("seed")["gain"]),
        )
        out.append(
            tr(
                f"long_range.text.take.{key}",
                parts=clauses(parts, tr),
                d=int(g["x"].max()),
                seeds=seeds_said(g["seed"].nunique(), tr),
            )
        )
    return out


def _context_line(df: pd.DataFrame, tr) -> list[str]:
    """Each model's context curve as it is shaped: its effective context, or, where the loss rises again, where it
    was lowest and what it rose to; a model whose seeds differ in shape is said seed by seed."""
    eff = effective_context(df)
    eff = eff[~eff["model"].isin(BASELINES)] if len(eff) else eff
    if not len(eff):
        return []
    parts = []
    for m, g in eff.groupby("model", sort=False):
        groups = [g] if g["rises"].nunique() == 1 else [g[g["seed"] == s] for s in g["seed"]]
        for rows in groups:
            model = tr(f"model.{m}")
            if len(groups) > 1:
                model = tr("long_range.text.take.seed_of", model=model, seed=int(rows["seed"].iloc[0]))
            if rows["rises"].iloc[0]:
                parts.append(
                    tr(
                        "long_range.text.take.context_u",
                        model=model,
                        x=span(rows["x_low"], "{:,.0f}"),
                        low=span(rows["low"]),
                        full=span(rows["full"]),
                    )
                )
            else:
                parts.append(tr("long_range.text.take.context_part", model=model, x=span(rows["x_eff"], "{:,.0f}")))
    return [tr("long_range.text.take.context", parts=clauses(parts, tr), longest=int(eff["longest"].max()))]


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """The baselines first (a model that counting beats has not learned the language; counting that copies shows
    what copying is worth), then the copy probe against its control, the context curves, training cost in seconds,
    how training ended and the recall split."""
    out = _baseline_line(df, tr) + _copy_lines(df, tr) + _context_line(df, tr)
    out += text_training.time_line(df, tr) + text_training.falling_line(df, tr)
    rs = recall_split(df)
    if len(rs):
        att, rec = pair(rs["model"])
        if att is not None and rec is not None:
            a, r = (rs[rs["model"] == m].set_index("seed") for m in (att, rec))
            lead_recall, lead_other = (r["recall"] - a["recall"]).dropna(), (r["other"] - a["other"]).dropna()
            share = float(rs["n_recall"].sum() / (rs["n_recall"].sum() + rs["n_other"].sum()))
            if len(lead_recall) and len(lead_other):
                both = pd.concat([lead_recall, lead_other])
                key, sign = (
                    ("recall", 1)
                    if (both > 0).all()
                    else ("recall_behind", -1)
                    if (both < 0).all()
                    else ("recall_mixed", -1)
                )
                out.append(
                    tr(
                        f"long_range.text.take.{key}",
                        att=tr(f"model.{att}"),
                        rec=tr(f"model.{rec}"),
                        recall=span(sign * lead_recall),
                        other=span(sign * lead_other),
                        share=f"{100 * share:.1f}",
                    )
                )
    return out
