"""Charts of the real-text section (long-range page): loss by position with the published marks, the context
cut-off with each model's effective context, the recall split, the shipped training curves, the race, and a pasted
text's bytes shaded by each model's surprise."""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import pandas as pd

from core.charts.common import PADDING, Chart, dash_legend, dash_scale, device_subtitle, ok_rows, tips, titled
from core.findings import real_text as findings
from core.models import registry
from core.terms.rules import CONTEXT_WITHIN

POSITIONS_DRAWN = 120  # positions drawn per line: log-spaced (each a measured position, none averaged)
TEXT_COLUMNS = 64  # characters per line of a shaded text; longer lines wrap
SURPRISE_MAX = 8.0  # bits: the darkest shade (a uniform guess over 256 bytes)


BASELINE_COLOR = "#444444"  # the count baseline: dark grey, no model's colour


def model_color(models, tr) -> alt.Color:
    """One colour per model, from its record (as on every page), the count baseline grey; the legend says each name
    in the page's language."""
    domain, colors = registry.colors(list(dict.fromkeys(models)))
    colors = [BASELINE_COLOR if m == findings.NGRAM else c for m, c in zip(domain, colors)]
    label = "".join(f"datum.label === {json.dumps(m)} ? {json.dumps(tr(f'model.{m}'))} : " for m in domain)
    return alt.Color(
        "model:N",
        title=None,
        scale=alt.Scale(domain=domain, range=colors),
        legend=alt.Legend(labelExpr=label + "datum.label", orient="bottom"),
    )


def _measure(df: pd.DataFrame, measure: str) -> pd.DataFrame:
    d = ok_rows(df)
    return d[d["measure"] == measure] if len(d) and "measure" in d else d.iloc[0:0]


def _detail(d: pd.DataFrame) -> list:
    return ["seed"] + (["run"] if "run" in d and d["run"].nunique() > 1 else [])


def drawn_positions(window: int, most: int = POSITIONS_DRAWN) -> np.ndarray:
    """About `most` positions of 1..window, evenly spaced on a log axis (every one of the first few)."""
    return np.unique(np.geomspace(1, window, most).round().astype(int))


def _dashed(d: pd.DataFrame, x, y, field: str, order: list, patterns: list, tooltip: list, tr) -> alt.Chart:
    """A line per (model, seed, `field`): coloured by model, dashed by `field` (its values in `order`)."""
    scale = alt.Scale(domain=order, range=patterns)
    dash = alt.StrokeDash(f"{field}:N", title=None, sort=order, scale=scale, legend=dash_legend(orient="bottom"))
    color = model_color(d["model"], tr)
    detail = ["seed", field] + _detail(d)[1:]
    return Chart(d).encode(x=x, y=y, color=color, strokeDash=dash, detail=detail, tooltip=tips(d, tooltip))


