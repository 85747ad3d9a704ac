"""The serial page's checkpointed-BPTT charts: the recurrent layers' saved bytes against n (log-log), measured for
both forms with the kept-state formula dashed beside the checkpointed one; and the checkpointed step's time over the
plain one's, with the paired quartiles and the expectation of one more forward pass (4/3) as a rule."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.charts.common import Chart, device_subtitle, filled_points, log_x, titled
from core.findings import checkpoint as findings

MIB = 2**20


def _named(d: pd.DataFrame, tr) -> pd.DataFrame:
    d = d.copy()
    d["form"] = [tr(f"serial.ckpt.bptt.{b}") for b in d["bptt"]]
    d["model_name"] = [tr(f"model.{m}") for m in d["model"]]
    # bytes shown as MiB on the axis, not as raw counts
    d["layer_saved_mib"] = d["layer_saved_bytes"] / MIB
    d["predicted_layer_mib"] = (d["predicted_layer_bytes"] if "predicted_layer_bytes" in d else float("nan")) / MIB
    return d


def memory_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _named(findings.measured(df), tr)
    x = log_x("seq_len", tr("serial.axis.seq_len"))
    # a y title longer than the plot's 300 px pushes the chart's own title up, under the box drawn above it
    mib = tr("serial.ckpt.axis.layer_mib")
    y = alt.Y("layer_saved_mib:Q", scale=alt.Scale(type="log"), title=mib, axis=alt.Axis(titleLimit=280))
    forms = [tr(f"serial.ckpt.bptt.{b}") for b in (findings.PLAIN, findings.CHECKPOINTED)]  # colours alike in 中文
    legend = alt.Legend(orient="bottom", labelLimit=320)
    color = alt.Color("form:N", title=tr("serial.ckpt.axis.form"), scale=alt.Scale(domain=forms), legend=legend)
    tips = [
        alt.Tooltip("model_name:N", title=tr("serial.axis.model")),
        alt.Tooltip("form:N", title=tr("serial.ckpt.axis.form")),
        alt.Tooltip("seq_len:Q", title=tr("serial.axis.seq_len")),
        alt.Tooltip("layer_saved_mib:Q", title=mib, format=",.3~f"),
        alt.Tooltip("segment:Q", title=tr("field.segment")),
    ]
    measured = (
        Chart(d).mark_line(point=filled_points()).encode(x=x, y=y, color=color, detail="model_name:N", tooltip=tips)
    )
    formula = d[d["bptt"] == findings.CHECKPOINTED].dropna(subset=["predicted_layer_mib"]).copy()
    formula["form"] = tr("serial.ckpt.formula")
    tip = alt.Tooltip("predicted_layer_mib:Q", title=tr("serial.ckpt.formula_mib"), format=",.3~f")
    rule = (
        Chart(formula)
        .mark_line(strokeDash=[6, 4], color="gray")
        .encode(x=x, y=alt.Y("predicted_layer_mib:Q"), detail="model_name:N", tooltip=[tip])
    )
    # the height holds title, axes and legend below, or the title rises out of the box
    return titled(rule + measured, tr("serial.ckpt.chart.memory"), device_subtitle(d, tr), height=400)


def time_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _named(findings.measured(df), tr)
    d = d[(d["bptt"] == findings.CHECKPOINTED) & d["time_ratio"].notna()]
    x = log_x("seq_len", tr("serial.axis.seq_len"))
    y = alt.Y("time_ratio:Q", title=tr("serial.ckpt.axis.time_ratio"), scale=alt.Scale(zero=False))
    color = alt.Color("model_name:N", title=tr("serial.axis.model"))
    tips = [
        alt.Tooltip("model_name:N", title=tr("serial.axis.model")),
        alt.Tooltip("seq_len:Q", title=tr("serial.axis.seq_len")),
        alt.Tooltip("time_ratio:Q", title=tr("serial.ckpt.axis.time_ratio"), format=".2f"),
        alt.Tooltip("time_ratio_q25:Q", title="q25", format=".2f"),
        alt.Tooltip("time_ratio_q75:Q", title="q75", format=".2f"),
    ]
    points = Chart(d).mark_line(point=filled_points()).encode(x=x, y=y, color=color, tooltip=tips)
    bars = Chart(d).mark_rule().encode(x=x, y="time_ratio_q25:Q", y2="time_ratio_q75:Q", color=color)
    marks = pd.DataFrame(
        {"y": [1.0, 1 + findings.EXPECTED_EXTRA], "label": [tr("serial.ckpt.same"), tr("serial.ckpt.expected")]}
    )
    tip = alt.Tooltip("label:N", title=" ")
    rules = Chart(marks).mark_rule(strokeDash=[2, 2], color="gray").encode(y="y:Q", tooltip=[tip])
    return titled(rules + bars + points, tr("serial.ckpt.chart.time"), device_subtitle(d, tr))
