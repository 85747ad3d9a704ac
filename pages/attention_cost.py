"""Bottleneck 4 — attention's own cost: the n × n score matrix in training, the KV cache at inference."""

import math

import streamlit as st

from core.charts import attention_cost as charts
from core.experiments import attention_cost as ac
from core.experiments import kv_cache as kv
from core.findings import attention_cost as findings
from core.harness.device import resolve_device, total_memory_bytes
from core.harness.fit import exponent_text, tail_fit
from core.harness.guard import format_bytes
from core.harness.memory_formulas import DTYPE_BYTES, MODEL_PRESETS, ModelShape, kv_cache_bytes
from ui import common as ui
from ui import instant as views  # the instant views: in ui, so their fragment keeps no page table

PAGE = "attention_cost"
tr = ui.page_ui(PAGE)
FIELDS = ("impls", "backends", "seq_lens", "dtype", "n_heads", "head_dim", "batch_size", "causal", "budget_mib", "verify_wall",
          "device")  # fmt: skip


def slopes_table(df):
    """Fitted exponents (± their fit's standard error) per implementation, over the three longest lengths shown."""
    ok = charts.with_labels(df[(df["status"] == "ok") & (df["point"] == "sweep")], tr)
    fitted = {"saved": "saved_bytes", "peak": "peak_bytes", "time": "time_ms"}
    rows = [
        {"label": label, **{k: exponent_text(*tail_fit(g["seq_len"], g[c])) for k, c in fitted.items()}}
        for label, g in ok.groupby("label", sort=False)
    ]
    return ui.pd.DataFrame(rows).rename(columns=lambda c: tr(f"attention_cost.slopes.{c}"))


def slopes(both, primary, tr):
    st.caption(tr("attention_cost.slopes_header"))
    st.dataframe(slopes_table(primary), hide_index=True)
    st.caption(tr("attention_cost.peak_note"))


def wall_tables(both, primary, tr):
    """Where each implementation's fit meets the memory budget, then a real model's wall, extrapolated."""
    st.info(tr("attention_cost.linear_note"))

    ui.heading_ui(tr, "attention_cost.wall")
    budget = float(primary["budget_bytes"].dropna().iloc[0]) if primary["budget_bytes"].notna().any() else math.nan
    walls = charts.with_labels(findings.wall(primary, budget), tr)
    cells = {
        "impl": walls["label"],
        "slope": walls["slope_text"],
        "n_max": walls["n_max"].map(lambda n: f"{n:,.0f}" if math.isfinite(n) else "–"),
        "fitted_on": walls["fitted_on"],
        "budget": walls["budget_bytes"].map(format_bytes),
    }
    st.dataframe(ui.labelled(tr, "attention_cost.wall_table", cells), hide_index=True)

    st.markdown("#### " + tr("attention_cost.extrap_header"))
    st.markdown(tr("attention_cost.extrap_intro"))
    c1, c2 = st.columns(2)
    shape = MODEL_PRESETS[
        c1.selectbox(tr("attention_cost.extrap_model"), list(MODEL_PRESETS), index=1, key="extrap_model")
    ]
    dtype = c2.selectbox(tr("attention_cost.extrap_dtype"), ["bfloat16", "float32"], key="extrap_dtype")
    ext = findings.extrapolate(primary, shape, dtype, budget_bytes=budget)
    ui.chart_ui(charts.wall_chart(ext, tr, budget))
    cells = {
        "what": [tr(f"attention_cost.wall.what.{w}") for w in ext["what"]],
        "seq_len": ext["seq_len"].map("{:,}".format),
        "size": ext["bytes"].map(format_bytes),
        "fits": ext["fits_budget"].map(lambda b: ui.yes_no(tr, b)),
        "time": ext["time_s"].map(lambda t: findings.format_seconds(t, tr)),
    }
    st.dataframe(ui.labelled(tr, "attention_cost.extrap", cells), hide_index=True)


