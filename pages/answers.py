"""Page 5 — the answers: recurrences whose gates read only the input train as scans, and decode with a fixed state;
Table 1's rows measured side by side (training time, the memory kept while generating, gradient reach)."""

import streamlit as st

from core.charts import answers as charts
from core.experiments import answers_decode, answers_reach, answers_speed
from core.findings import answers as findings
from core.findings import verdicts
from ui import common as ui

PAGE = "answers"
DECODE, REACH = f"{PAGE}:decode", f"{PAGE}:reach"  # the page's second and third forms (see ui/form.py)
tr = ui.page_ui(PAGE)
prediction = ui.predict_ui(tr, PAGE, 3)
reveal = st.container()  # filled below, once the live run (if any) has added its rows

live = ui.live_run_ui(
    tr,
    answers_speed.EXPERIMENT,
    PAGE,
    ["mixers", "forms", "seq_lens", "d_model", "batch_size", "window", "chunk", "device", "seed"],
)

with reveal:
    both, primary = ui.shown_data(tr, "answers_speed", live)
    lines = findings.speed_takeaways(primary, tr) if len(primary) else []
    ui.verdict_ui(tr, prediction, verdicts.answers(primary), lines[1:2])  # why: the explanation after the headline
    st.subheader(tr("answers.speed_header"))
    st.markdown(tr("answers.speed_intro"))
    if not len(both):
        st.info(tr("ui.no_data"))
    else:
        ui.status_ui(tr, both)
        left, right = st.columns(2)
        with left:
            ui.chart_ui(charts.time_chart(both, tr))
            ui.chart_ui(charts.steps_chart(both, tr))
        with right:
            ui.chart_ui(charts.speedup_chart(both, tr))
            ui.chart_ui(charts.memory_chart(both, tr))
        ui.caption_source_ui(tr, primary)
        ui.takeaways_ui(tr, lines)
    ui.table_ui(tr, both, "answers_speed")

# ---- generating: a fixed state against a growing cache ---------------------------------------------------------
st.subheader(tr("answers.decode_header"))
st.markdown(tr("answers.decode_intro"))
decode_shown = st.container()
st.markdown("**" + tr("answers.live_decode") + "**")
decode_cfg = ui.config_form_ui(
    tr, answers_decode.EXPERIMENT, DECODE, ["mixers", "context_lens", "d_model", "gen_tokens", "window", "device"]
)
decode_live = ui.run_ui(tr, answers_decode.EXPERIMENT, decode_cfg, DECODE)
with decode_shown:
    d_both, d_primary = ui.shown_data(tr, "answers_decode", decode_live)
    if not len(d_both):
        st.info(tr("ui.no_data"))
    else:
        ui.status_ui(tr, d_both)
        left, right = st.columns(2)
        with left:
            ui.chart_ui(charts.decode_memory_chart(d_both, tr))
        with right:
            ui.chart_ui(charts.decode_time_chart(d_both, tr))
        ui.caption_source_ui(tr, d_primary)
        ui.takeaways_ui(tr, findings.decode_takeaways(d_primary, tr))
    ui.table_ui(tr, d_both, "answers_decode")

# ---- gradient reach: Table 1's maximum path length for every row -----------------------------------------------
st.subheader(tr("answers.reach_header"))
st.markdown(tr("answers.reach_intro"))
reach_shown = st.container()
st.markdown("**" + tr("answers.live_reach") + "**")
reach_cfg = ui.config_form_ui(tr, answers_reach.EXPERIMENT, REACH, ["models", "seq_len", "d_model", "seed"])
reach_live = ui.run_ui(tr, answers_reach.EXPERIMENT, reach_cfg, REACH)
with reach_shown:
    r_both, r_primary = ui.shown_data(tr, "answers_reach", reach_live)
    if not len(r_both):
        st.info(tr("ui.no_data"))
    else:
        ui.status_ui(tr, r_both)
        ui.chart_ui(charts.reach_chart(r_primary, tr))
        ui.caption_source_ui(tr, r_primary)
        ui.takeaways_ui(tr, findings.reach_takeaways(r_primary, tr))
    ui.table_ui(tr, r_both, "answers_reach")

ui.method_ui(tr, PAGE)
