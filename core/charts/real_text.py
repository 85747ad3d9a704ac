"""Charts of the real-text section (long-range page): the copy probe's gain against its control, loss by position with
the published marks, the context cut-off with each model's effective context, the recall split, and a pasted text's
bytes shaded by each model's surprise; training against bytes and seconds is core.charts.text_training's."""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import pandas as pd

from core.charts.common import PADDING, Chart, dash_legend, device_subtitle, ok_rows, tips, titled
from core.findings import real_text as findings
from core.models import registry
from core.terms.rules import CONTEXT_WITHIN, COPY_GAIN_BITS

POSITIONS_DRAWN = 120  # positions drawn per line: log-spaced (each a measured position, none averaged)
TEXT_COLUMNS = 64  # characters per line of a shaded text; longer lines wrap
SURPRISE_MAX = 8.0  # bits: the darkest shade (a uniform guess over 256 bytes)


# the count baselines: greys, no model's colour (counting dark, counting that copies light)
BASELINE_COLORS = {findings.NGRAM: "#444444", findings.NGRAM_COPY: "#9a9a9a"}
GAIN_COLOR = "#888888"  # the question's threshold and zero on the copy chart
LEGEND_COLUMNS = 3  # model legends wrap after this many names (HALF_COLUMNS in a half-width chart): none is cut
HALF_COLUMNS = 2
HALF_HEIGHT = 380  # a half-width chart's height: room for its legend's rows under the plot


def model_color(models, tr, columns: int = LEGEND_COLUMNS) -> alt.Color:
    """One colour per model, from its record (as on every page), the count baselines grey; the legend says each name
    in the page's language."""
    domain, colors = registry.colors(list(dict.fromkeys(models)))
    colors = [BASELINE_COLORS.get(m, c) for m, c in zip(domain, colors)]
    label = "".join(f"datum.label === {json.dumps(m)} ? {json.dumps(tr(f'model.{m}'))} : " for m in domain)
    return alt.Color(
        "model:N",
        title=None,
        scale=alt.Scale(domain=domain, range=colors),
        legend=alt.Legend(labelExpr=label + "datum.label", orient="bottom", labelLimit=320, columns=columns),
    )


def measure_rows(df: pd.DataFrame, measure: str) -> pd.DataFrame:
    d = ok_rows(df)
    return d[d["measure"] == measure] if len(d) and "measure" in d else d.iloc[0:0]


def seed_detail(d: pd.DataFrame) -> list:
    return ["seed"] + (["run"] if "run" in d and d["run"].nunique() > 1 else [])


def drawn_positions(window: int, most: int = POSITIONS_DRAWN) -> np.ndarray:
    """About `most` positions of 1..window, evenly spaced on a log axis (every one of the first few)."""
    return np.unique(np.geomspace(1, window, most).round().astype(int))


def dashed_lines(d: pd.DataFrame, x, y, field: str, order: list, patterns: list, tooltip: list, tr) -> alt.Chart:
    """A line per (model, seed, `field`): coloured by model, dashed by `field` (its values in `order`)."""
    scale = alt.Scale(domain=order, range=patterns)
    dash = alt.StrokeDash(
        f"{field}:N", title=None, sort=order, scale=scale, legend=dash_legend(orient="bottom", labelLimit=320)
    )
    color = model_color(d["model"], tr)
    detail = ["seed", field] + seed_detail(d)[1:]
    return Chart(d).encode(x=x, y=y, color=color, strokeDash=dash, detail=detail, tooltip=tips(d, tooltip))


COPY_SCORED = 63  # bytes scored per copy of the probe's span: text_lm.COPY_SPAN − 1 (its first byte is left out)


def copy_gains(d: pd.DataFrame) -> pd.DataFrame:
    """findings.copy_gain per run shown (a live run beside the reference), with its `run`."""
    if "run" not in d or not len(d):
        return findings.copy_gain(d)
    return pd.concat([findings.copy_gain(r).assign(run=run) for run, r in d.groupby("run", sort=False)])


