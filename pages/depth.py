"""Bottleneck 3 — depth and stability: gradients fade through plain stacks; residuals and LayerNorm keep them alive."""

import streamlit as st

from core.charts import depth as charts
from core.experiments import depth
from ui import common as ui
from ui import instant as views  # the instant views: in ui, so their fragment keeps no page table

PAGE = "depth"
tr = ui.page_ui(PAGE)


def init_charts(both, primary, tr):
    """At initialisation: the gradient each layer gets, at a depth picked, and the first layer's against depth."""
    ui.heading_ui(tr, "depth.init")
    init = both[(both["phase"] == "init") & (both["status"] == "ok")]
    with st.columns([1, 2])[0]:  # the picker narrow; each chart below it the column's full width
        # 16 by default: deeper plain LSTM stacks underflow float32 at their first layers
        L = (
            ui.pick_ui(tr, tr("depth.pick.init_depth"), init["n_layers"], f"pick:{PAGE}:init", at_most=16)
            if len(init)
            else None
        )
    ui.chart_ui(charts.init_layers_chart(both, tr, L))
    ui.chart_ui(charts.first_layer_chart(both, tr))


def train_charts(both, primary, tr):
    """In training: outcomes, curves, and the per-layer gradients of a run picked by depth, warm-up and seed."""
    ui.heading_ui(tr, "depth.train")
    train = primary[(primary["phase"] == "train") & (primary["status"] == "ok")]
    if len(train):
        st.caption(tr("depth.summary_header"))
        ui.chart_ui(charts.outcomes_chart(primary, tr))
        ui.chart_ui(charts.loss_chart(primary, tr))
        ui.chart_ui(charts.grad_norm_chart(primary, tr))
        st.caption(tr("depth.heatmap_intro"))
        c1, c2, c3 = st.columns(3)
        with c1:
            n = ui.pick_ui(tr, tr("depth.pick.n_layers"), train["n_layers"], f"pick:{PAGE}:n_layers")
        with c2:
            warmup_label = ("depth.warmup_label", "w")
            w = ui.pick_ui(
                tr, tr("depth.pick.warmup"), train["warmup_steps"], f"pick:{PAGE}:warmup", value_label=warmup_label
            )
        with c3:  # per-layer rows exist for the first `layer_seeds` seeds only
            s = ui.pick_ui(tr, tr("depth.pick.seed"), train[train["layer"].notna()]["seed"], f"pick:{PAGE}:seed")
        chosen = primary[(primary["n_layers"] == n) & (primary["warmup_steps"] == w) & (primary["seed"] == s)]
        return charts.grad_heatmap_chart(chosen, tr)


def during(both, primary, tr):
    """While a run measures: the first layer's gradient against depth, then the loss of each run as it trains."""
    training = primary[primary["phase"] == "train"] if "phase" in primary else primary.iloc[:0]
    return charts.loss_chart(primary, tr) if len(training) else charts.first_layer_chart(both, tr)


ui.register(
    ui.Section(
        PAGE,
        depth.EXPERIMENT,
        ("models", "depths", "lr", "warmup_steps", "clip", "steps", "seeds", "d_model", "device", "seed"),
        question=PAGE,
        takeaways=depth.takeaways,
        charts=((init_charts,), (train_charts,)),
        during=during,
        instant=views.layers_view,
        method=PAGE,
        gate=False,  # the headings and pickers stay before an answer; the charts, as always, wait for it
    )
)
ui.sections_ui(tr, PAGE)
