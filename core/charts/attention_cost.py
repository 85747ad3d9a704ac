"""Charts of the attention-cost page: memory and time vs n (log-log, with slope-1 and slope-2 guides), the wall
extrapolated to long contexts, and the KV cache (measured and by formula) against the device's memory."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from core.charts.common import (
    Chart,
    covered,
    device_subtitle,
    lines,
    log_x,
    log_y,
    ok_rows,
    run_style,
    titled,
    under_band,
)
from core.findings import bracketed
from core.findings.notes import note_text
from core.models import attention
from core.terms import status

GUIDE_COLOR = "#9a9a9a"
IMPL_COLORS = {"naive": "#d62728", "linear": "#2ca02c", "lstm_state": "#7f7f7f"}
SDPA_COLORS = ("#1f77b4", "#9467bd", "#17becf", "#8c564b", "#e377c2")  # one per backend that ran
SCHEME_COLORS = {"mha": "#d62728", "gqa": "#1f77b4", "mqa": "#2ca02c", "rnn_state": "#7f7f7f"}


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    d = ok_rows(df)
    return d[d["point"] == "sweep"] if "point" in d else d


LEGEND_ROW_PX = 30  # a legend entry's row under the plot


def _titled(chart: alt.Chart, title: str, subtitle: str = "", legend_rows: int = 3) -> alt.Chart:
    """The house title, with room for a legend of `legend_rows` rows under the plot."""
    return titled(chart, title, subtitle, height=420 + LEGEND_ROW_PX * max(legend_rows - 3, 0))


def impl_label(row, tr) -> str:
    """'naive', 'sdpa · flash', 'sdpa · math (forced)' ('sdpa · math（强制）'), 'linear', 'LSTM state (inference)'."""
    record = attention.IMPLS.get(row["impl"])
    if record is not None and record.uses_backends:
        forced = attention.forced(row.get("requested_backend", attention.AUTO))
        return f"{row['impl']} · {row['backend']}" + (bracketed(tr("attention_cost.forced"), tr) if forced else "")
    return tr(f"attention_cost.impl.{row['impl']}")


def with_labels(df: pd.DataFrame, tr) -> pd.DataFrame:
    if not len(df):
        return df.assign(label=pd.Series(dtype=str))
    return df.assign(label=[impl_label(r, tr) for _, r in df.iterrows()])


def impl_color(d: pd.DataFrame, title: str) -> alt.Color:
    """Fixed colours: naive red, SDPA blues/purples (one per backend), linear green, the LSTM grey."""
    labels = list(dict.fromkeys(d["label"])) if len(d) else []
    sdpa = iter(SDPA_COLORS * 2)
    impl_of = dict(zip(d["label"], d["impl"])) if len(d) else {}
    colors = [IMPL_COLORS.get(impl_of[lb]) or next(sdpa) for lb in labels]
    legend = alt.Legend(orient="bottom", columns=1, labelLimit=400)  # one row each: two columns overflow
    return alt.Color("label:N", title=title, scale=alt.Scale(domain=labels, range=colors), legend=legend)


COVERED_DECADES = 0.1  # two lines this close on the log-log axes draw as one line


def _impl_lines(d: pd.DataFrame, tr, y: str, axis: str, tooltip: list) -> alt.Chart:
    """A line per implementation (and run) against n, log-log, each in its fixed colour; a line another covers (naive
    under sdpa · math, which keeps the same n × n matrix) as a band beneath it."""
    x, y = log_x("seq_len", tr("attention_cost.axis.seq_len")), log_y(y, tr(f"attention_cost.axis.{axis}"))
    tooltip = tooltip + (["run:N"] if "run" in d else [])
    impl = tr("attention_cost.axis.impl")
    chart = lines(d, x, y, "label", impl, tooltip=tooltip).encode(color=impl_color(d, impl))
    if "run" in d and d["run"].nunique() > 1:  # the implementations' legend fills the bottom: the runs go right
        chart = chart.encode(strokeDash=run_style(d, legend_orient="right")["strokeDash"])
    if "covered" not in d or not d["covered"].any():
        return chart
    band = under_band(Chart(d), x=x, y=y, color=impl_color(d, impl), detail="run:N" if "run" in d else "label:N")
    return alt.layer(band, chart)


def with_covered(d: pd.DataFrame, y: str) -> pd.DataFrame:
    """The rows with `covered`: whether a line drawn after their own hides it (common.covered)."""
    if not len(d):
        return d.assign(covered=pd.Series(dtype=bool))
    return d.assign(covered=covered(d, "seq_len", y, ["label", "run"], COVERED_DECADES, log=True))


def _covered_note(d: pd.DataFrame, tr) -> str:
    return tr("chart.under_band") + " " if "covered" in d and d["covered"].any() else ""


def guides(x_min: float, x_max: float, y0: float, tr, slopes=(1, 2)) -> pd.DataFrame:
    """Reference lines y = y0·(x/x_min)^k through the smallest point, for judging a slope by eye."""
    if not (x_min > 0 and x_max > x_min and y0 > 0):
        return pd.DataFrame(columns=["x", "y", "guide"])
    ends = [(k, x) for k in slopes for x in (x_min, x_max)]
    return pd.DataFrame(
        [{"x": x, "y": y0 * (x / x_min) ** k, "guide": tr("attention_cost.guide", k=k)} for k, x in ends]
    )


def _guides(d: pd.DataFrame, y: str, tr) -> list[alt.Chart]:
    """The slope guides through the rows' smallest length (at the median of `y` there), each labelled at its end."""
    n = d["seq_len"] if len(d) else pd.Series([0.0])
    g = guides(n.min(), n.max(), float(d.loc[n == n.min(), y].median()) if len(d) else 0, tr)
    lines = (
        Chart(g)
        .mark_line(color=GUIDE_COLOR, strokeDash=[2, 3])
        .encode(x="x:Q", y="y:Q", detail="guide:N", tooltip=["guide:N"])
    )
    ends = g.groupby("guide", as_index=False).last() if len(g) else g
    labels = Chart(ends).mark_text(align="left", dx=4, color=GUIDE_COLOR).encode(x="x:Q", y="y:Q", text="guide:N")
    return [lines, labels]


