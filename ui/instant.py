"""Each bottleneck page's instant view: a slider and what it moves at once (core.mechanism computes it,
core.charts.mechanism draws it). A page hands its view to its Section as `instant`; ui.section draws it in a
fragment once the page's question is answered. The views live here, not in the pages: a fragment keeps its function,
and a function defined in a page script would keep that script's every table alive in the session."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.charts import mechanism as mechanism_charts
from core.experiments import gradient_reach, long_range
from core.findings import long_range as findings
from core.harness.device import free_memory_bytes, resolve_device
from core.mechanism import answers as forms
from core.mechanism import attention_cost as price
from core.mechanism import depth as stack
from core.mechanism import long_range as far
from core.mechanism import serial as chain
from ui.data import chart_ui, reference_rows, reference_ui_data


def chain_view(tr, shipped):
    """The instant view: the dependent steps of one training step at the n picked, timed from the reference rows."""
    rows = reference_rows(shipped)
    lengths = chain.lengths(rows)
    if not lengths:
        return None
    n = st.select_slider(
        tr("serial.instant.n"),
        lengths,
        min(lengths, key=lambda v: abs(v - 1024)),
        format_func="{:,}".format,
        key="instant:serial:n",
    )
    frame = chain.chain(rows, n)
    chart_ui(mechanism_charts.spec(mechanism_charts.chain_chart(frame, n, tr)))
    return chain.lines(frame, chain.gpu_busy(rows, n), n, tr), "rows"


def layers_view(tr, shipped):
    """The instant view: each layer's gradient at initialisation in stacks of the depth picked (reference rows)."""
    rows = reference_rows(shipped)
    depths = stack.depths(rows)
    if not depths:
        return None
    n = st.select_slider(tr("depth.instant.n"), depths, min(depths, key=lambda v: abs(v - 8)), key="instant:depth:n")
    frame = stack.layers(rows, n)
    chart_ui(mechanism_charts.spec(mechanism_charts.layers_chart(frame, n, tr)))
    return stack.lines(frame, n, tr), "rows"


ATTENTION_LENGTHS = [2**k for k in range(7, 21)]  # 128 … 1,048,576 tokens


def bytes_view(tr, shipped):
    """The instant view: exact bytes at the n, heads and layers picked, against this device's free memory now."""
    c1, c2, c3 = st.columns([2, 1, 1])
    n = c1.select_slider(
        tr("attention_cost.instant.n"),
        ATTENTION_LENGTHS,
        4096,
        format_func="{:,}".format,
        key="instant:attention_cost:n",
    )
    heads = c2.slider(tr("attention_cost.instant.heads"), 1, 64, 12, key="instant:attention_cost:heads")
    layers = c3.slider(tr("attention_cost.instant.layers"), 1, 128, 12, key="instant:attention_cost:layers")
    memory = free_memory_bytes(resolve_device("auto"))
    frame = price.bars(n, heads, layers)
    chart_ui(mechanism_charts.spec(mechanism_charts.bytes_chart(frame, memory, tr)))
    return price.lines(frame, n, heads, layers, memory, tr), "formula"


@st.cache_data(show_spinner=False)
def reach_view_data() -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the instant view reads at every move, computed once: the reach lines and trained recall by distance."""
    reach_rows, _ = reference_ui_data(gradient_reach.EXPERIMENT.name)
    trained_rows, _ = reference_ui_data(long_range.EXPERIMENT.name)
    return far.reach(reference_rows(reach_rows)), findings.by_distance(trained_rows)


def reach_view(tr, shipped):
    """The instant view: the gradient from token d back to token 0 at initialisation (the gradient-reach reference)
    and trained recall at the farthest distance trained up to d (every run of the long_range reference)."""
    frame, stats = reach_view_data()
    if not len(frame):
        return None
    d = st.slider(
        tr("long_range.instant.d"), 1, int(frame["distance"].max()), long_range.FAR, key="instant:long_range:d"
    )
    chart_ui(mechanism_charts.spec(mechanism_charts.reach_chart(frame, d, tr)))
    return far.lines(frame, far.trained_from(stats, d), d, tr), "rows"  # every run: the farthest may be its own


def levels_view(tr, shipped):
    """The instant view: the levels a loop, a scan and a chunked form wait through at the n picked (formulas)."""
    lengths = [2**k for k in range(3, 17)]  # 8 … 65,536 tokens
    n = st.select_slider(tr("answers.instant.n"), lengths, 4096, format_func="{:,}".format, key="instant:long_range:n")
    frame = forms.levels(n)
    left, right = st.columns(2)
    with left:
        chart_ui(mechanism_charts.spec(mechanism_charts.levels_chart(frame, n, tr)))
    with right:
        chart_ui(mechanism_charts.spec(mechanism_charts.tree_chart(min(n, forms.TREE_MAX), tr)))
    return forms.lines(frame, n, tr), "formula"