def copy_chart(df: pd.DataFrame, tr) -> alt.Chart | None:
    """Bits per byte on a span's first copy (dashed) and its second (solid) against the distance between them, a
    line per (model, seed, copy): the section's picture."""
    d = _measure(df, "copy")
    if not len(d):
        return None
    d = d.assign(copy=d["split"].map(lambda s: tr(f"long_range.text.split.{s}")))
    order = [tr("long_range.text.split.repeat"), tr("long_range.text.split.first")]
    x = alt.X(
        "x:Q",
        scale=alt.Scale(type="log", base=2),
        title=tr("long_range.text.axis.distance"),
        axis=alt.Axis(values=sorted(d["x"].unique().tolist()), format="d"),
    )
    y = alt.Y("bits_per_byte:Q", scale=alt.Scale(zero=True), title=tr("long_range.text.axis.bits"))
    tooltip = ["model", "seed", "copy", "x", "bits_per_byte", "n_bytes"]
    line = _dashed(d, x, y, "copy", order, [[1, 0], [5, 4]], tooltip, tr).mark_line(point=True, strokeWidth=2)
    windows = int(d["n_bytes"].max() // 63) if "n_bytes" in d else 0
    sub = [tr("long_range.text.chart.copy_sub", windows=f"{windows:,}"), device_subtitle(d, tr)]
    return titled(line, tr("long_range.text.chart.copy"), sub, height=320)


def position_chart(df: pd.DataFrame, tr) -> alt.Chart | None:
    """Bits per byte against the bytes of context read (log x), a line per (model, seed); the published marks as
    grey rules at their position in bytes (findings.marks)."""
    d = _measure(df, "position")
    if not len(d):
        return None
    d = d[d["x"].isin(drawn_positions(int(d["x"].max())))]
    x = alt.X(
        "x:Q",
        scale=alt.Scale(type="log", domain=[1, int(d["x"].max())], nice=False),
        title=tr("long_range.text.axis.position"),
    )
    y = alt.Y("bits_per_byte:Q", scale=alt.Scale(zero=False), title=tr("long_range.text.axis.bits"))
    line = (
        Chart(d)
        .mark_line(strokeWidth=1.5, opacity=0.85)
        .encode(
            x=x,
            y=y,
            color=model_color(d["model"], tr),
            detail=_detail(d),
            tooltip=tips(d, ["model", "seed", "x", "bits_per_byte", "n_bytes", "run"]),
        )
    )
    m = findings.marks(tr)
    m = m[m["x"] <= d["x"].max()]
    rules = Chart(m).mark_rule(color="#888", strokeDash=[4, 3]).encode(x="x:Q", tooltip=["label", "tokens", "x"])
    m = m.assign(dy=[6 + 14 * i for i in range(len(m))])  # labels staggered down from the top, each by its rule
    labels = (
        Chart(m)
        .mark_text(align="right", baseline="top", dx=-4, color="#555", fontSize=10)
        .encode(x="x:Q", y=alt.Y("dy:Q", scale=None), text="label:N")
    )
    windows = int(d["n_bytes"].max()) if "n_bytes" in d else 0
    sub = [tr("long_range.text.chart.position_sub", windows=f"{windows:,}"), device_subtitle(d, tr)]
    return titled(alt.layer(line, rules, labels), tr("long_range.text.chart.position"), sub, height=340)


def context_chart(df: pd.DataFrame, tr) -> alt.Chart | None:
    """The tail's bits per byte against the context given (x = 0 at the left, then log), each model's effective
    context a filled dot."""
    d = _measure(df, "context")
    if not len(d):
        return None
    d = d.assign(shown=d["x"].clip(lower=1))  # x = 0 (no context) is drawn at 1 on the log axis, labelled 0
    x = alt.X(
        "shown:Q",
        scale=alt.Scale(type="log"),
        title=tr("long_range.text.axis.context"),
        axis=alt.Axis(labelExpr="datum.value == 1 ? '0' : datum.label"),
    )
    y = alt.Y("bits_per_byte:Q", scale=alt.Scale(zero=False), title=tr("long_range.text.axis.bits"))
    color = model_color(d["model"], tr)
    line = (
        Chart(d)
        .mark_line(point=True, strokeWidth=1.5)
        .encode(
            x=x, y=y, color=color, detail=_detail(d), tooltip=tips(d, ["model", "seed", "x", "bits_per_byte", "run"])
        )
    )
    eff = findings.effective_context(d)
    if len(eff):
        dots = eff.merge(
            d[["model", "seed", "x", "bits_per_byte"]],
            left_on=["model", "seed", "x_eff"],
            right_on=["model", "seed", "x"],
        )
        dots = dots.assign(shown=dots["x"].clip(lower=1), label=tr("long_range.text.eff"))
        line = alt.layer(
            line,
            Chart(dots)
            .mark_point(size=140, filled=True, opacity=0.9, shape="diamond")
            .encode(x="shown:Q", y="bits_per_byte:Q", color=color, tooltip=["label", "model", "seed", "x_eff", "full"]),
        )
    tail = int(d["tail"].iloc[0]) if "tail" in d and d["tail"].notna().any() else "?"
    sub = [
        tr("long_range.text.chart.context_sub", context_within_pct=f"{100 * CONTEXT_WITHIN:.0f}"),
        device_subtitle(d, tr),
    ]
    return titled(line, tr("long_range.text.chart.context", tail=tail), sub)


def recall_chart(df: pd.DataFrame, tr) -> alt.Chart | None:
    """Bits per byte on recall bytes and on the others, a bar per model (the mean over seeds), a tick per seed."""
    d = _measure(df, "recall_split")
    if not len(d):
        return None
    d = d.assign(part=d["split"].map(lambda s: tr(f"long_range.text.split.{s}")))
    mean = d.groupby(["model", "split", "part"], as_index=False, sort=False)["bits_per_byte"].mean()
    order = [tr("long_range.text.split.recall"), tr("long_range.text.split.other")]
    x = alt.X("part:N", title=None, sort=order, axis=alt.Axis(labelAngle=0))
    y = alt.Y("bits_per_byte:Q", title=tr("long_range.text.axis.bits"))
    color = model_color(d["model"], tr)
    bars = (
        Chart(mean)
        .mark_bar(opacity=0.8)
        .encode(
            x=x,
            y=y,
            color=color,
            xOffset="model:N",
            tooltip=["model", "part", alt.Tooltip("bits_per_byte:Q", format=".3f")],
        )
    )
    ticks = (
        Chart(d)
        .mark_tick(color="black", thickness=2, size=14)
        .encode(
            x=x,
            y="bits_per_byte:Q",
            xOffset="model:N",
            tooltip=tips(d, ["model", "seed", "part", "bits_per_byte", "n_bytes"]),
        )
    )
    n = d.drop_duplicates(["split"]).set_index("split")["n_bytes"] if "n_bytes" in d else pd.Series(dtype=float)
    share = 100 * n.get("recall", 0) / max(1, n.sum())
    sub = [tr("long_range.text.chart.recall_sub", share=f"{share:.1f}"), device_subtitle(d, tr)]
    return titled(alt.layer(bars, ticks), tr("long_range.text.chart.recall"), sub)


def curves_chart(df: pd.DataFrame, tr) -> alt.Chart | None:
    """The shipped models' held-out bits per byte against bytes trained on (solid), and the copy probe's second copy
    (dotted), a line per (model, seed, what)."""
    d = _measure(df, "train_curve")
    d = d[d["split"].isin(["heldout", "copy_repeat"])] if len(d) else d
    if not len(d):
        return None
    d = d.assign(
        what=d["split"].map(
            {"heldout": tr("long_range.text.curve.heldout"), "copy_repeat": tr("long_range.text.curve.copy")}
        )
    )
    order = [tr("long_range.text.curve.heldout"), tr("long_range.text.curve.copy")]
    x = alt.X("x:Q", title=tr("long_range.text.axis.bytes"), axis=alt.Axis(format="~s"))
    y = alt.Y("bits_per_byte:Q", scale=alt.Scale(zero=False), title=tr("long_range.text.axis.bits"))
    tooltip = ["model", "seed", "what", "x", "seconds", "bits_per_byte"]
    line = _dashed(d, x, y, "what", order, [[1, 0], [2, 2]], tooltip, tr).mark_line(strokeWidth=1.5)
    return titled(line, tr("long_range.text.chart.curves"), tr("long_range.text.chart.curves_sub"))


def race_chart(race: pd.DataFrame, shipped: pd.DataFrame, tr) -> alt.Chart | None:
    """Held-out bits per byte against seconds of training: this race's models (solid) and, dashed, the shipped
    models' curves (the same models' first seed) over the same seconds."""
    r = ok_rows(race)
    r = r[r["heldout_bits"].notna()] if len(r) else r
    if not len(r):
        return None
    models = list(dict.fromkeys(r["model"]))
    parts = [
        pd.DataFrame(
            {
                "model": r["model"],
                "seconds": r["seconds"],
                "bits": r["heldout_bits"],
                "line": tr("long_range.race.run_race") + (" · " + r["run"] if "run" in r else ""),
                "step": r["step"],
            }
        )
    ]
    s = _measure(shipped, "train_curve") if shipped is not None and len(shipped) else pd.DataFrame()
    if len(s):
        s = s[(s["split"] == "heldout") & s["model"].isin(models) & (s["seed"] == s["seed"].min())]
        s = s[s["seconds"] <= max(r["seconds"].max() * 1.5, s["seconds"].min() + 1)]
        parts.append(
            pd.DataFrame(
                {
                    "model": s["model"],
                    "seconds": s["seconds"],
                    "bits": s["bits_per_byte"],
                    "line": tr("long_range.race.run_shipped"),
                    "step": None,
                }
            )
        )
    d = pd.concat(parts, ignore_index=True)
    x = alt.X("seconds:Q", title=tr("long_range.text.axis.seconds"))
    y = alt.Y("bits:Q", scale=alt.Scale(zero=False), title=tr("long_range.text.axis.bits"))
    dash = alt.StrokeDash(
        "line:N", title=None, legend=dash_legend(orient="bottom", labelLimit=400), scale=dash_scale(d["line"])
    )
    line = (
        Chart(d)
        .mark_line(point=True, strokeWidth=1.8)
        .encode(
            x=x,
            y=y,
            color=model_color(d["model"], tr),
            strokeDash=dash,
            detail="line:N",
            tooltip=[
                "model",
                "line",
                alt.Tooltip("seconds:Q", format=".1f"),
                alt.Tooltip("bits:Q", format=".3f"),
                "step",
            ],
        )
    )
    window = int(race["window"].iloc[0]) if "window" in race and len(race) else 0
    sub = [tr("long_range.race.chart_sub", window=f"{window:,}"), device_subtitle(r, tr)]
    return titled(line, tr("long_range.race.chart"), sub)


def text_grid(shown: list[str], columns: int = TEXT_COLUMNS) -> pd.DataFrame:
    """Where each shown byte sits on the page: (row, col) with lines broken at newlines and wrapped at `columns`."""
    rows, row, col = [], 0, 0
    for i, ch in enumerate(shown):
        if col >= columns:
            row, col = row + 1, 0
        rows.append({"i": i, "row": row, "col": col, "char": ch})
        if ch == "⏎":
            row, col = row + 1, 0
        else:
            col += 1
    return pd.DataFrame(rows)


def surprise_chart(grid: pd.DataFrame, values, title_text: str, diff: bool = False) -> alt.Chart:
    """The text as a grid of characters shaded by `values`: bits of surprise, or (`diff`) LSTM minus Transformer.
    Text marks draw characters as text, so a visitor's text never becomes markup."""
    d = grid.assign(v=np.asarray(values, dtype=float))
    if diff:
        scale = alt.Scale(scheme="redblue", domain=[-4, 4], clamp=True)
    else:
        scale = alt.Scale(scheme="oranges", domain=[0, SURPRISE_MAX], clamp=True)
    base = Chart(d).encode(x=alt.X("col:O", axis=None), y=alt.Y("row:O", axis=None))
    cells = base.mark_rect().encode(
        color=alt.Color("v:Q", scale=scale, legend=None),
        tooltip=[alt.Tooltip("char:N"), alt.Tooltip("v:Q", format=".2f")],
    )
    text = base.mark_text(font="monospace", fontSize=11, color="black").encode(text="char:N")
    return (cells + text).properties(
        title=alt.TitleParams(title_text, anchor="start", fontSize=13),
        width=alt.Step(11),
        height=alt.Step(16),
        padding=PADDING,
    )