def memory_chart(df: pd.DataFrame, tr, metric: str = "saved_bytes") -> alt.Chart:
    """Bytes vs n on log-log axes, one line per implementation, with slope guides and one score matrix dashed."""
    d = with_labels(_ok(df), tr)
    d = d[d[metric].notna()] if len(d) else d
    d = d.assign(mib=d[metric] / 2**20) if len(d) else d.assign(mib=pd.Series(dtype=float))
    d = with_covered(d, "mib")
    main = _impl_lines(d, tr, "mib", metric, ["label:N", "seq_len:Q", "mib:Q", "peak_kind:N"])
    score = d.drop_duplicates(["seq_len"]).assign(score_mib=lambda x: x["analytic_bytes"] / 2**20) if len(d) else d
    one_matrix = (
        Chart(score)
        .mark_line(color="black", strokeDash=[6, 3], opacity=0.5)
        .encode(x="seq_len:Q", y="score_mib:Q", tooltip=["seq_len:Q", "score_mib:Q"])
    )
    chart = alt.layer(main, *_guides(d, "mib", tr), one_matrix)
    subtitle = _covered_note(d, tr) + tr("attention_cost.chart.memory_sub")
    refused = _refused(df, tr) if metric == "peak_bytes" else df.iloc[0:0]
    if len(refused):  # what the guard would not run, at its predicted size (its note said in the learner's language)
        refused = refused.assign(note=[note_text(n, tr) for n in refused["note"]])
        chart = chart + Chart(refused).mark_point(shape="triangle-up", filled=False, size=90).encode(
            x="seq_len:Q",
            y="mib:Q",
            color=impl_color(pd.concat([d, refused]), tr("attention_cost.axis.impl")),
            tooltip=[
                alt.Tooltip("label:N", title=tr("attention_cost.axis.impl")),
                alt.Tooltip("seq_len:Q", title=tr("attention_cost.axis.seq_len")),
                alt.Tooltip("mib:Q", title=tr(f"attention_cost.axis.{metric}"), format=",.1f"),
                alt.Tooltip("note:N", title=tr("tip.note")),
            ],
        )
        subtitle += " " + tr("attention_cost.chart.refused_sub")
    rows = len(set(d["label"] if len(d) else ()) | set(refused["label"] if len(refused) else ()))
    return _titled(chart, tr(f"attention_cost.chart.{metric}"), subtitle + " " + device_subtitle(d, tr), rows)


def _refused(df: pd.DataFrame, tr) -> pd.DataFrame:
    if not len(df) or "status" not in df:
        return df.iloc[0:0]
    df = status.normalize(df)
    r = df[df["status"] == status.SKIPPED_MEMORY]
    r = r[r["predicted_bytes"].notna()]
    return with_labels(r, tr).assign(mib=r["predicted_bytes"] / 2**20) if len(r) else r


def time_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = with_covered(with_labels(_ok(df), tr), "time_ms")
    main = _impl_lines(d, tr, "time_ms", "time_ms", ["label:N", "seq_len:Q", "time_ms:Q", "time_iqr_ms:Q"])
    att = d[[attention.IMPLS[i].mode == "train" if i in attention.IMPLS else True for i in d["impl"]]] if len(d) else d
    layers = alt.layer(main, *_guides(att, "time_ms", tr))
    subtitle = _covered_note(d, tr) + device_subtitle(d, tr)
    return _titled(layers, tr("attention_cost.chart.time"), subtitle, d["label"].nunique() if len(d) else 0)


