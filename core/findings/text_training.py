"""What the shipped real-text models' training logs say (core.experiments.real_text's `train_curve` rows): how the
held-out loss ended, and who leads at equal training time, each seed at its fastest model's whole run; and what a
live race says (core.experiments.text_race): who is lower after the same seconds.
"""

from __future__ import annotations

import math

import pandas as pd

from core.findings import listing
from core.findings.text_rows import measured, pair, per_model, span
from core.terms.rules import FLAT_BITS

SAME_SPEED = 0.1  # a race's two models read "about the same bytes a second" when their rates differ by less than this


def _heldout(df: pd.DataFrame) -> pd.DataFrame:
    tc = measured(df, "train_curve")
    return tc[tc["split"] == "heldout"] if len(tc) else tc


def still_falling(df: pd.DataFrame, last: float = 0.2) -> pd.DataFrame:
    """Per (model, seed) of the shipped training curves: how far the held-out loss fell over the last `last` share of
    the bytes trained on (`fall`, bits per byte; positive: it was lower at the end than at the start of that share)."""
    rows = []
    for (model, seed), g in _heldout(df).groupby(["model", "seed"], sort=False):
        g = g.sort_values("x")
        end = g["x"].max()
        before = g[g["x"] <= (1 - last) * end]
        if len(before) and len(g) > 1:
            rows.append(
                {
                    "model": model,
                    "seed": int(seed),
                    "fall": float(before["bits_per_byte"].iloc[-1] - g["bits_per_byte"].iloc[-1]),
                    "final": float(g["bits_per_byte"].iloc[-1]),
                    "bytes": float(end),
                    "share": last,
                }
            )
    return pd.DataFrame(rows)


def last_moves(df: pd.DataFrame) -> pd.DataFrame:
    """Per (model, seed): how the held-out loss moved between its last two readings (`moved`, end − before: negative
    fell) and the share of training between them (`share`)."""
    rows = []
    for (model, seed), g in _heldout(df).groupby(["model", "seed"], sort=False):
        g = g.sort_values("x")
        if len(g) > 1:
            (x0, b0), (x1, b1) = g[["x", "bits_per_byte"]].iloc[-2], g[["x", "bits_per_byte"]].iloc[-1]
            rows.append({"model": model, "seed": int(seed), "moved": float(b1 - b0), "share": float((x1 - x0) / x1)})
    return pd.DataFrame(rows)


def falling_line(df: pd.DataFrame, tr) -> list[str]:
    """How training ended: the fall over the last share of it, and how the last reading moved (no extrapolation)."""
    out = []
    falling = still_falling(df)
    if len(falling):
        parts = per_model(falling, "falling_part", tr, fall=lambda g: span(g["fall"]), final=lambda g: span(g["final"]))
        still = [tr(f"model.{m}") for m, g in falling.groupby("model", sort=False) if (g["fall"] >= FLAT_BITS).any()]
        key = "long_range.text.take.falling" if still else "long_range.text.take.flat"
        last = last_moves(df)
        out.append(
            tr(
                key,
                parts=listing(parts, tr),
                still=listing(still, tr),
                share=f"{100 * falling['share'].iloc[0]:.0f}",
                last_share=f"{100 * last['share'].max():.0f}" if len(last) else "?",
                moved=span(last["moved"], "{:+.3f}") if len(last) else "?",
            )
        )
    return out


def equal_time(df: pd.DataFrame) -> pd.DataFrame:
    """Per (model, seed) of the shipped training curves, each seed at the time its fastest model took in all
    (`at`, seconds; `fastest`): the held-out loss of its last reading at or before then (`bits`, read at `when`), and
    each model's own whole run (`total` seconds, `final` loss)."""
    h = _heldout(df)
    h = h[h["seconds"].notna()] if len(h) and "seconds" in h else h.iloc[0:0]
    rows = []
    for seed, g in h.groupby("seed", sort=False):
        totals = g.groupby("model", sort=False)["seconds"].max()
        if len(totals) < 2:
            continue
        fastest, at = totals.idxmin(), float(totals.min())
        for model, m in g.groupby("model", sort=False):
            m = m.sort_values("seconds")
            upto = m[m["seconds"] <= at]
            if len(upto):
                rows.append(
                    {
                        "model": model,
                        "seed": int(seed),
                        "at": at,
                        "fastest": fastest,
                        "bits": float(upto["bits_per_byte"].iloc[-1]),
                        "when": float(upto["seconds"].iloc[-1]),
                        "total": float(m["seconds"].iloc[-1]),
                        "final": float(m["bits_per_byte"].iloc[-1]),
                    }
                )
    return pd.DataFrame(rows)


