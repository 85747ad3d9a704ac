"""Charts of the long-range page: gradient reach (log y), accuracy vs distance, training curves, the attention map."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from core.charts.common import (
    PADDING,
    Chart,
    chance_rule,
    covered,
    device_subtitle,
    lines,
    ok_rows,
    run_style,
    thin,
    tips,
    title,
    titled,
    under_band,
)
from core.findings.long_range import by_distance, task_order
from core.models import registry


def _model_color(models, tr) -> alt.Color:
    """One colour per model across the page, from its record: recurrent models warm, attention cool; the legend
    names each model in the page's language (the data keep the ids the colours are keyed by)."""
    domain, colors = registry.colors(models)
    names = {m: tr(f"long_range.model.{m}") for m in domain}
    label = "".join(f"datum.label === {json.dumps(m)} ? {json.dumps(n)} : " for m, n in names.items()) + "datum.label"
    return alt.Color(
        "model:N",
        title=tr("long_range.axis.model"),
        scale=alt.Scale(domain=domain, range=colors),
        legend=alt.Legend(labelExpr=label),
    )


def percents(d: pd.DataFrame) -> pd.DataFrame:
    """The rows with their accuracies in percent: the median over seeds (`percent`), the lowest, the highest, chance."""
    return d.assign(percent=100 * d["accuracy"], **{f"{k}_pct": 100 * d[k] for k in ("lo", "hi", "chance")})


def seed_bars(d: pd.DataFrame, x, color: alt.Color, opacity: float) -> alt.Chart:
    """A bar from the lowest to the highest seed's accuracy at each point."""
    return Chart(d).mark_rule(strokeWidth=2, opacity=opacity).encode(x=x, y="lo_pct:Q", y2="hi_pct:Q", color=color)


def percent_axis(title: str) -> alt.Y:
    """Accuracy in percent, on a 0–100 axis."""
    return alt.Y("percent:Q", title=title, scale=alt.Scale(domain=[0, 100]))


def reach_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """‖∂y_T/∂x_(T−k)‖ against k, log y; exact zeros (float32 underflow) cannot sit on a log axis and are dropped."""
    d = ok_rows(df)
    d = d[d["grad_norm"] > 0]
    x = alt.X("distance:Q", title=tr("long_range.axis.distance_k"))
    y = alt.Y(
        "grad_norm:Q", scale=alt.Scale(type="log"), axis=alt.Axis(format=".0e"), title=tr("long_range.axis.grad_norm")
    )
    tooltip = tips(d, ["model", "distance", "grad_norm", "reach", "run"])
    c = lines(d, x, y, "model", tr("long_range.axis.model"), tooltip=tooltip)
    c = c.mark_line(point=False).encode(color=_model_color(d["model"], tr))
    return titled(c, tr("long_range.chart.reach"), device_subtitle(d, tr))


COVERED_PCT = 1.5  # accuracy points: two lines this close draw as one line at the panels' size


def task_names(tasks, tr) -> dict[str, str]:
    """Each task's name in the page's language, in the tasks' order (task_order): the panels' order in every
    language, not the sorted order of the names."""
    return {t: tr(f"long_range.task.{t}") for t in task_order(tasks)}


def two_lines(text: str) -> list[str] | str:
    """An axis title broken before its bracket ('distance d' / '(tokens between …)'), for a narrow panel."""
    for bracket in (" (", "（"):
        if bracket in text:
            head, tail = text.split(bracket, 1)
            return [head, bracket.strip() + tail]
    return text


LOG_SPREAD = 30  # distances spanning this factor or more are drawn on a log axis


