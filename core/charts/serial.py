"""Charts of the serial-computation page: time, throughput, dependent steps, utilisation, BPTT memory, roofline."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.charts.common import device_subtitle, lines, log_x, log_y, titled
from core.models.registry import family_of


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"] if "status" in df else df


def time_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _ok(df)
    c = lines(
        d,
        log_x("seq_len", tr("serial.axis.seq_len")),
        log_y("train_ms", tr("serial.axis.train_ms")),
        "model",
        tr("serial.axis.model"),
        tooltip=["model", "seq_len", "train_ms", "train_iqr_ms", "run"],
    )
    return titled(c, tr("serial.chart.time"), device_subtitle(d))


def tokens_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _ok(df)
    c = lines(
        d,
        log_x("seq_len", tr("serial.axis.seq_len")),
        log_y("tokens_per_s", tr("serial.axis.tokens_per_s")),
        "model",
        tr("serial.axis.model"),
        tooltip=["model", "seq_len", "tokens_per_s", "run"],
    )
    return titled(c, tr("serial.chart.tokens"), device_subtitle(d))


def steps_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Recurrent models all share n·L steps, so they are drawn as one line."""
    d = _ok(df)
    d = d.assign(kind=[tr(f"serial.kind.{family_of(m)}") if family_of(m) else m for m in d["model"]])
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
    d = _ok(df).assign(percent=lambda x: 100 * x["utilization"])
    c = lines(
        d,
        log_x("seq_len", tr("serial.axis.seq_len")),
        alt.Y("percent:Q", title=tr("serial.axis.utilization")),
        "model",
        tr("serial.axis.model"),
        tooltip=["model", "seq_len", "percent", "achieved_flops_per_s", "peak_flops_per_s", "run"],
    )
    return titled(c, tr("serial.chart.utilization"), device_subtitle(d))


def memory_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _ok(df).assign(saved_mib=lambda x: x["saved_bytes"] / 2**20)
    c = lines(
        d,
        log_x("seq_len", tr("serial.axis.seq_len")),
        log_y("saved_mib", tr("serial.axis.saved_mib")),
        "model",
        tr("serial.axis.model"),
        tooltip=["model", "seq_len", "saved_mib", "run"],
    )
    return titled(c, tr("serial.chart.memory"), tr("serial.chart.memory_sub"))


def roofline_chart(model_df: pd.DataFrame, measured: pd.DataFrame, tr) -> alt.Chart:
    """Model lines (dashed per hardware) with the measured points drawn over them."""
    base = (
        alt.Chart(model_df)
        .mark_line()
        .encode(
            x=log_x("seq_len", tr("serial.axis.seq_len")),
            y=log_y("predicted_ms", tr("serial.axis.train_ms")),
            color=alt.Color("model:N", title=tr("serial.axis.model")),
            strokeDash=alt.StrokeDash(
                "hardware:N", title=tr("serial.axis.hardware"), legend=alt.Legend(orient="right", labelLimit=240)
            ),
            tooltip=["hardware", "model", "seq_len", "predicted_ms", "bound"],
        )
    )
    pts = (
        alt.Chart(_ok(measured).rename(columns={"train_ms": "predicted_ms"}))
        .mark_point(filled=True, size=70)
        .encode(
            x=log_x("seq_len", tr("serial.axis.seq_len")),
            y=log_y("predicted_ms", tr("serial.axis.train_ms")),
            color="model:N",
            shape=alt.Shape(
                "run:N", title=tr("serial.axis.measured"), legend=alt.Legend(orient="right", labelLimit=240)
            ),
            tooltip=["model", "seq_len", alt.Tooltip("predicted_ms", title="measured ms"), "run"],
        )
    )
    return titled(base + pts, tr("serial.chart.roofline"), tr("serial.chart.roofline_sub"))
