"""Charts of page 5's closing section: recall accuracy against the bytes of state kept per sequence (log x, one line
per model through its widths, attention at its KV-cache size), accuracy against the number of pairs at one width,
and selective copying per model, grouped by whether its gates read the input. Chance as a dashed rule."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.charts.answers import LEGEND
from core.charts.common import device_subtitle, titled
from core.findings import recall_frontier as findings
from core.models import mixers


def _named(d: pd.DataFrame, tr) -> pd.DataFrame:
    d = d[d["mixer"].isin(list(mixers.MIXERS))]
    return d.assign(name=[tr(f"model.{m}") for m in d["mixer"]], percent=100 * d["accuracy"], lo_pct=100 * d["lo"],
                    hi_pct=100 * d["hi"], chance_pct=100 * d["chance"])  # fmt: skip


def _color(d: pd.DataFrame, tr) -> alt.Color:
    domain, colours = mixers.colors(list(dict.fromkeys(d["mixer"])))
    return alt.Color("name:N", title=tr("answers.axis.mixer"), legend=LEGEND,
                     scale=alt.Scale(domain=[tr(f"model.{m}") for m in domain], range=colours))  # fmt: skip


def _y(tr) -> alt.Y:
    return alt.Y("percent:Q", title=tr("recall.axis.accuracy"), scale=alt.Scale(domain=[0, 100]))


def _chance(d: pd.DataFrame, tr) -> alt.Chart:
    return (
        alt.Chart(d)
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(y="mean(chance_pct):Q", tooltip=[alt.Tooltip("mean(chance_pct):Q", title=tr("recall.axis.chance"))])
    )


def _detail(d: pd.DataFrame) -> dict:
    return {"detail": "run:N"} if "run" in d else {}


def _tips(d: pd.DataFrame, fields) -> list[str]:
    return [f for f in fields if f in d]


def _subtitle(rows: pd.DataFrame, tr, key: str, **values) -> str:
    sub = tr(key, **values)
    dev = device_subtitle(rows, tr)
    return f"{sub} · {dev}" if dev else sub


def frontier_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Accuracy against state bytes at the largest number of pairs: a point per (model, width), a line per model."""
    d = _named(findings.frontier(df), tr)
    d = d.assign(state_kib=d["state_bytes"] / 1024)
    tips = _tips(d, ["name", "d_model", "state_bytes", "percent", "lo_pct", "hi_pct", "seeds", "step", "params", "run"])
    x = alt.X("state_kib:Q", scale=alt.Scale(type="log"), title=tr("recall.axis.state_kib"),
              axis=alt.Axis(format="~g"))  # fmt: skip
    line = (
        alt.Chart(d)
        .mark_line(point=alt.OverlayMarkDef(filled=True, size=60))
        .encode(x=x, y=_y(tr), color=_color(d, tr), **_detail(d), tooltip=tips)
    )
    spread = alt.Chart(d).mark_rule(strokeWidth=2, opacity=0.5).encode(x=x, y="lo_pct:Q", y2="hi_pct:Q",
                                                                        color=_color(d, tr), **_detail(d))  # fmt: skip
    P = int(d["n_pairs"].max()) if len(d) else 0
    T = int(d["seq_len"].max()) if len(d) else 0
    return titled(line + spread + _chance(d, tr), tr("recall.chart.frontier"),
                  _subtitle(d, tr, "recall.chart.frontier_sub", P=P, T=T))  # fmt: skip


def pairs_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Accuracy against the number of key-value pairs at one width."""
    d = _named(findings.pairs(df), tr)
    x = alt.X("n_pairs:Q", title=tr("recall.axis.pairs"), scale=alt.Scale(type="log", base=2))
    tips = _tips(d, ["name", "n_pairs", "state_bytes", "percent", "lo_pct", "hi_pct", "seeds", "step", "run"])
    line = alt.Chart(d).mark_line(point=True).encode(x=x, y=_y(tr), color=_color(d, tr), **_detail(d), tooltip=tips)
    spread = alt.Chart(d).mark_rule(strokeWidth=2, opacity=0.5).encode(x=x, y="lo_pct:Q", y2="hi_pct:Q",
                                                                        color=_color(d, tr), **_detail(d))  # fmt: skip
    w = findings.pairs_width(df) or 0
    return titled(
        line + spread + _chance(d, tr), tr("recall.chart.pairs"), _subtitle(d, tr, "recall.chart.pairs_sub", d=w)
    )


def copy_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Selective copying: a bar per model, grouped by what decides what its state keeps."""
    d = _named(findings.copying(df), tr)
    group = {True: "selective", False: "fixed", None: "attention"}
    d = d.assign(group=[tr(f"recall.group.{group[mixers.get(m).selective]}") for m in d["mixer"]])
    order = [tr(f"recall.group.{g}") for g in ("selective", "fixed", "attention")]
    tips = _tips(d, ["name", "group", "percent", "lo_pct", "hi_pct", "seeds", "step", "state_bytes", "run"])
    y = alt.Y("name:N", title=None, sort=alt.EncodingSortField("percent", order="descending"))
    offset = {"yOffset": alt.YOffset("run:N")} if "run" in d and d["run"].nunique() > 1 else {}  # live beside reference
    bars = (
        alt.Chart(d)
        .mark_bar()
        .encode(
            x=alt.X("percent:Q", title=tr("recall.axis.accuracy"), scale=alt.Scale(domain=[0, 100])),
            y=y,
            color=_color(d, tr),
            tooltip=tips,
            **offset,
        )
    )
    chance = (
        alt.Chart(d)
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(x="mean(chance_pct):Q", tooltip=[alt.Tooltip("mean(chance_pct):Q", title=tr("recall.axis.chance"))])
    )
    chart = (
        alt.layer(bars, chance, data=d)
        .properties(width=220, height=alt.Step(16))
        .facet(row=alt.Row("group:N", title=None, sort=order, header=alt.Header(labelAngle=0, labelAlign="left")))
        .resolve_scale(y="independent")
    )
    n = int(d["n_pairs"].max()) if len(d) else 0
    sub = _subtitle(d, tr, "recall.chart.copy_sub", n=n, d=int(d["d_model"].max()) if len(d) else 0)
    return chart.properties(title=alt.TitleParams(tr("recall.chart.copy"), subtitle=sub, anchor="start"))