def accuracy_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Final held-out accuracy against distance, one line per model (and run): the median over seeds, a bar from the
    lowest to the highest seed; chance as a dashed rule; one panel per task."""
    last = percents(by_distance(df))
    last = last.assign(covered=covered(last, "distance", "percent", ["model", "run"], COVERED_PCT, panel=("task",)))
    panels = task_names(last["task"], tr)
    last = last.assign(task=last["task"].map(panels))
    spread = last["distance"].max() / max(last["distance"].min(), 1) if len(last) else 1
    scale = alt.Scale(type="log") if spread >= LOG_SPREAD else alt.Undefined  # the chapter's 800 beside 2, 12, 36
    x = alt.X("distance:Q", title=two_lines(tr("long_range.axis.distance")), scale=scale)  # under a narrow panel
    tooltip = tips(last, ["task", "model", "distance", "percent", "lo_pct", "hi_pct", "seeds", "step", "params", "run"])
    y = percent_axis(tr("long_range.axis.accuracy"))
    line = lines(last, x, y, "model", tr("long_range.axis.model"), tooltip=tooltip)
    line = line.encode(color=_model_color(last["model"], tr))
    spread = seed_bars(last, "distance:Q", _model_color(last["model"], tr), 0.6)
    chance = chance_rule(last, tr("long_range.axis.chance"))
    # a line another covers (LSTM + attention under the Transformer, both at 100%) as a band beneath that one
    band = under_band(Chart(), x=x, y=y, color=_model_color(last["model"], tr), **run_style(last, legend=False))
    chart = (
        alt.layer(band, line, spread, chance, data=last)
        .properties(width=180, height=220)
        .facet(column=alt.Column("task:N", title=None, sort=list(panels.values())))
    )
    sub = device_subtitle(last, tr) if "device" in last else ""
    if last["covered"].any():
        sub = [tr("chart.under_band"), sub] if sub else tr("chart.under_band")
    return chart.properties(title=title(tr("long_range.chart.accuracy"), sub), padding=PADDING)


def curve_columns(panels: int, per_task: int, most: int = 4) -> int:
    """Columns of the training-curve grid: every panel in one row if they fit, else a task's distances per row
    (no row of empty axes after the last panel), at most `most` wide."""
    return panels if panels <= most else max(1, min(most, per_task))


def curves_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Held-out accuracy against training step: one panel per (task, distance), one line per model, chance dashed."""
    d = ok_rows(df).assign(percent=lambda x: 100 * x["accuracy"], chance_pct=lambda x: 100 * x["chance"])
    d = thin(d, ["run", "task", "distance", "model", "seed"])  # a long live run: Altair draws at most 5,000 rows
    d = d.assign(
        panel=d["task"].map(lambda t: tr(f"long_range.task.{t}")) + " · d=" + d["distance"].astype(int).astype(str)
    )
    enc = {
        "x": alt.X("step:Q", title=tr("long_range.axis.step")),
        "y": percent_axis(tr("long_range.axis.accuracy")),
        "color": _model_color(d["model"], tr),
        "tooltip": tips(d, ["task", "model", "distance", "seed", "step", "percent", "loss", "train_s", "run"]),
    }
    enc.update(run_style(d))
    if "seed" in d and d["seed"].nunique() > 1:  # one line per seed (and run)
        enc["detail"] = ["seed:N"] + (["run:N"] if "run" in d else [])
    line = Chart(d).mark_line(point=True).encode(**enc)
    chance = Chart(d).mark_rule(strokeDash=[4, 4], color="gray").encode(y="mean(chance_pct):Q")
    rank = {t: i for i, t in enumerate(task_names(d["task"], tr))}  # the accuracy chart's order of tasks
    order = list(dict.fromkeys(d.assign(rank=d["task"].map(rank)).sort_values(["rank", "distance"])["panel"]))
    per_task = int(d.groupby("task")["distance"].nunique().max()) if len(d) else 1
    chart = (
        alt.layer(line, chance, data=d)
        .properties(width=110, height=150)
        .facet(facet=alt.Facet("panel:N", title=None, sort=order), columns=curve_columns(len(order), per_task))
    )
    return chart.properties(
        title=title(tr("long_range.chart.curves"), tr("long_range.chart.curves_sub")), padding=PADDING
    )


def attention_map_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Heat map: one row per attention head (and one for the LSTM's saliency), one column per position."""
    order = list(dict.fromkeys(df.sort_values("position")["label"]))
    angled = alt.Axis(labelAngle=-60, labelOverlap=False)
    base = Chart(df).encode(
        x=alt.X("label:N", sort=order, title=tr("long_range.axis.position"), axis=angled),
        y=alt.Y("row:N", title=None, sort=list(dict.fromkeys(df["row"])), axis=alt.Axis(labelLimit=300)),
    )
    cells = base.mark_rect().encode(
        color=alt.Color("share:Q", title=tr("long_range.axis.share"), scale=alt.Scale(scheme="blues", domain=[0, 1])),
        tooltip=["row", "position", "word", alt.Tooltip("share:Q", format=".3f")],
    )
    text = base.mark_text(fontSize=9).encode(
        text=alt.Text("share:Q", format=".2f"),
        color=alt.condition("datum.share > 0.5", alt.value("white"), alt.value("black")),
    )
    # a fixed height collapses the rows in Streamlit's autosize
    return (cells + text).properties(
        title=title(tr("long_range.chart.map"), tr("long_range.chart.map_sub")), height=alt.Step(36), padding=PADDING
    )
