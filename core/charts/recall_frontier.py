"""Charts of page 5's closing section: recall accuracy against the bytes of state kept per sequence (log x, one line
per model through its widths, attention at its KV-cache size), accuracy against the number of pairs at one width,
and selective copying per model, grouped by whether its gates read the input. Chance as a dashed rule."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.charts.answers import mixer_color
from core.charts.common import (
    PADDING,
    Chart,
    chance_rule,
    device_subtitle,
    filled_points,
    run_style,
    tips,
    title,
    titled,
)
from core.charts.long_range import percent_axis, percents, seed_bars
from core.findings import recall_frontier as findings
from core.models import registry
from core.models.registry import ANSWERS

WRITTEN = "written"  # the form of a run whose pairs were written into each state, not learned (recall_frontier)


def _named(d: pd.DataFrame, tr) -> pd.DataFrame:
    d = d[d["mixer"].isin(registry.names(ANSWERS))]
    return percents(d.assign(name=[tr(f"model.{m}") for m in d["mixer"]]))


def _written(df: pd.DataFrame, tr) -> pd.DataFrame:
    """The rows, a run that wrote its pairs and trained nothing saying so in its name (before the seeds are
    summarised, which keeps the run and drops the form)."""
    if not len(df) or "run" not in df or "form" not in df:
        return df
    return df.assign(run=[r + tr("recall.run_written") if f == WRITTEN else r for r, f in zip(df["run"], df["form"])])


def _color(d: pd.DataFrame, tr, focus=None) -> alt.Color:
    shown = set(d["mixer"])
    return mixer_color([m for m in registry.names(ANSWERS) if m in shown], tr, focus)  # the records' order


def question_pair(d: pd.DataFrame) -> set:
    """The question's pair among the mixers drawn: those whose state pairs can be written into (linear attention's
    fixed matrix, attention's cache), in colour; the others grey."""
    return {m for m in set(d["mixer"]) if m in registry.MODELS and registry.get(m).recall} if len(d) else set()


def _detail(d: pd.DataFrame) -> dict:
    """One line per run (live beside reference): your run solid and bold, the reference thin and dashed."""
    return run_style(d)


def _settings(d: pd.DataFrame, tr, key: str) -> list[str]:
    """What each run shown measured ('16 pairs, 64 tokens'), a line per run, named by its run where there are
    several."""
    lines = []
    for g in findings.runs_shown(d):
        if not len(g):
            continue
        said = tr(
            key,
            P=int(g["n_pairs"].max()),
            T=int(g["seq_len"].max()),
            d=int(g["d_model"].max()),
            n=int(g["n_pairs"].max()),
        )
        several = "run" in g and d["run"].nunique() > 1
        lines.append(tr("recall.chart.run_line", run=g["run"].iloc[0], said=said) if several else said)
    return lines


def _subtitle(rows: pd.DataFrame, tr, key: str) -> str | list[str]:
    """One line ('16 pairs, 64 tokens · cpu · …') for one run; a line per run, each named, for several."""
    lines = _settings(rows, tr, key)
    if len(lines) > 1:
        return lines
    dev = device_subtitle(rows, tr)
    sub = lines[0] if lines else ""
    return f"{sub} · {dev}" if dev and sub else sub or dev


def _curves(d: pd.DataFrame, x: alt.X, tr, chart: str, tooltip, point) -> alt.Chart:
    """A line per model (and run) through its medians, a bar from its lowest to its highest seed, chance; titled
    `recall.chart.<chart>` over what each run measured."""
    tooltip = tips(d, tooltip)
    y = percent_axis(tr("recall.axis.accuracy"))
    pair = question_pair(d)
    d = d.sort_values("mixer", key=lambda m: m.isin(pair), kind="stable") if len(d) else d  # the pair drawn last
    color = _color(d, tr, pair or None)
    line = Chart(d).mark_line(point=point).encode(x=x, y=y, color=color, **_detail(d), tooltip=tooltip)
    layers = line + seed_bars(d, x, color, 0.5) + chance_rule(d, tr("recall.axis.chance"))
    return titled(layers, tr(f"recall.chart.{chart}"), _subtitle(d, tr, f"recall.chart.{chart}_sub"))


def frontier_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Accuracy against state bytes at the largest number of pairs: a point per (model, width), a line per model."""
    d = _named(findings.frontier(_written(df, tr)), tr)
    d = d.assign(state_kib=d["state_bytes"] / 1024)
    x = alt.X("state_kib:Q", scale=alt.Scale(type="log"), title=tr("recall.axis.state_kib"), axis=alt.Axis(format="~g"))
    tooltip = ["name", "d_model", "state_bytes", "percent", "lo_pct", "hi_pct", "seeds", "step", "params", "run"]
    return _curves(d, x, tr, "frontier", tooltip, filled_points())


def pairs_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Accuracy against the number of key-value pairs at one width."""
    d = _named(findings.pairs(_written(df, tr)), tr)
    x = alt.X("n_pairs:Q", title=tr("recall.axis.pairs"), scale=alt.Scale(type="log", base=2))
    tooltip = ["name", "n_pairs", "state_bytes", "percent", "lo_pct", "hi_pct", "seeds", "step", "run"]
    return _curves(d, x, tr, "pairs", tooltip, True)


def copy_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Selective copying: a bar per model, grouped by what decides what its state keeps."""
    d = _named(findings.copying(_written(df, tr)), tr)
    group = {True: "selective", False: "fixed", None: "attention"}
    d = d.assign(group=[tr(f"recall.group.{group[registry.get(m).selective]}") for m in d["mixer"]])
    order = [tr(f"recall.group.{g}") for g in ("selective", "fixed", "attention")]
    tooltip = tips(d, ["name", "group", "percent", "lo_pct", "hi_pct", "seeds", "step", "state_bytes", "run"])
    y = alt.Y(
        "name:N",
        title=None,
        sort=alt.EncodingSortField("percent", order="descending"),
        axis=alt.Axis(labelLimit=220, labelOverlap=False),
    )
    offset = {"yOffset": alt.YOffset("run:N")} if "run" in d and d["run"].nunique() > 1 else {}  # live beside reference
    bars = (
        Chart(d)
        .mark_bar()
        .encode(
            x=alt.X("percent:Q", title=tr("recall.axis.accuracy"), scale=alt.Scale(domain=[0, 100])),
            y=y,
            color=_color(d, tr).legend(None),  # the axis names each bar
            tooltip=tooltip,
            **offset,
        )
    )
    chance = chance_rule(d, tr("recall.axis.chance"), axis="x")
    chart = (
        alt.layer(bars, chance, data=d)
        .properties(width=300, height=alt.Step(20))
        .facet(row=alt.Row("group:N", title=None, sort=order, header=alt.Header(labelAngle=0, labelAlign="left")))
        .resolve_scale(y="independent")
    )
    sub = _subtitle(d, tr, "recall.chart.copy_sub")
    return chart.properties(title=title(tr("recall.chart.copy"), sub), padding=PADDING)
