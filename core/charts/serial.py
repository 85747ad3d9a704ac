"""Charts of the serial-computation page: time, throughput, dependent steps, utilisation, BPTT memory, roofline."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.charts.common import dash_legend, device_subtitle, lines, log_x, log_y, titled
from core.models.registry import family_of


def _ok(df: pd.DataFrame, tr=None) -> pd.DataFrame:
    """The measured rows, each model under the name the learner reads (`model.<id>`) when `tr` is given."""
    d = df[df["status"] == "ok"] if "status" in df else df
    return _named(d, tr) if tr is not None else d


def _named(df: pd.DataFrame, tr) -> pd.DataFrame:
    if "model" not in df or not len(df):
        return df

    def name(m):
        text = tr(f"model.{m}")
        return m if text.startswith("«") else text

    return df.assign(model=df["model"].map(name))


def time_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _ok(df, tr)
    c = lines(
        d,
        log_x("seq_len", tr("serial.axis.seq_len")),
        log_y("train_ms", tr("serial.axis.train_ms")),
        "model",
        tr("serial.axis.model"),
        tooltip=["model", "seq_len", "train_ms", "train_iqr_ms", "run"],
    )
    return titled(c, tr("serial.chart.time"), device_subtitle(d, tr))


def tokens_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _ok(df, tr)
    c = lines(
        d,
        log_x("seq_len", tr("serial.axis.seq_len")),
        log_y("tokens_per_s", tr("serial.axis.tokens_per_s")),
        "model",
        tr("serial.axis.model"),
        tooltip=["model", "seq_len", "tokens_per_s", "run"],
    )
    return titled(c, tr("serial.chart.tokens"), device_subtitle(d, tr))


def steps_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Recurrent models all share n·L steps, so they are drawn as one line."""
    d = _ok(df)  # the family from the model's id, then its name
    d = _named(d.assign(kind=[tr(f"serial.kind.{family_of(m)}") if family_of(m) else m for m in d["model"]]), tr)
    d = d.drop_duplicates(["kind", "seq_len", "n_layers"])
    c = lines(
        d,
        log_x("seq_len", tr("serial.axis.seq_len")),
        log_y("seq_steps", tr("serial.axis.seq_steps")),
        "kind",
        tr("serial.axis.model"),
        dash="",
        tooltip=["kind", "seq_len", "n_layers", "seq_steps"],
    )
    return titled(c, tr("serial.chart.steps"), tr("serial.chart.steps_sub"))


def utilization_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _ok(df, tr).assign(percent=lambda x: 100 * x["utilization"])
    c = lines(
        d,
        log_x("seq_len", tr("serial.axis.seq_len")),
        alt.Y("percent:Q", title=tr("serial.axis.utilization")),
        "model",
        tr("serial.axis.model"),
        tooltip=["model", "seq_len", "percent", "achieved_flops_per_s", "peak_flops_per_s", "run"],
    )
    return titled(c, tr("serial.chart.utilization"), device_subtitle(d, tr))


def memory_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _ok(df, tr).assign(saved_mib=lambda x: x["saved_bytes"] / 2**20)
    c = lines(
        d,
        log_x("seq_len", tr("serial.axis.seq_len")),
        log_y("saved_mib", tr("serial.axis.saved_mib")),
        "model",
        tr("serial.axis.model"),
        tooltip=["model", "seq_len", "saved_mib", "run"],
    )
    return titled(c, tr("serial.chart.memory"), tr("serial.chart.memory_sub"))


# the roofline's hardware and run labels carry their figures ("数据中心 GPU：50 TFLOP/s，每步 10 µs（假设）"): below the
# chart, where they have the chart's width, not cut at a side legend's 240 px
WIDE_LEGEND = {"orient": "bottom", "direction": "vertical", "labelLimit": 600}


def roofline_chart(model_df: pd.DataFrame, measured: pd.DataFrame, tr) -> alt.Chart:
    """Model lines (dashed per hardware) with the measured points drawn over them."""
    model_df = _named(model_df, tr).assign(bound=lambda d: d["bound"].map(lambda b: tr(f"serial.bound.{b}")))
    base = (
        alt.Chart(model_df)
        .mark_line()
        .encode(
            x=log_x("seq_len", tr("serial.axis.seq_len")),
            y=log_y("predicted_ms", tr("serial.axis.train_ms")),
            color=alt.Color("model:N", title=tr("serial.axis.model")),
            strokeDash=alt.StrokeDash(
                "hardware:N", title=tr("serial.axis.hardware"), legend=dash_legend(**WIDE_LEGEND)
            ),
            tooltip=[
                alt.Tooltip("hardware:N", title=tr("serial.axis.hardware")),
                alt.Tooltip("model:N", title=tr("serial.axis.model")),
                alt.Tooltip("seq_len:Q", title=tr("serial.axis.seq_len"), format=","),
                alt.Tooltip("predicted_ms:Q", title=tr("tip.predicted_ms"), format=",.3g"),
                alt.Tooltip("bound:N", title=tr("tip.bound")),
            ],
        )
    )
    pts = (
        alt.Chart(_ok(measured, tr).rename(columns={"train_ms": "predicted_ms"}))
        .mark_point(filled=True, size=70)
        .encode(
            x=log_x("seq_len", tr("serial.axis.seq_len")),
            y=log_y("predicted_ms", tr("serial.axis.train_ms")),
            color="model:N",
            shape=alt.Shape("run:N", title=tr("serial.axis.measured"), legend=alt.Legend(**WIDE_LEGEND)),
            tooltip=[
                alt.Tooltip("model:N", title=tr("serial.axis.model")),
                alt.Tooltip("seq_len:Q", title=tr("serial.axis.seq_len"), format=","),
                alt.Tooltip("predicted_ms:Q", title=tr("tip.measured_ms"), format=",.3g"),
                alt.Tooltip("run:N", title=tr("tip.run")),
            ],
        )
    )
    # Streamlit fits the whole chart (title, axes, legends) into its height: 300 left the plot ~40 px under two
    # legends below it, and pushed the title up out of the chart's box
    return titled(base + pts, tr("serial.chart.roofline"), tr("serial.chart.roofline_sub")).properties(height=420)
