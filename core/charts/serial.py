"""Charts of the serial-computation page: time, throughput, dependent steps, utilisation, BPTT memory, roofline."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.charts.common import Chart, dash_legend, dash_scale, device_subtitle, lines, log_x, log_y, ok_rows, titled
from core.findings import model_name
from core.models import registry
from core.models.registry import ATTENTION, RECURRENT, family_of


def _ok(df: pd.DataFrame, tr=None) -> pd.DataFrame:
    """The measured rows, each model under the name the learner reads (`model.<id>`) when `tr` is given."""
    d = ok_rows(df)
    return _named(d, tr) if tr is not None else d


def _named(df: pd.DataFrame, tr) -> pd.DataFrame:
    if "model" not in df or not len(df):
        return df
    return df.assign(model=df["model"].map(lambda m: model_name(m, tr)))


def focus(df: pd.DataFrame, tr) -> dict:
    """The chapter's pair among the models drawn (the LSTM and the Transformer), name → its colour: the question's
    two in colour, the other models grey."""
    ids = list(dict.fromkeys(df["model"])) if "model" in df else []
    pair = [registry.representative(family, ids) for family in (RECURRENT, ATTENTION)]
    return {model_name(m, tr): registry.get(m).color for m in pair if m is not None and registry.get(m).color}


def _by_length(d, tr, y, chart: str, subtitle: str, tooltip, color: str = "model", dash="run", pair=None):
    """One line per model (and run) against the sequence length, log x, titled `serial.chart.<chart>`; the models
    of `pair` (name → colour) in colour, the others grey."""
    x = log_x("seq_len", tr("serial.axis.seq_len"))
    c = lines(d, x, y, color, tr("serial.axis.model"), dash, tooltip, focus=pair)
    return titled(c, tr(f"serial.chart.{chart}"), subtitle)


def time_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _ok(df, tr)
    y = log_y("train_ms", tr("serial.axis.train_ms"))
    tips = ["model", "seq_len", "train_ms", "train_iqr_ms", "run"]
    return _by_length(d, tr, y, "time", device_subtitle(d, tr), tips, pair=focus(df, tr))


def tokens_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _ok(df, tr)
    y = log_y("tokens_per_s", tr("serial.axis.tokens_per_s"))
    tips = ["model", "seq_len", "tokens_per_s", "run"]
    return _by_length(d, tr, y, "tokens", device_subtitle(d, tr), tips, pair=focus(df, tr))


def steps_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Recurrent models all share n·L steps, so they are drawn as one line."""
    d = _ok(df)  # the family from the model's id, then its name
    d = _named(d.assign(kind=[tr(f"serial.kind.{family_of(m)}") if family_of(m) else m for m in d["model"]]), tr)
    d = d.drop_duplicates(["kind", "seq_len", "n_layers"])
    y = log_y("seq_steps", tr("serial.axis.seq_steps"))
    tips = ["kind", "seq_len", "n_layers", "seq_steps"]
    return _by_length(d, tr, y, "steps", tr("serial.chart.steps_sub"), tips, color="kind", dash="")


def utilization_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _ok(df, tr).assign(percent=lambda x: 100 * x["utilization"])
    tips = ["model", "seq_len", "percent", "achieved_flops_per_s", "peak_flops_per_s", "run"]
    y = alt.Y("percent:Q", title=tr("serial.axis.utilization"))
    return _by_length(d, tr, y, "utilization", device_subtitle(d, tr), tips, pair=focus(df, tr))


def memory_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _ok(df, tr).assign(saved_mib=lambda x: x["saved_bytes"] / 2**20)
    y = log_y("saved_mib", tr("serial.axis.saved_mib"))
    tips = ["model", "seq_len", "saved_mib", "run"]
    return _by_length(d, tr, y, "memory", tr("serial.chart.memory_sub"), tips, pair=focus(df, tr))


# the roofline's labels carry their figures: below the chart, at its full width
WIDE_LEGEND = {"orient": "bottom", "direction": "vertical", "labelLimit": 600}


def roofline_chart(model_df: pd.DataFrame, measured: pd.DataFrame, tr) -> alt.Chart:
    """Model lines (dashed per hardware) with the measured points drawn over them."""
    model_df = _named(model_df, tr).assign(bound=lambda d: d["bound"].map(lambda b: tr(f"serial.bound.{b}")))
    x, y = log_x("seq_len", tr("serial.axis.seq_len")), log_y("predicted_ms", tr("serial.axis.train_ms"))
    model = alt.Tooltip("model:N", title=tr("serial.axis.model"))
    n = alt.Tooltip("seq_len:Q", title=tr("serial.axis.seq_len"), format=",")
    hardware = alt.Tooltip("hardware:N", title=tr("serial.axis.hardware"))
    predicted = alt.Tooltip("predicted_ms:Q", title=tr("tip.predicted_ms"), format=",.3g")
    scale = dash_scale(model_df["hardware"])
    dash = alt.StrokeDash(
        "hardware:N", title=tr("serial.axis.hardware"), legend=dash_legend(**WIDE_LEGEND), scale=scale
    )
    tooltip = [hardware, model, n, predicted, alt.Tooltip("bound:N", title=tr("tip.bound"))]
    color = alt.Color("model:N", title=tr("serial.axis.model"))
    base = Chart(model_df).mark_line().encode(x=x, y=y, color=color, strokeDash=dash, tooltip=tooltip)
    shape = alt.Shape("run:N", title=tr("serial.axis.measured"), legend=alt.Legend(**WIDE_LEGEND))
    measured_ms = alt.Tooltip("predicted_ms:Q", title=tr("tip.measured_ms"), format=",.3g")
    run = alt.Tooltip("run:N", title=tr("tip.run"))
    pts = (
        Chart(_ok(measured, tr).rename(columns={"train_ms": "predicted_ms"}))
        .mark_point(filled=True, size=70)
        .encode(x=x, y=y, color="model:N", shape=shape, tooltip=[model, n, measured_ms, run])
    )
    # the height holds title, axes and both legends below, so the plot keeps its room
    return titled(base + pts, tr("serial.chart.roofline"), tr("serial.chart.roofline_sub"), height=420)
