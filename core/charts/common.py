"""Pieces every chart shares: log axes, the colour of a model, the run (live or reference, and device) as dash."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.i18n import device_words


def log_x(field: str, title: str) -> alt.X:
    return alt.X(f"{field}:Q", scale=alt.Scale(type="log"), title=title)


def log_y(field: str, title: str) -> alt.Y:
    return alt.Y(f"{field}:Q", scale=alt.Scale(type="log"), title=title)


def lines(df: pd.DataFrame, x, y, color: str, color_title: str, dash: str = "run", tooltip=()) -> alt.Chart:
    """Lines with points, one per (colour, dash) pair; the dash legend tells live from reference and device."""
    enc = {
        "x": x,
        "y": y,
        "color": alt.Color(f"{color}:N", title=color_title),
        "tooltip": list(tooltip) or [color, dash],
    }
    if dash in df.columns and df[dash].nunique() > 1:
        enc["strokeDash"] = alt.StrokeDash(f"{dash}:N", title=None, legend=alt.Legend(orient="right", labelLimit=240))
        enc["shape"] = alt.Shape(f"{dash}:N", title=None, legend=None)
    return alt.Chart(df).mark_line(point=True).encode(**enc)


def titled(chart: alt.Chart, title: str, subtitle: str = "") -> alt.Chart:
    params = (
        alt.TitleParams(title, subtitle=subtitle, anchor="start")
        if subtitle
        else alt.TitleParams(title, anchor="start")
    )
    return chart.properties(title=params, height=300)


def device_subtitle(df: pd.DataFrame, tr=None) -> str:
    """The devices of a chart's rows, their thread counts in the page's language when `tr` is given (core writes
    'cpu · Intel Xeon · 2 threads' in English; the CSV keeps it so)."""
    if "device" not in df.columns or not len(df):
        return ""
    labels = dict.fromkeys(df["device"].astype(str))
    return " | ".join(labels if tr is None else dict.fromkeys(device_words(x, tr) for x in labels))
