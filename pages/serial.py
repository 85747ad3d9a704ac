"""Bottleneck 1 — serial computation: h_t = f(h_{t-1}, x_t) forces n dependent steps; attention takes one."""

import pandas as pd
import streamlit as st

from core.charts import checkpoint as checkpoint_charts
from core.charts import scaling as scaling_charts
from core.charts import serial as charts
from core.experiments import checkpoint, scaling, serial
from core.findings import checkpoint as checkpoint_findings
from core.findings import scaling as scaling_findings
from core.findings import serial as findings
from core.findings import verdicts
from core.fit import exponent_text
from ui import common as ui

PAGE = "serial"
tr = ui.page_ui(PAGE)
prediction = ui.predict_ui(tr, PAGE, 3)
reveal = st.container()  # filled below, once the live run (if any) has added its rows

live = ui.live_run_ui(
    tr, serial.EXPERIMENT, PAGE, ["models", "seq_lens", "d_model", "n_layers", "batch_size", "device", "seed"]
)

with reveal:
    both, primary = ui.shown_data(tr, PAGE, live)
    lines = findings.takeaways(primary, tr) if len(primary) else []
    pair = findings.comparison(primary) if len(primary) else None
    why = findings.explanation(pair, tr) if pair is not None else []  # the roofline's reason, from the takeaways
    gpu = ui.gpu_reference(both, primary)
    gpu_verdict = verdicts.serial(gpu) if len(gpu) else None
    ui.verdict_ui(tr, prediction, verdicts.serial(primary) if len(primary) else None, why or lines, gpu_verdict)
    # GPU rows shipped or uploaded, of one run (reference first): a story told from two files at once is no one's
    gpu_runs = both.loc[both["device_type"] == "cuda", "run"] if len(both) else []
    gpu_rows = both[both["run"] == gpu_runs.iloc[0]] if len(gpu_runs) else both.iloc[:0]
    if not len(both):
        st.info(tr("ui.no_data"))
    elif prediction.revealed:  # the slopes table and the model's section, like the charts, wait for an answer
        ui.status_ui(tr, both)
        left, right = st.columns(2)
        with left:
            ui.chart_ui(charts.time_chart(both, tr))
            ui.chart_ui(charts.steps_chart(both, tr))
            ui.chart_ui(charts.memory_chart(both, tr))
        with right:
            ui.chart_ui(charts.tokens_chart(both, tr))
            ui.chart_ui(charts.utilization_chart(both, tr))
            st.caption(tr("serial.slopes_header"))
            slopes = findings.scaling_exponents(both)
            slopes["time_slope"] = [
                exponent_text(b, se) for b, se in zip(slopes["time_slope"], slopes["time_slope_se"])
            ]
            slopes["memory_slope"] = slopes["memory_slope"].map(exponent_text)
            slopes = slopes.drop(columns=["points", "time_slope_se"])
            slopes["model"] = [tr(f"model.{m}") for m in slopes["model"]]
            st.dataframe(
                slopes.rename(
                    columns={
                        c: tr(f"serial.slopes.{c}") for c in ("model", "run", "device", "time_slope", "memory_slope")
                    }
                ),
                hide_index=True,
            )

        st.subheader(tr("serial.model_header"))
        st.markdown(tr("serial.model_intro"))
        measured = pd.concat([primary, gpu_rows]).drop_duplicates() if len(gpu_rows) else primary
        measured = measured[measured["model"].isin(findings.chapter_models(measured["model"]))]
        ui.chart_ui(charts.roofline_chart(findings.roofline_frame(primary, tr), measured, tr))

        ui.caption_source_ui(tr, primary)
        ui.takeaways_ui(tr, lines)
        ui.table_ui(tr, both, PAGE)
    ui.method_ui(tr, PAGE)

