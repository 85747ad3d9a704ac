"""Page 5 — the answers: recurrences whose gates read only the input train as scans, and decode with a fixed state;
Table 1's rows measured side by side (training time, the memory kept while generating, gradient reach)."""

import streamlit as st

from core.charts import answers as charts
from core.charts import recall_frontier as recall_charts
from core.experiments import answers_decode, answers_reach, answers_speed, recall_frontier
from core.findings import answers as findings
from core.findings import recall_frontier as recall_findings
from core.findings import verdicts
from ui import common as ui

PAGE = "answers"
DECODE, REACH, RECALL = f"{PAGE}:decode", f"{PAGE}:reach", f"{PAGE}:recall"  # the page's other forms (ui/form.py)
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
    gpu = ui.gpu_reference(both, primary)
    gpu_verdict = verdicts.answers(gpu) if len(gpu) else None
    ui.verdict_ui(tr, prediction, verdicts.answers(primary), lines[1:2], gpu_verdict)  # why: the headline's reason
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
        if len(findings.amdahl(primary)):  # the recurrence alone beside the whole step (this run's rows)
            ui.chart_ui(charts.amdahl_chart(primary, tr))
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

# ---- what the fixed state costs: recall against the size of the state -------------------------------------------
st.subheader(tr("recall.header"))
st.markdown(tr("recall.intro"))
recall_prediction = ui.predict_ui(tr, "recall", 3)
recall_shown = st.container()
st.markdown("**" + tr("recall.live_header") + "**")
recall_cfg = ui.config_form_ui(
    tr, recall_frontier.EXPERIMENT, RECALL, ["tasks", "mixers", "d_models", "n_pairs", "steps", "device", "seed"]
)
recall_live = ui.run_ui(tr, recall_frontier.EXPERIMENT, recall_cfg, RECALL)
with recall_shown:
    f_both, f_primary = ui.shown_data(tr, "recall_frontier", recall_live)
    f_lines = recall_findings.takeaways(f_primary, tr) if len(f_primary) else []
    f_why = [line for line in [recall_findings.fall_line(f_primary, tr)] if line]
    ui.verdict_ui(tr, recall_prediction, verdicts.recall(f_primary) if len(f_primary) else None, f_why)
    if not len(recall_findings.final(f_both)):
        st.info(tr("ui.no_data"))
    elif recall_prediction.revealed:
        ui.status_ui(tr, f_both)
        left, right = st.columns(2)
        with left:
            ui.chart_ui(recall_charts.frontier_chart(f_both, tr))
        with right:
            ui.chart_ui(recall_charts.pairs_chart(f_both, tr))
        if len(recall_findings.copying(f_both)):
            ui.chart_ui(recall_charts.copy_chart(f_both, tr))
        st.caption(tr("recall.chart.legend"))
        ui.caption_source_ui(tr, f_primary)
        ui.takeaways_ui(tr, f_lines)
    ui.method_ui(tr, "recall")
    ui.table_ui(tr, f_both, "recall_frontier")
