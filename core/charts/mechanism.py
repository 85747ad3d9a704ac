"""The instant views' charts (core.mechanism computes what they draw): each redraws as its slider moves."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from core.charts.common import Chart, decades_y, titled

RULE = "black"  # the slider's setting, drawn as a dashed rule
from core.mechanism import answers as answers_view
from core.models import registry


def model_color(models, tr, title: str, legend: bool = True, names: str = "model") -> alt.Color:
    """Each model's own colour, named in the page's language by its `<names>.<model>` key (in a legend below the
    plot, unless `legend` is off)."""
    domain, colors = registry.colors(models)
    label = "".join(f"datum.label === {json.dumps(m)} ? {json.dumps(tr(f'{names}.{m}'))} : " for m in domain)
    shown = alt.Legend(labelExpr=label + "datum.label", orient="bottom") if legend else None
    return alt.Color("model:N", title=title, scale=alt.Scale(domain=domain, range=colors), legend=shown)


def chain_chart(frame: pd.DataFrame, n: int, tr) -> alt.Chart:
    """Page 1: one bar per model as long as its measured step, cut into its dependent steps (at most DRAWN drawn)."""
    d = frame.assign(name=frame["model"].map(lambda m: tr(f"model.{m}")))
    enc = {
        "y": alt.Y("name:N", title=None, sort=list(dict.fromkeys(d["name"]))),
        "x": alt.X("start_ms:Q", title=tr("serial.instant.axis.ms")),
        "x2": "end_ms:Q",
        "color": model_color(d["model"], tr, tr("serial.instant.axis.model"), legend=False),  # the axis names them
        "tooltip": [
            alt.Tooltip("name:N", title=tr("serial.instant.axis.model")),
            alt.Tooltip("steps:Q", title=tr("serial.instant.axis.steps"), format=","),
            alt.Tooltip("total_ms:Q", title=tr("serial.instant.axis.ms"), format=".3g"),
        ],
    }
    c = Chart(d).mark_bar(stroke="white", strokeWidth=1.5, height=28).encode(**enc)
    sub = tr("serial.instant.chart.sub", n=f"{n:,}")
    return titled(c, tr("serial.instant.chart"), sub, height=190)


def reach_chart(frame: pd.DataFrame, d: int, tr) -> alt.Chart:
    """Page 2: the gradient reaching token 0 from token k (relative to k = 1, log y) and a rule at the slider's d."""
    ok = frame[(frame["relative"] > 0) & frame["distance"].isin(drawn_distances(d))]
    color = model_color(ok["model"], tr, tr("long_range.instant.axis.model"), names="long_range.model")
    x = alt.X("distance:Q", title=tr("long_range.instant.axis.distance"), scale=alt.Scale(domain=[1, 1000]))
    y = alt.Y("relative:Q", scale=alt.Scale(type="log"), axis=alt.Axis(format=".0e"),
              title=tr("long_range.instant.axis.relative"))  # fmt: skip
    line = Chart(ok).mark_line().encode(x=x, y=y, color=color)
    here = ok[ok["distance"] == d]
    points = (
        Chart(here)
        .mark_point(filled=True, size=80)
        .encode(x="distance:Q", y="relative:Q", color=color, tooltip=["model:N", "relative:Q"])
    )
    rule = Chart(pd.DataFrame({"distance": [d]})).mark_rule(color=RULE, strokeDash=[4, 3]).encode(x="distance:Q")
    sub = tr("long_range.instant.chart.sub", d=f"{d:,}")
    return titled(alt.layer(line, rule, points), tr("long_range.instant.chart"), sub, 330)


def drawn_distances(d: int, most: int = 1000) -> set[int]:
    """The distances a reach line is drawn through: about 80 spaced evenly on the log axis, and d itself."""
    import numpy as np

    return set(np.unique(np.round(np.logspace(0, np.log10(most), 100)).astype(int)).tolist()) | {d, most - 1}


def spec(chart: alt.Chart) -> dict:
    """The chart's spec without Altair's schema check (tests/test_instant.py validates every chart)."""
    return {**chart.to_dict(validate=False), "usermeta": {"instant": True}}  # a test tells it from a result chart


def layers_chart(frame: pd.DataFrame, n_layers: int, tr) -> alt.Chart:
    """Page 3: each layer's gradient norm at initialisation (log y), one line per stack."""
    x = alt.X("layer:Q", title=tr("depth.instant.axis.layer"), scale=alt.Scale(domain=[1, max(2, n_layers)]),
              axis=alt.Axis(tickMinStep=1, format="d"))  # fmt: skip
    y = decades_y("grad_norm", tr("depth.instant.axis.grad"), frame["grad_norm"])  # ticks as the page's own charts
    c = Chart(frame).mark_line(point=True).encode(
        x=x, y=y, color=model_color(frame["model"], tr, tr("depth.instant.axis.model"), names="depth.model"),
        tooltip=["model:N", "layer:Q", alt.Tooltip("grad_norm:Q", format=".2e")],
    )  # fmt: skip
    sub = tr("depth.instant.chart.sub", n=n_layers)
    return titled(c, tr("depth.instant.chart"), sub, height=330)