# ---- more cores: who gets faster? The same step at 1, 2, 4, … threads ------------------------------------------
SCALING = f"{PAGE}:scaling"  # the section's second form and live run: a 'page:name' key (see ui/form.py)
st.subheader(tr("serial.scaling.header"))
st.markdown(tr("serial.scaling.intro"))
scaling_prediction = ui.predict_ui(tr, "serial.scaling", 3)
shown = st.container()  # filled below, once the section's live run (if any) has added its rows
st.markdown("**" + tr("serial.scaling.live_header") + "**")
scaling_cfg = ui.config_form_ui(
    tr, scaling.EXPERIMENT, SCALING, ["models", "seq_lens", "max_threads", "repeats", "d_model", "device"]
)
scaling_live = ui.run_ui(tr, scaling.EXPERIMENT, scaling_cfg, SCALING)

with shown:
    s_both, s_primary = ui.shown_data(tr, "scaling", scaling_live)
    s_lines = scaling_findings.takeaways(s_primary, tr) if len(s_primary) else []
    s_why = scaling_findings.why(s_primary, tr) if len(s_primary) else []  # the reason, not the list again
    ui.verdict_ui(tr, scaling_prediction, verdicts.scaling(s_primary), s_why)
    ok = scaling_findings.measured(s_both)
    if not len(ok):
        st.info(tr("ui.no_data"))
    elif scaling_prediction.revealed:
        ui.status_ui(tr, s_both)
        lengths = sorted(int(n) for n in set(ok["seq_len"]))
        own = scaling_findings.measured(s_primary)["seq_len"]  # open on the longest length the takeaways speak of
        start = lengths.index(int(own.max())) if len(own) else len(lengths) - 1
        T = st.selectbox(tr("serial.scaling.length"), lengths, index=start, key=f"{SCALING}:length")
        ui.chart_ui(scaling_charts.speedup_chart(s_both, tr, T))
        st.caption(tr("serial.scaling.chart.legend"))
        ui.caption_source_ui(tr, s_primary)
        ui.takeaways_ui(tr, s_lines)
        story = findings.comparison(gpu_rows) if len(gpu_rows) else None
        if story is None:
            st.caption(tr("serial.scaling.no_gpu"))
        else:
            ratio, lo, hi = findings.spread_text(story)
            key = f"serial.scaling.gpu_story_{story['verdict']}"
            st.caption(tr(key, device=ui.literal(story["att_row"]["run"]), T=story["T"], ratio=ratio, lo=lo, hi=hi))
        st.caption(tr("serial.scaling.fit_header", T=T))
        st.dataframe(scaling_charts.fits_table(s_both[s_both["seq_len"] == T], tr), hide_index=True)
    ui.method_ui(tr, "serial.scaling")
    ui.table_ui(tr, s_both, "scaling")

# ---- checkpointed BPTT: memory bought back with a second forward pass -------------------------------------------
CKPT = f"{PAGE}:ckpt"
st.subheader(tr("serial.ckpt.header"))
st.markdown(tr("serial.ckpt.intro"))
ckpt_prediction = ui.predict_ui(tr, "serial.ckpt", 3)
ckpt_shown = st.container()
st.markdown("**" + tr("serial.ckpt.live_header") + "**")
ckpt_cfg = ui.config_form_ui(tr, checkpoint.EXPERIMENT, CKPT, ["models", "seq_lens", "segment", "repeats", "device"])
ckpt_live = ui.run_ui(tr, checkpoint.EXPERIMENT, ckpt_cfg, CKPT)

with ckpt_shown:
    c_both, c_primary = ui.shown_data(tr, "checkpoint", ckpt_live)
    c_lines = checkpoint_findings.takeaways(c_primary, tr) if len(c_primary) else []
    ui.verdict_ui(tr, ckpt_prediction, verdicts.checkpoint(c_primary) if len(c_primary) else None, c_lines)
    if not len(checkpoint_findings.measured(c_both)):
        st.info(tr("ui.no_data"))
    elif ckpt_prediction.revealed:
        ui.status_ui(tr, c_both)
        left, right = st.columns(2)
        with left:
            ui.chart_ui(checkpoint_charts.memory_chart(c_both, tr))
        with right:
            ui.chart_ui(checkpoint_charts.time_chart(c_both, tr))
        st.caption(tr("serial.ckpt.chart.legend"))
        ui.caption_source_ui(tr, c_primary)
        ui.takeaways_ui(tr, c_lines)
    ui.method_ui(tr, "serial.ckpt")
    ui.table_ui(tr, c_both, "checkpoint")
