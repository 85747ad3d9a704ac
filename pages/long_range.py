"""Bottleneck 2 — long-range dependency: a fact must survive d recurrent updates; attention reaches it in one step."""

import threading

import pandas as pd
import streamlit as st

from core.charts import long_range as charts
from core.charts import real_text as text_charts
from core.charts import text_training as training_charts
from core.config import make_config
from core.experiments import gradient_reach, long_range, real_text, recall_map, text_race
from core.findings import listing
from core.findings import long_range as findings
from core.findings import real_text as text_findings
from core.models import registry
from core.offline import checkpoints as ck
from core.training import tasks
from core.workloads import text_lm
from ui import common as ui
from ui import instant as views  # the instant views: in ui, so their fragment keeps no page table

PAGE = "long_range"
tr = ui.page_ui(PAGE)
prediction = ui.predict_ui(tr, PAGE, 3)


@st.cache_resource(show_spinner=False)
def shipped_models():
    """The two shipped checkpoints and a lock: the Transformer keeps its last attention map on the module."""
    tfm, meta = ck.load("transformer")
    lstm, lstm_meta = ck.load("lstm")
    return tfm, lstm, meta, lstm_meta, threading.Lock()


@st.cache_data(show_spinner=False, max_entries=32)  # bounded: every visitor's settings would stay in memory
def reach_frame(**values):
    return gradient_reach.run(make_config(gradient_reach.GradientReachConfig, values))