BYTES_FLOOR = 2**10  # where the bytes bars start on their log axis: below every bar the view draws
LEVELS_FLOOR = 0.5  # where the levels bars start, so that one level still shows as a bar
LABELS_PX = 300  # room for a bar's name beside the axis


def bytes_chart(frame: pd.DataFrame, memory_bytes: float, tr) -> alt.Chart:
    """Page 4: one bar per kind of memory (log x, from BYTES_FLOOR), the device's free memory as a red rule."""
    d = frame.assign(name=frame["what"].map(lambda w: tr(f"attention_cost.instant.bar.{w}")),
                     group=frame["kind"].map(lambda k: tr(f"attention_cost.instant.kind.{k}")),
                     fits=frame["bytes"] <= memory_bytes, floor=BYTES_FLOOR)  # fmt: skip
    top = max(float(d["bytes"].max()), memory_bytes) * 4
    x = alt.X("bytes:Q", scale=alt.Scale(type="log", domain=[BYTES_FLOOR, top]),
              title=tr("attention_cost.instant.axis.bytes"), axis=alt.Axis(format="~s"))  # fmt: skip
    y = alt.Y("name:N", sort=list(d["name"]), title=None, axis=alt.Axis(labelLimit=LABELS_PX))
    groups = [tr(f"attention_cost.instant.kind.{k}") for k in ("train", "decode")]  # in this order, in any language
    legend = alt.Legend(orient="bottom", direction="vertical", labelLimit=LABELS_PX * 2)
    color = alt.Color("group:N", title=None, legend=legend, scale=alt.Scale(domain=groups))
    bars = Chart(d).mark_bar(height=18).encode(
        x=x, x2="floor:Q", y=y, color=color, opacity=alt.condition("datum.fits", alt.value(1.0), alt.value(0.45)),
        tooltip=["name:N", alt.Tooltip("bytes:Q", format=",")],
    )  # fmt: skip
    wall = Chart(pd.DataFrame({"bytes": [memory_bytes]})).mark_rule(color="#d62728", strokeWidth=2).encode(x="bytes:Q")
    sub = tr("attention_cost.instant.chart.sub")
    return titled(alt.layer(bars, wall), tr("attention_cost.instant.chart"), sub, 300)


def levels_chart(frame: pd.DataFrame, n: int, tr) -> alt.Chart:
    """Page 5: the dependent levels of each form at n (log x, from LEVELS_FLOOR), each bar labelled with its count."""
    d = frame.assign(name=frame["form"].map(lambda f: tr(f"answers.instant.form.{f}")), floor=LEVELS_FLOOR)
    top = 4 * max(n, 8)
    ticks = [10**k for k in range(len(str(top)))]  # 1, 10, 100, …: whole levels only
    x = alt.X("levels:Q", scale=alt.Scale(type="log", domain=[LEVELS_FLOOR, top]),
              title=tr("answers.instant.axis.levels"), axis=alt.Axis(format="~s", values=ticks))  # fmt: skip
    y = alt.Y("name:N", sort=list(d["name"]), title=None, axis=alt.Axis(labelLimit=LABELS_PX))
    c = (
        Chart(d)
        .mark_bar(height=22)
        .encode(x=x, x2="floor:Q", y=y, tooltip=["name:N", alt.Tooltip("levels:Q", format=",")])
    )
    text = Chart(d).mark_text(align="left", dx=4).encode(x="levels:Q", y=y, text=alt.Text("levels:Q", format=","))
    sub = tr("answers.instant.chart.sub", n=f"{n:,}")
    return titled(alt.layer(c, text), tr("answers.instant.chart"), sub, height=190)


def tree_chart(n: int, tr) -> alt.Chart:
    """Page 5: the scan's combines for n ≤ TREE_MAX positions, level by level (the loop's chain beside it would be
    n − 1 levels of one combine each)."""
    t = answers_view.tree(n)
    t = t.assign(sweep_name=t["sweep"].map(lambda s: tr(f"answers.instant.sweep.{s}")))
    y = alt.Y("level:O", title=tr("answers.instant.axis.level"))
    order = [tr(f"answers.instant.sweep.{s}") for s in ("up", "down")]  # the sweeps' order, in any language
    color = alt.Color("sweep_name:N", title=None, legend=alt.Legend(orient="bottom"), scale=alt.Scale(domain=order))
    edges = Chart(t).mark_rule(strokeWidth=2).encode(x=alt.X("from:Q", title=tr("answers.instant.axis.position")),
                                                     x2="to:Q", y=y, color=color)  # fmt: skip
    ends = Chart(t).mark_point(filled=True, size=50).encode(x="to:Q", y=y, color=color)
    sub = tr("answers.instant.tree.sub", n=int(t[["to", "from"]].max().max()) + 1)
    return titled(alt.layer(edges, ends), tr("answers.instant.tree"), sub, height=300)