MAIN = ui.Section(
    PAGE,
    ac.EXPERIMENT,
    FIELDS,
    question=PAGE,
    takeaways=findings.takeaways,
    charts=(
        (lambda b, p, tr: charts.memory_chart(b, tr, "peak_bytes"),),
        (lambda b, p, tr: charts.memory_chart(b, tr, "saved_bytes"), ui.both(charts.time_chart)),
        (slopes,),
        (wall_tables,),
    ),
    method=PAGE,
    no_data="attention_cost.no_sweep",
    instant=views.bytes_view,
)
train_tab, kv_tab, remedies_tab = st.tabs([tr(f"attention_cost.tab.{t}") for t in ("train", "kv", "remedies")])
with train_tab:
    ui.section_ui(tr, MAIN)

# ---- inference: the KV cache ---------------------------------------------------------------------------------
with kv_tab:
    ui.heading_ui(tr, "attention_cost.kv")
    st.markdown("#### " + tr("attention_cost.kv.calc_header"))
    custom = tr("attention_cost.kv.custom")
    c1, c2, c3 = st.columns(3)
    name = c1.selectbox(tr("attention_cost.kv.model"), [*MODEL_PRESETS, custom], index=2, key="kv_model")
    kv_dtype = c2.selectbox(tr("attention_cost.kv.dtype"), list(DTYPE_BYTES), index=1, key="kv_dtype")
    batch = int(c3.number_input(tr("attention_cost.kv.batch"), min_value=1, max_value=4096, value=1, key="kv_batch"))
    if name == custom:
        c = st.columns(4)
        layers = int(c[0].number_input(tr("attention_cost.kv.layers"), 1, 1000, 32, key="kv_layers"))
        heads = int(c[1].number_input(tr("attention_cost.kv.heads"), 1, 1024, 32, key="kv_heads"))
        n_kv = int(c[2].number_input(tr("attention_cost.kv.kv_heads"), 1, 1024, 8, key="kv_kv_heads"))
        head_dim = int(c[3].number_input(tr("attention_cost.kv.head_dim"), 1, 1024, 128, key="kv_head_dim"))
        if n_kv > heads or heads % n_kv:
            st.error(tr("attention_cost.kv.bad_custom", kv=n_kv, heads=heads))
            n_kv = heads
        shape = ModelShape(custom, layers, heads, n_kv, head_dim, 131072, "")
    else:
        shape = MODEL_PRESETS[name]
        st.caption(tr("attention_cost.kv.source", source=shape.source))
    e = DTYPE_BYTES[kv_dtype]
    memory = total_memory_bytes(resolve_device("auto"))
    per_token = kv_cache_bytes(shape.n_layers, shape.n_kv_heads, shape.head_dim, 1, batch, e)
    st.markdown(
        tr(
            "attention_cost.kv.result",
            model=shape.name,
            per_token=format_bytes(per_token),
            scheme=shape.scheme.upper(),
            kv=shape.n_kv_heads,
            layers=shape.n_layers,
            head_dim=shape.head_dim,
            at_max=format_bytes(per_token * shape.max_context),
            max_context=f"{shape.max_context:,}",
            memory=format_bytes(memory),
            cross=f"{kv.crossing_tokens(shape, e, batch, memory):,.0f}",
        )
    )
    contexts = [2**k for k in range(10, 21)]
    ui.chart_ui(charts.kv_models_chart(kv.calculator_frame(shape, e, batch, contexts), tr, memory))

    st.markdown("#### " + tr("attention_cost.kv.demo_header"))
    st.markdown(tr("attention_cost.kv.demo_intro"))
    pressed = st.button(tr("attention_cost.kv.demo_run"), key="kv_run")
    kv_live = ui.run_ui(tr, kv.EXPERIMENT, kv.EXPERIMENT.config("quick") if pressed else None, "kv_cache")
    kv_both, kv_primary = ui.shown_data(tr, "kv_cache", kv_live)
    if len(kv_primary):
        ui.chart_ui(charts.kv_measured_chart(kv_primary, tr))
        ui.takeaways_ui(tr, kv.takeaways(kv_primary, tr))
        st.caption(tr("attention_cost.kv.table"))
        ui.table_ui(tr, kv_both, "kv_cache")


with remedies_tab:
    st.subheader(tr("attention_cost.remedies_header"))
    st.markdown(tr("attention_cost.remedies"))