task_tab, why_tab, text_tab = st.tabs([tr(f"long_range.tab.{t}") for t in ("task", "why", "text")])
with why_tab:
    # ---- 1 · the attention map, at once from the shipped checkpoints -----------------------------------------------
    ui.heading_ui(tr, "long_range.map")
    try:
        tfm, lstm, meta, lstm_meta, lock = shipped_models()
    except ck.files.DamagedFile as err:  # a damaged or missing checkpoint costs this map, not the page
        ui.file_problem_ui(tr, err.problem)
        st.caption(tr("long_range.map.missing"))
        lstm_meta = None
    else:
        T, K = meta["seq_len"], meta["n_keys"]
        acc_t, acc_l = meta["accuracy_by_distance"], lstm_meta["accuracy_by_distance"]
        picks = (0, len(acc_t) // 2 - 1, len(acc_t) - 1)
        if prediction.revealed:  # the shipped models' accuracies answer the question: they wait for it
            st.caption(
                tr(
                    "long_range.map.trained",
                    tp=f"{meta['params']:,}",
                    lp=f"{lstm_meta['params']:,}",
                    steps=meta["steps"],
                    T=T,
                    mid=picks[1] + 1,
                    last=picks[2] + 1,
                    t_acc=" / ".join(f"{100 * acc_t[i]:.0f}%" for i in picks),
                    l_acc=" / ".join(f"{100 * acc_l[i]:.0f}%" for i in picks),
                )
            )
        c1, c2, c3 = st.columns([1, 2, 1])
        name = c1.selectbox(
            tr("long_range.map.name"), range(K), format_func=tasks.NAMES.__getitem__, key=f"{PAGE}:map:name"
        )
        distance = c2.slider(tr("long_range.map.distance"), 1, T - 1, T - 4, key=f"{PAGE}:map:distance")
        if c3.button(tr("long_range.map.shuffle"), key=f"{PAGE}:map:shuffle"):
            st.session_state[f"{PAGE}:map:seed"] = st.session_state.get(f"{PAGE}:map:seed", 0) + 1
            st.session_state[f"{PAGE}:map:typed"] = ""
        typed = st.text_input(
            tr("long_range.map.type"),
            key=f"{PAGE}:map:typed",
            placeholder="Alice the cat sat on the mat and then it was very far she",
        )
        st.caption(tr("long_range.map.vocab", names=listing(tasks.NAMES[:K], tr), fillers=listing(tasks.FILLERS, tr)))
        tokens = recall_map.random_example(T, distance, K, st.session_state.get(f"{PAGE}:map:seed", 0), name)
        if typed.strip():
            try:
                tokens = recall_map.parse_example(typed, K)
            except ValueError as err:
                st.error(tr("long_range.map.bad", error=ui.literal(str(err))))
        with lock:
            labels = {"head": tr("long_range.map.label.attention"), "saliency": tr("long_range.map.label.saliency")}
            frame = recall_map.map_frame(tokens, tfm, lstm, K, labels)
            map_lines = recall_map.map_takeaways(frame, tokens, tfm, lstm, K, tr)
        ui.chart_ui(charts.attention_map_chart(frame, tr))
        ui.takeaways_ui(tr, map_lines)

    # ---- 2 · gradient reach at initialisation, measured here and now -------------------------------------------------
    ui.heading_ui(tr, "long_range.reach")
    # the page's own bounds for each field (tighter than the config's)
    fields = {"seq_len": (2, 1000), "d_model": (4, 128), "rnn_radius": (0.0, 4.0), "forget_bias": (-10.0, 10.0),
              "seed": (0, 2**31 - 1)}  # fmt: skip
    defaults = gradient_reach.EXPERIMENT.config("quick")
    with st.form(f"form:{PAGE}:reach"):
        cols = st.columns(len(fields))
        values = {
            f: col.number_input(
                tr(f"long_range.reach.field.{f}"),
                lo,
                hi,
                getattr(defaults, f),
                key=f"w:{PAGE}:reach:{f}",
                help=tr("ui.allowed", range=f"{lo}..{hi}"),
            )
            for col, (f, (lo, hi)) in zip(cols, fields.items())
        }
        st.form_submit_button(tr("long_range.reach.compute"))
    with st.spinner(tr("long_range.reach.computing")):
        try:
            reach = reach_frame(**values, device="auto")
        except ValueError as err:
            st.error(tr("ui.bad_input", error=ui.literal(str(err))))
            reach = reach_frame(**{f: getattr(defaults, f) for f in fields}, device="auto")
    ui.status_ui(tr, reach)
    left, right = st.columns([3, 2])
    with left:
        ui.chart_ui(charts.reach_chart(reach, tr))
        st.caption(tr("long_range.reach.table"))
        table = gradient_reach.reach_table(reach)
        table["model"] = table["model"].map(lambda m: tr(f"long_range.model.{m}"))
        table["reach"] = table["reach"].map(lambda r: tr("long_range.reach.never") if pd.isna(r) else f"{r:.0f}")
        cols = ["model", "seq_len", "reach", "path_length"]
        if prediction.revealed:
            st.dataframe(
                table[cols].rename(columns={c: tr(f"long_range.reach.col.{c}") for c in cols}), hide_index=True
            )
    with right:
        ui.takeaways_ui(tr, gradient_reach.takeaways(reach, tr))
        ui.table_ui(tr, reach.assign(source="live"), "gradient_reach")


# ---- 3 · training at growing distances: reference at once, live on Run ----------------------------------------
def train_notes(tr, view):
    """After the takeaways: a quick run's note, and the shipped LSTM's when this run's LSTM fell short."""
    if view.primary["source"].iloc[0] == "live":
        st.caption(tr("long_range.quick_note"))
    last = long_range.final(view.primary)
    rec = registry.representative(registry.RECURRENT, last["model"])
    lstm_runs = last[(last["model"] == rec) & (last["status"] == "ok")]
    if lstm_meta is not None and len(lstm_runs) and (lstm_runs["accuracy"] < long_range.SOLVED).any():
        acc = lstm_meta["accuracy_by_distance"]
        st.caption(
            tr(
                "long_range.train_note",
                acc=f"{100 * acc[-1]:.0f}%",
                far=len(acc),
                steps=lstm_meta["steps"],
                run_steps=int(lstm_runs["step"].max()),
            )
        )


TRAIN = ui.Section(
    PAGE,
    long_range.EXPERIMENT,
    ("tasks", "models", "distances", "seq_len", "n_keys", "n_pairs", "steps", "d_model", "device", "seed"),
    text="long_range.train",
    question=PAGE,
    why=lambda v: findings.answering(v.primary, tr) or v.lines,  # this tab's own answer; the gradients are the next's
    takeaways=long_range.takeaways,
    charts=((ui.both(charts.accuracy_chart),), (ui.both(charts.curves_chart),)),
    during=ui.both(charts.curves_chart),  # accuracy rising, step by step
    method=PAGE,
    special=train_notes,
    instant=views.reach_view,
)
with task_tab:
    ui.section_ui(tr, TRAIN, prediction=prediction)

with text_tab:
    # ---- 4 · real text: copying across distance, the shipped byte-level models beside counting ----------------------
    TEXT = ui.Section(
        f"{PAGE}:text",
        real_text.EXPERIMENT,
        ("models", "seeds", "measures", "windows", "window", "tail", "baseline", "copy_match", "device"),
        text="long_range.text",
        question="long_range.text",
        takeaways=real_text.EXPERIMENT.takeaways,
        charts=(
            (ui.both(text_charts.copy_chart),),
            (ui.both(text_charts.position_chart),),
            (ui.both(text_charts.context_chart), ui.both(text_charts.recall_chart)),
            (ui.both(training_charts.curves_chart),),
            (ui.both(training_charts.time_chart),),
        ),
        method="long_range.text",
    )
    ui.section_ui(tr, TEXT)

    # ---- 5 · your own text, read by the shipped models --------------------------------------------------------------
    @st.cache_data(show_spinner=False, max_entries=16)  # bounded: every visitor's text would stay in memory
    def own_frame(data: bytes):
        return real_text.own_text(data, text_findings.pair(text_lm.models()))

    ui.heading_ui(tr, "long_range.own")
    limit = real_text.OWN_MAX_BYTES
    with st.form(f"form:{PAGE}:own"):
        pasted = st.text_area(
            tr("long_range.own.input", limit=f"{limit:,}"), real_text.SAMPLE_TEXT, key=f"w:{PAGE}:own", height=200
        )
        st.form_submit_button(tr("long_range.own.read"))
    data = pasted.encode("utf-8")
    if not data.strip():
        st.info(tr("long_range.own.empty"))
    elif len(data) > limit:
        st.error(tr("long_range.own.too_long", n=f"{len(data):,}", limit=f"{limit:,}"))
    else:
        try:
            own = own_frame(data)
        except ck.files.DamagedFile as err:
            ui.file_problem_ui(tr, err.problem)
        else:
            att, rec = text_findings.pair(text_lm.models())
            grid = text_charts.text_grid(list(own["char"]))
            for name in (real_text.NGRAM, rec, att):
                bits = own[name].mean()
                ui.chart_ui(text_charts.surprise_chart(grid, own[name].fillna(0), tr("long_range.own.row",
                            model=tr(f"model.{name}"), bits=f"{bits:.2f}")))  # fmt: skip
            gain = (own[rec] - own[att]).fillna(0)
            ui.chart_ui(text_charts.surprise_chart(grid, gain, tr("long_range.own.diff_row"), diff=True))
            scored = own[att].notna()
            if ui.revealed_now():  # the summary waits behind the question, as the shaded rows above it do
                said = tr("long_range.own.summary", n=f"{len(data):,}", att=tr(f"model.{att}"), rec=tr(f"model.{rec}"),
                          att_bits=f"{own[att].mean():.2f}", rec_bits=f"{own[rec].mean():.2f}",
                          share=f"{100 * (gain[scored] > 0).mean():.0f}")  # fmt: skip
                st.markdown(said)
            st.caption(tr("long_range.own.legend"))

    # ---- 6 · the race, live: the LSTM and the Transformer from scratch, the same seconds each ----------------------
    def race_cell(both, primary, tr):
        shipped, _ = ui.reference_ui_data(real_text.EXPERIMENT.name)
        return training_charts.race_chart(both, shipped, tr)

    RACE = ui.Section(
        f"{PAGE}:race",
        text_race.EXPERIMENT,
        ("models", "seconds", "window", "lr", "warmup_steps", "device", "seed"),
        text="long_range.race",
        takeaways=text_race.EXPERIMENT.takeaways,
        charts=((race_cell,),),
        method="long_range.race",
    )
    ui.section_ui(tr, RACE)