def copy_chart(df: pd.DataFrame, tr) -> alt.Chart | None:
    """The copy probe's gain, control − repeat (bits per byte a span's second copy cost less than the same span at the
    same place with no first copy), against the distance between the copies, a line per (model, seed); the question's
    threshold and zero as grey rules: the section's picture."""
    d = measure_rows(df, "copy")
    g = copy_gains(d)
    if not len(g):
        return None
    x = alt.X(
        "x:Q",
        scale=alt.Scale(type="log", base=2, domain=[float(g["x"].min()), float(g["x"].max())], nice=False),
        title=tr("long_range.text.axis.distance"),
        axis=alt.Axis(values=sorted(g["x"].unique().tolist()), format="d"),
    )
    y = alt.Y("gain:Q", title=tr("long_range.text.axis.gain"))
    numbers = [alt.Tooltip(f"{c}:Q", format=".3f") for c in ("gain", "control", "repeat", "first")]
    line = (
        Chart(g)
        .mark_line(point=True, strokeWidth=2)
        .encode(
            x=x,
            y=y,
            color=model_color(g["model"], tr),
            detail=seed_detail(g),
            tooltip=[*tips(g, ["model", "seed", "x"]), *numbers, *tips(g, ["run"])],
        )
    )
    rules = pd.DataFrame({"gain": [0.0, COPY_GAIN_BITS], "label": ["0", tr("long_range.text.asked_gain")]})
    dash = alt.StrokeDash("label:N", scale=alt.Scale(domain=list(rules["label"]), range=[[1, 0], [4, 3]]), legend=None)
    rule = Chart(rules).mark_rule(color=GAIN_COLOR).encode(y="gain:Q", strokeDash=dash, tooltip=["label", "gain"])
    windows = int(d["n_bytes"].max() // COPY_SCORED) if "n_bytes" in d else 0
    sub = [tr("long_range.text.chart.copy_sub", windows=f"{windows:,}"), device_subtitle(d, tr)]
    return titled(alt.layer(rule, line), tr("long_range.text.chart.copy"), sub, height=440)


def position_chart(df: pd.DataFrame, tr) -> alt.Chart | None:
    """Bits per byte against the bytes of context read (log x), a line per (model, seed); the published marks as
    grey rules at their position in bytes (findings.marks)."""
    d = measure_rows(df, "position")
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
            detail=seed_detail(d),
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
    context a filled diamond, or, where its curve rises again (findings.effective_context's `rises`), its lowest
    point a filled circle."""
    d = measure_rows(df, "context")
    if not len(d):
        return None
    d = d.assign(shown=d["x"].clip(lower=1))  # x = 0 (no context) is drawn at 1 on the log axis, labelled 0
    x = alt.X(
        "shown:Q",
        scale=alt.Scale(type="log", domain=[1, float(d["shown"].max())], nice=False),
        title=tr("long_range.text.axis.context"),
        axis=alt.Axis(labelExpr="datum.value == 1 ? '0' : datum.label"),
    )
    y = alt.Y("bits_per_byte:Q", scale=alt.Scale(zero=False), title=tr("long_range.text.axis.bits"))
    color = model_color(d["model"], tr, HALF_COLUMNS)
    line = (
        Chart(d)
        .mark_line(point=True, strokeWidth=1.5)
        .encode(
            x=x,
            y=y,
            color=color,
            detail=seed_detail(d),
            tooltip=tips(d, ["model", "seed", "x", "bits_per_byte", "run"]),
        )
    )
    eff = findings.effective_context(d)
    if len(eff):
        eff = eff.assign(mark=eff["x_low"].where(eff["rises"], eff["x_eff"]))
        dots = eff.merge(
            d[["model", "seed", "x", "bits_per_byte"]].drop_duplicates(["model", "seed", "x"]),
            left_on=["model", "seed", "mark"],
            right_on=["model", "seed", "x"],
        )
        words = {True: tr("long_range.text.lowest"), False: tr("long_range.text.eff")}
        dots = dots.assign(shown=dots["x"].clip(lower=1), label=dots["rises"].map(words))
        shape = alt.Shape(
            "label:N", scale=alt.Scale(domain=[words[False], words[True]], range=["diamond", "circle"]), legend=None
        )
        line = alt.layer(
            line,
            Chart(dots)
            .mark_point(size=140, filled=True, opacity=0.9)
            .encode(
                x="shown:Q",
                y="bits_per_byte:Q",
                color=color,
                shape=shape,
                tooltip=["label", "model", "seed", "x", "bits_per_byte", "full"],
            ),
        )
    tail = int(d["tail"].iloc[0]) if "tail" in d and d["tail"].notna().any() else "?"
    sub = [
        tr("long_range.text.chart.context_sub", context_within_pct=f"{100 * CONTEXT_WITHIN:.0f}"),
        device_subtitle(d, tr),
    ]
    return titled(line, tr("long_range.text.chart.context", tail=tail), sub, height=HALF_HEIGHT)


def recall_chart(df: pd.DataFrame, tr) -> alt.Chart | None:
    """Bits per byte on recall bytes and on the others, a bar per model (the mean over seeds), a tick per seed."""
    d = measure_rows(df, "recall_split")
    if not len(d):
        return None
    d = d.assign(part=d["split"].map(lambda s: tr(f"long_range.text.split.{s}")))
    mean = d.groupby(["model", "split", "part"], as_index=False, sort=False)["bits_per_byte"].mean()
    order = [tr("long_range.text.split.recall"), tr("long_range.text.split.other")]
    x = alt.X("part:N", title=None, sort=order, axis=alt.Axis(labelAngle=0))
    y = alt.Y("bits_per_byte:Q", title=tr("long_range.text.axis.bits"))
    color = model_color(d["model"], tr, HALF_COLUMNS)
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
    return titled(alt.layer(bars, ticks), tr("long_range.text.chart.recall"), sub, height=HALF_HEIGHT)


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