def wall_chart(extrap: pd.DataFrame, tr, budget_bytes: float) -> alt.Chart:
    """Formula bytes of a whole model at 8K … 1M tokens, with this device's memory budget as a rule."""
    d = extrap.assign(
        gib=extrap["bytes"] / 2**30, what_label=[tr(f"attention_cost.wall.what.{w}") for w in extrap["what"]]
    )
    whats = {"naive": "#d62728", "sdpa": "#1f77b4", "kv_cache": "#ff7f0e"}
    scale = alt.Scale(domain=[tr(f"attention_cost.wall.what.{w}") for w in whats], range=list(whats.values()))
    color = alt.Color(
        "what_label:N", title=None, scale=scale, legend=alt.Legend(orient="bottom", columns=1, labelLimit=500)
    )
    tooltip = ["what_label", "seq_len", "gib", "fits_budget", "time_s", "memory_kind", "time_kind"]
    limit = budget_bytes if budget_bytes and math.isfinite(budget_bytes) else None
    model = str(extrap["model"].iloc[0]) if len(extrap) else ""
    chart = _gib_lines(d, tr, color, tooltip, limit, tr("attention_cost.budget_rule"))
    return _titled(chart, tr("attention_cost.chart.wall", model=model), tr("attention_cost.chart.wall_sub"))


def _gib_lines(d: pd.DataFrame, tr, color: alt.Color, tooltip, limit: float | None, label: str) -> alt.LayerChart:
    """GiB against the length (log-log), one line per `color`; with a labelled crimson rule at `limit` bytes."""
    x, y = log_x("seq_len", tr("attention_cost.axis.seq_len")), log_y("gib", tr("attention_cost.axis.gib"))
    layers = [Chart(d).mark_line(point=True).encode(x=x, y=y, color=color, tooltip=tooltip)]
    if limit:
        rule = pd.DataFrame({"gib": [limit / 2**30], "label": [label]})
        layers.append(Chart(rule).mark_rule(color="crimson").encode(y="gib:Q", tooltip=["label", "gib"]))
        layers.append(
            Chart(rule).mark_text(color="crimson", align="left", dy=-6, x=5).encode(y="gib:Q", text="label:N")
        )
    return alt.layer(*layers)


def kv_measured_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Measured cache bytes of the tiny decoder per scheme (points) on the formula (lines); the RNN's flat state."""
    d = df[df["kind"] == "measured"] if len(df) else df
    d = d.assign(
        kib=d["measured_bytes"] / 1024,
        formula_kib=d["cache_bytes"] / 1024,
        scheme_label=[tr(f"attention_cost.kv.scheme.{s.replace(' ', '_')}") for s in d["scheme"]],
    )
    schemes = [tr(f"attention_cost.kv.scheme.{k}") for k in SCHEME_COLORS]
    scale = alt.Scale(domain=schemes, range=list(SCHEME_COLORS.values()))
    color = alt.Color("scheme_label:N", title=None, scale=scale, legend=alt.Legend(orient="bottom", labelLimit=400))
    x = alt.X("seq_len:Q", title=tr("attention_cost.axis.tokens"))
    formula = Chart(d).mark_line(opacity=0.6)
    formula = formula.encode(x=x, y=alt.Y("formula_kib:Q", title=tr("attention_cost.axis.cache_kib")), color=color)
    tooltip = ["scheme_label", "seq_len", "measured_bytes", "cache_bytes"]
    measured = Chart(d).mark_point(filled=True, size=45)
    measured = measured.encode(x="seq_len:Q", y="kib:Q", color=color, tooltip=tooltip)
    subtitle = tr("attention_cost.chart.kv_measured_sub") + " " + device_subtitle(d, tr)
    return _titled(formula + measured, tr("attention_cost.chart.kv_measured"), subtitle)


def kv_models_chart(df: pd.DataFrame, tr, memory_bytes: float | None = None) -> alt.Chart:
    """Cache size by formula vs context for real model configs; a rule at the device's memory."""
    d = df[df["kind"] == "formula"] if len(df) else df
    d = d.assign(gib=d["cache_bytes"] / 2**30, who=d["model"] + " · " + d["scheme"].str.upper())
    who = list(dict.fromkeys(d["who"]))
    colors = [SCHEME_COLORS.get(s.split(" ")[0], "#8c564b") for s in dict.fromkeys(d["scheme"])]
    legend = alt.Legend(orient="bottom", columns=3, labelLimit=400)
    color = alt.Color("who:N", title=None, scale=alt.Scale(domain=who, range=colors), legend=legend)
    tooltip = ["model", "scheme", "n_layers", "n_heads", "n_kv_heads", "head_dim", "seq_len", "gib"]
    chart = _gib_lines(d, tr, color, tooltip, memory_bytes, tr("attention_cost.kv.memory_rule"))
    return _titled(chart, tr("attention_cost.chart.kv_models"), tr("attention_cost.chart.kv_models_sub"))