def time_leader(eq: pd.DataFrame) -> str | None:
    """The model lowest at equal time in every seed, or None."""
    lows = {g.loc[g["bits"].idxmin(), "model"] for _, g in eq.groupby("seed")}
    return lows.pop() if len(lows) == 1 else None


def time_line(df: pd.DataFrame, tr) -> list[str]:
    """Who leads at equal training time (each seed at its fastest model's whole run), and what the same bytes took
    the slowest against the fastest."""
    eq = equal_time(df)
    if not len(eq):
        return []
    fastest = eq["fastest"].iloc[0] if eq["fastest"].nunique() == 1 else None
    if fastest is None:
        return []
    totals = eq.groupby("model", sort=False)["total"].mean()
    slowest = totals.idxmax()
    parts = per_model(eq, "time_part", tr, bits=lambda g: span(g["bits"]))
    leader = time_leader(eq)
    values = {
        "s": span(eq.drop_duplicates("seed")["at"], "{:,.0f}"),
        "fastest": tr(f"model.{fastest}"),
        "parts": listing(parts, tr),
        "slowest": tr(f"model.{slowest}"),
        "ratio": f"{totals[slowest] / totals[fastest]:.1f}",
    }
    if leader is None:
        return [tr("long_range.text.take.time_mixed", **values)]
    key = "long_range.text.take.time_fastest" if leader == fastest else "long_range.text.take.time"
    return [tr(key, leader=tr(f"model.{leader}"), **values)]


def race_final(df: pd.DataFrame) -> pd.DataFrame:
    """Per model of a race (core.experiments.text_race): its last held-out loss, seconds, steps and bytes/s."""
    if df is None or not len(df) or "heldout_bits" not in df:
        return pd.DataFrame()
    d = df[df["heldout_bits"].notna()]
    rows = []
    for model, g in d.groupby("model", sort=False):
        g = g.sort_values("seconds")
        end = g.iloc[-1]
        rows.append(
            {
                "model": model,
                "bits": float(end["heldout_bits"]),
                "start": float(g.iloc[0]["heldout_bits"]),
                "seconds": float(end["seconds"]),
                "steps": int(end["step"]),
                "rate": float(end["bytes"] / end["seconds"]) if end["seconds"] > 0 else math.nan,
                "status": str(df[df["model"] == model]["status"].iloc[-1]),
            }
        )
    return pd.DataFrame(rows)


def race_takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Who is lower after the same seconds, and how many bytes a second each read: computed from the race shown."""
    f = race_final(df)
    if not len(f):
        return []
    out = [
        tr(
            "long_range.race.take.each",
            parts=listing(
                [
                    tr(
                        "long_range.race.take.part",
                        model=tr(f"model.{r.model}"),
                        bits=f"{r.bits:.2f}",
                        start=f"{r.start:.2f}",
                        s=f"{r.seconds:.0f}",
                        steps=f"{r.steps:,}",
                        rate=f"{r.rate / 1e3:,.1f}",
                    )
                    for r in f.itertuples()
                ],
                tr,
            ),
        )
    ]
    att, rec = pair(f["model"])
    if att is not None and rec is not None:
        a, r = (f[f["model"] == m].iloc[0] for m in (att, rec))
        lead = r["bits"] - a["bits"]
        speed = r["rate"] / a["rate"] if a["rate"] > 0 else math.nan
        key = "att" if lead > 0 else "rec" if lead < 0 else "tie"
        if key != "tie" and abs(speed - 1) < SAME_SPEED:
            key += "_same"
        said = f"{speed:.2f}" if math.isfinite(speed) else "–"
        out.append(
            tr(
                f"long_range.race.take.lead_{key}",
                att=tr(f"model.{att}"),
                rec=tr(f"model.{rec}"),
                diff=f"{abs(lead):.2f}",
                speed=said,
            )
        )
    return out
