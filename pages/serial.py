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
from core.harness.fit import exponent_text
from ui import common as ui
from ui import instant as views  # the instant views: in ui, so their fragment keeps no page table

PAGE = "serial"
SCALING = f"{PAGE}:scaling"  # the section's second form and live run: a 'page:name' key (see ui/form.py)
tr = ui.page_ui(PAGE)


def gpu_rows(both):
    """GPU rows shipped or uploaded, of one run (reference first): a story told from two files at once is no one's."""
    gpu_runs = both.loc[both["device_type"] == "cuda", "run"] if len(both) else []
    return both[both["run"] == gpu_runs.iloc[0]] if len(gpu_runs) else both.iloc[:0]


def slopes_table(both, primary, tr):
    st.caption(tr("serial.slopes_header"))
    slopes = findings.scaling_exponents(both)
    slopes["time_slope"] = [exponent_text(b, se) for b, se in zip(slopes["time_slope"], slopes["time_slope_se"])]
    slopes["memory_slope"] = slopes["memory_slope"].map(exponent_text)
    slopes = slopes.drop(columns=["points", "time_slope_se"])
    slopes["model"] = [tr(f"model.{m}") for m in slopes["model"]]
    columns = {c: tr(f"serial.slopes.{c}") for c in ("model", "run", "device", "time_slope", "memory_slope")}
    st.dataframe(slopes.rename(columns=columns), hide_index=True)


def roofline(both, primary, tr):
    """The model's section: the roofline, with this run's points and a GPU's (the chapter's pair)."""
    ui.heading_ui(tr, "serial.model")
    gpu = gpu_rows(both)
    measured = pd.concat([primary, gpu]).drop_duplicates() if len(gpu) else primary
    measured = measured[measured["model"].isin(findings.chapter_models(measured["model"]))]
    return charts.roofline_chart(findings.roofline_frame(primary, tr), measured, tr)


def length_chart(both, primary, tr):
    """The thread-scaling chart at one length, picked here: it opens on the longest the takeaways speak of."""
    lengths = sorted(int(n) for n in set(scaling_findings.measured(both)["seq_len"]))
    own = scaling_findings.measured(primary)["seq_len"]
    start = lengths.index(int(own.max())) if len(own) else len(lengths) - 1
    T = st.selectbox(tr("serial.scaling.length"), lengths, index=start, key=f"{SCALING}:length")
    return scaling_charts.speedup_chart(both, tr, T)


def scaling_story(tr, view):
    """After the takeaways: what a GPU run of the main section says, and the fits at the length picked."""
    gpu = gpu_rows(view.views[PAGE].both)
    story = findings.comparison(gpu) if len(gpu) else None
    if story is None:
        st.caption(tr("serial.scaling.no_gpu"))
    else:
        ratio, lo, hi = findings.spread_text(story)
        key = f"serial.scaling.gpu_story_{story['verdict']}"
        st.caption(tr(key, device=ui.literal(story["att_row"]["run"]), T=story["T"], ratio=ratio, lo=lo, hi=hi))
    T = st.session_state[f"{SCALING}:length"]
    st.caption(tr("serial.scaling.fit_header", T=T))
    st.dataframe(scaling_charts.fits_table(view.both[view.both["seq_len"] == T], tr), hide_index=True)


def serial_why(view):
    """The roofline's reason, from the takeaways."""
    pair = findings.comparison(view.primary) if len(view.primary) else None
    hw = findings.measured_hardware(view.primary, tr) if pair is not None else None
    return (findings.explanation(pair, hw, tr) if pair is not None else []) or view.lines


ui.register(
    ui.Section(
        PAGE,
        serial.EXPERIMENT,
        ("models", "seq_lens", "d_model", "n_layers", "batch_size", "device", "seed"),
        question=PAGE,
        gpu_verdict=True,
        why=serial_why,
        takeaways=findings.takeaways,
        during=ui.both(charts.time_chart),
        instant=views.chain_view,
        charts=(
            (ui.both(charts.time_chart),),
            (
                (ui.both(charts.steps_chart), ui.both(charts.memory_chart)),
                (ui.both(charts.tokens_chart), ui.both(charts.utilization_chart)),
            ),
            (slopes_table,),
            (roofline,),
        ),
        method=PAGE,
    ),
    ui.Section(  # more cores: who gets faster? The same step at 1, 2, 4, … threads
        SCALING,
        scaling.EXPERIMENT,
        ("models", "seq_lens", "max_threads", "repeats", "d_model", "device"),
        text="serial.scaling",
        question="serial.scaling",
        why=lambda v: scaling_findings.why(v.primary, tr) if len(v.primary) else [],  # the reason, not the list again
        takeaways=scaling_findings.takeaways,
        charts=((length_chart,),),
        legend="serial.scaling.chart.legend",
        method="serial.scaling",
        measured=scaling_findings.measured,
        special=scaling_story,
    ),
    ui.Section(  # checkpointed BPTT: memory bought back with a second forward pass
        f"{PAGE}:ckpt",
        checkpoint.EXPERIMENT,
        ("models", "seq_lens", "segment", "repeats", "device"),
        text="serial.ckpt",
        question="serial.ckpt",
        takeaways=checkpoint_findings.takeaways,
        charts=((ui.both(checkpoint_charts.memory_chart), ui.both(checkpoint_charts.time_chart)),),
        legend="serial.ckpt.chart.legend",
        method="serial.ckpt",
        measured=checkpoint_findings.measured,
    ),
)
ui.sections_ui(tr, PAGE, tabs=True)
