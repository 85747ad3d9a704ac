"""One record per section of a page (`Section`), and the one function that draws any of them (`section_ui`).

A section reads: header and intro → its question (if it asks one) → the reference results, drawn at once above the
live run → "measure it yourself" (form, progress, Stop). Its results: the verdict under the question, then a status
banner, its charts, legend, source caption and takeaways (all behind the question's gate), its method and its table.
A page registers its records (`register`) and draws them in order (`sections_ui`); what is truly its own (the serial
page's slopes table, the scaling section's length picker…) is a chart cell that draws itself, or the record's
`special` hook, drawn after the takeaways; what stands around a section (the long-range page's attention map, the
attention page's KV calculator) the page draws in place, around its own `section_ui` call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import streamlit as st

from ui.data import caption_source_ui, chart_ui, gpu_reference, shown_data, status_ui, table_ui, takeaways_ui
from ui.form import config_form_ui
from ui.frame import heading_ui, literal, method_ui
from ui.live import run_ui
from ui.predict import Prediction, predict_ui, revealed_now, verdict_ui


@dataclasses.dataclass(frozen=True)
class Section:
    # the form's and live run's key: the page's name for its main section ("serial"), else "<page>:<section>"; the
    # live rows are kept under the experiment's name (ui.live._live_state), the data read under it too
    key: str
    experiment: Any  # core.config.Experiment: the run, its config and presets
    fields: tuple[str, ...]  # the form's fields, in order
    text: str | None = None  # catalogue prefix of '<text>.header', '.intro' and '.live_header'; None: no header
    question: str | None = None  # the predict key ('serial.scaling'), None: no question of its own
    verdict: Callable | None = None  # primary rows → core.findings.verdicts.Verdict | None
    gpu_verdict: bool = False  # also set the question against a shipped GPU reference's rows
    why: Callable | None = None  # View → the verdict's reasons; None: the takeaways
    takeaways: Callable | None = None  # (primary rows, tr) → sentences
    # rows of columns of chart builders, each (both, primary, tr) → alt.Chart or None (nothing to draw; a cell may
    # draw a table or a widget of its own and return None), or a part's name (a heading, ui.frame.heading_ui); a row
    # of one column is drawn full width
    charts: tuple = ()
    legend: str | None = None  # catalogue key of the caption under the charts
    method: str | None = None  # the method expander's key; None: the page draws it elsewhere
    method_at: str = "above_table"  # where the method sits: above_table, below_table, or below_form (the very end)
    table: bool = True  # draw the results table (named after the experiment) here
    measured: Callable | None = None  # the rows that count as results (no_data otherwise); None: all of them
    no_data: str = "ui.no_data"
    gate: bool = True  # draw the results only once revealed (False: only what the ui helpers draw waits)
    special: Callable | None = None  # (tr, View) → None, drawn after the takeaways

    @property
    def page(self) -> str:
        return self.key.split(":")[0]


@dataclasses.dataclass
class View:
    """What a section drew: its rows, its takeaways, its question, and the sections drawn before it on the page."""

    prediction: Prediction | None
    views: dict
    both: Any = None
    primary: Any = None
    lines: list = dataclasses.field(default_factory=list)


SECTIONS: dict[str, Section] = {}  # every registered section by key, in the order its page draws them


def register(*sections: Section) -> None:
    for s in sections:
        SECTIONS[s.key] = s


def sections_ui(tr, page: str) -> dict[str, View]:
    """Draw every registered section of `page`, in order; returns what each drew, by key."""
    views: dict[str, View] = {}
    for s in [s for s in SECTIONS.values() if s.page == page]:
        views[s.key] = section_ui(tr, s, views)
    return views


def _charts_ui(tr, charts, both, primary) -> None:
    for row in charts:
        columns = st.columns(len(row)) if len(row) > 1 else [st.container()]
        for column, cells in zip(columns, row):
            with column:
                for cell in cells if isinstance(cells, tuple) else (cells,):
                    chart = heading_ui(tr, cell) if isinstance(cell, str) else cell(both, primary, tr)
                    if chart is not None:
                        chart_ui(chart)


def both(chart: Callable) -> Callable:
    """A chart cell of a builder that draws every run shown: `chart(both, tr)`."""
    return lambda both, primary, tr: chart(both, tr)


def section_ui(tr, s: Section, views: dict | None = None, prediction: Prediction | None = None) -> View:
    """Draw section `s`; `prediction`: its question, when the page drew it already (above what it draws first)."""
    main = ":" not in s.key  # a page's main section: its question first, then the usual "measure it yourself"
    view = View(prediction or (predict_ui(tr, s.question, 3) if s.question and main else None), views or {})
    if s.text:
        st.subheader(tr(f"{s.text}.header"))
        st.markdown(tr(f"{s.text}.intro"))
    if s.question and not main:
        view.prediction = predict_ui(tr, s.question, 3)
    shown = st.container()  # filled below, once the live run (if any) has added its rows
    if main:  # the 'measure it yourself' section every page has
        st.subheader(tr("ui.live_header"))
        st.caption(tr("ui.live_intro"))
    else:
        st.markdown("**" + tr(f"{s.text}.live_header") + "**")
    try:
        cfg = config_form_ui(tr, s.experiment, s.key, list(s.fields))
    except ValueError as err:  # a shipped file the run needs is damaged: it costs this section's run, not the page
        st.error(tr("ui.bad_input", error=literal(str(err))))
        cfg = None
    live = run_ui(tr, s.experiment, cfg, s.key)
    with shown:
        both, primary = view.both, view.primary = shown_data(tr, s.experiment.name, live)
        view.lines = s.takeaways(primary, tr) if s.takeaways and len(primary) else []
        if s.verdict is not None:
            gpu = gpu_reference(both, primary) if s.gpu_verdict else ()
            verdict = s.verdict(primary) if len(primary) else None
            why = s.why(view) if s.why else view.lines
            verdict_ui(tr, view.prediction, verdict, why, s.verdict(gpu) if len(gpu) else None)
        if not len(s.measured(both) if s.measured else both):
            st.info(tr(s.no_data))
        elif revealed_now() or not s.gate:
            status_ui(tr, both)
            _charts_ui(tr, s.charts, both, primary)
            if s.legend:
                st.caption(tr(s.legend))
            caption_source_ui(tr, primary)
            takeaways_ui(tr, view.lines)
            if s.special:
                s.special(tr, view)
        if s.method and s.method_at == "above_table":
            method_ui(tr, s.method)
        if s.table:
            table_ui(tr, both, s.experiment.name)
        if s.method and s.method_at == "below_table":
            method_ui(tr, s.method)
    if s.method and s.method_at == "below_form":
        method_ui(tr, s.method)
    return view
