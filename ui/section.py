"""One record per section of a page (`Section`), and the one function that draws any of them (`section_ui`).

A section reads, picture first: header and intro → its question (if it asks one) → the verdict under it → the
section's first chart row → at most IN_VIEW takeaways → one collapsed Details (status banners, the other charts and
takeaways, the source, the method, the table and its CSV) → a collapsed "measure it yourself" (form, progress,
Stop, and under the bar the section's `during` chart with the rows measured so far). Results wait behind the
question's gate; a live run's rows are drawn over the reference.
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

from ui.data import (
    DOWNLOADS,
    caption_source_ui,
    chart_ui,
    gpu_reference,
    reference_rows,
    reference_ui_data,
    shown_data,
    status_ui,
    table_ui,
    takeaways_ui,
)
from ui.form import config_form_ui
from ui.frame import heading_ui, literal, method_ui
from ui.live import run_ui
from ui.predict import Prediction, close_gate, open_gate, predict_ui, revealed_now, verdict_ui


@dataclasses.dataclass(frozen=True)
class Section:
    # the form's and live run's key: the page's name for its main section ("serial"), else "<page>:<section>"; the
    # live rows are kept under the experiment's name (ui.live._live_state), the data read under it too
    key: str
    experiment: Any  # core.config.Experiment: the run, its config and presets
    fields: tuple[str, ...]  # the form's fields, in order
    text: str | None = None  # catalogue prefix of '<text>.header' and '.intro'; None: no header
    question: str | None = None  # the predict key ('serial.scaling'), None: no question of its own
    gpu_verdict: bool = False  # also set the question against a shipped GPU reference's rows
    why: Callable | None = None  # View → the verdict's reasons; None: the takeaways
    takeaways: Callable | None = None  # (primary rows, tr) → sentences
    # rows of columns of chart builders, each (both, primary, tr) → alt.Chart or None (nothing to draw; a cell may
    # draw a table or a widget of its own and return None), or a part's name (a heading, ui.frame.heading_ui); a row
    # of one column is drawn full width
    charts: tuple = ()
    legend: str | None = None  # catalogue key of the caption under the charts
    method: str | None = None  # the method expander's key; None: the page draws it elsewhere
    table: bool = True  # draw the results table (named after the experiment) here
    measured: Callable | None = None  # the rows that count as results (no_data otherwise); None: all of them
    no_data: str = "ui.no_data"
    gate: bool = True  # draw the results only once revealed (False: only what the ui helpers draw waits)
    special: Callable | None = None  # (tr, View) → None, drawn after the takeaways
    # while a run measures, under its progress bar: a chart cell (both, primary, tr) → chart of the rows so far, drawn
    # again as they come (so one that only returns a chart: a widget drawn twice would clash); None: no such chart
    during: Callable | None = None
    # the section's instant view: (tr, reference rows) → (lines, source) or None, drawing a slider and what it moves at once
    # (core.mechanism), in a fragment under the takeaways once answered; its texts are '<page>.instant.*', its source
    # 'rows' or 'formula'
    instant: Callable | None = None

    @property
    def page(self) -> str:
        return self.key.split(":")[0]

    @property
    def verdict(self) -> Callable | None:
        """Its question's verdict (core.findings.verdicts.QUESTIONS): primary rows → Verdict | None."""
        from core.findings import verdicts  # imported when drawn: ui's import stays torch-free

        return verdicts.QUESTIONS[self.question].verdict if self.question else None


@dataclasses.dataclass
class View:
    """What a section drew: its rows, its takeaways, its question, and the sections drawn before it on the page."""

    prediction: Prediction | None
    views: dict
    both: Any = None
    primary: Any = None
    lines: list = dataclasses.field(default_factory=list)


IN_VIEW = 2  # takeaways in view under a section's chart; the rest wait in its Details
SECTIONS: dict[str, Section] = {}  # every registered section by key, in the order its page draws them


def register(*sections: Section) -> None:
    """Adds sections to their pages; a section's question must read the experiment the section runs."""
    from core.findings.verdicts import QUESTIONS

    for s in sections:
        if s.question and s.question not in QUESTIONS:
            raise ValueError(f"question: {s.question!r} has no verdict in core.findings.verdicts")
        if s.question and QUESTIONS[s.question].experiment != s.experiment.name:
            raise ValueError(
                f"question: {s.question!r} reads {QUESTIONS[s.question].experiment}, not {s.experiment.name}"
            )
        SECTIONS[s.key] = s


def sections_ui(tr, page: str, tabs: bool = False) -> dict[str, View]:
    """Draw every registered section of `page`, in order, each in a tab of its own if `tabs` (labelled
    '<text>.tab', or '<key>.tab' for a section without a header); returns what each drew, by key."""
    views: dict[str, View] = {}
    mine = [s for s in SECTIONS.values() if s.page == page]
    places = (
        st.tabs([tr(f"{s.text or s.key}.tab") for s in mine])
        if tabs and len(mine) > 1
        else [st.container()] * len(mine)
    )
    for s, place in zip(mine, places):
        with place:
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


def instant_ui(tr, s: Section) -> None:
    """Section `s`'s instant view, in a fragment: moving its slider reruns the view alone, not the page. It reads the
    section's reference rows (every device's) afresh from the cache, and the fragment keeps only the view, its names
    and `tr` (the Section's other hooks are the page script's functions, which would keep its tables in the session).
    Its container's key (`instant-<section key>`) is what a browser benchmark finds it by."""
    view, page, name, key = s.instant, s.page, s.experiment.name, "instant-" + s.key.replace(":", "-")

    @st.fragment
    def draw():
        shown = revealed_now()
        open_gate()  # drawn only once revealed; a fragment's rerun must not read a later section's closed gate
        plain = DOWNLOADS.set(False)  # a picture that changes with every move: no download buttons to rebuild
        try:
            with st.container(border=True, key=key):
                st.markdown(f"**{tr(f'{page}.instant.title')}**")
                st.markdown(tr(f"{page}.instant.intro"))
                said = view(tr, reference_ui_data(name)[0])
                if said:
                    lines, source = said
                    st.markdown("\n".join(f"- {line}" for line in lines))
                    st.caption(tr("instant.note", source=tr(f"instant.source.{source}")))
        finally:
            DOWNLOADS.reset(plain)
            close_gate(shown)

    draw()


def both(chart: Callable) -> Callable:
    """A chart cell of a builder that draws every run shown: `chart(both, tr)`."""
    return lambda both, primary, tr: chart(both, tr)


def _takeaways_in_view(lines: list[str]) -> tuple[list[str], list[str]]:
    """(the takeaways in view, the rest for Details): the first IN_VIEW."""
    return lines[:IN_VIEW], lines[IN_VIEW:]


def section_ui(tr, s: Section, views: dict | None = None, prediction: Prediction | None = None) -> View:
    """Draw section `s`, picture first: its question, the verdict, *the* chart that answers it and at most IN_VIEW
    takeaways; everything else (the other charts, takeaways and notes, the method, the table) in one collapsed
    Details expander, and the form in a collapsed "measure it yourself". `prediction`: its question, when the page
    drew it already (above what it draws first)."""
    main = ":" not in s.key  # a page's main section: its question first
    view = View(prediction or (predict_ui(tr, s.question, 3) if s.question and main else None), views or {})
    if s.text:
        st.subheader(tr(f"{s.text}.header"))
        st.markdown(tr(f"{s.text}.intro"))
    if s.question and not main:
        view.prediction = predict_ui(tr, s.question, 3)
    shown = st.container()  # filled below, once the live run (if any) has added its rows

    def preview(rows: list, where) -> None:
        """The section's `during` chart with the rows measured so far, under the progress bar."""
        import pandas as pd

        if not revealed_now():
            return
        b, p = shown_data(tr, s.experiment.name, pd.DataFrame(rows).assign(source="live"))
        plain = DOWNLOADS.set(False)  # the final chart, drawn after the run, carries the download buttons
        try:
            with where.container():
                st.caption(tr("ui.live_preview", n=f"{len(rows):,}"))
                _charts_ui(tr, ((s.during,),), b, p)
        finally:
            DOWNLOADS.reset(plain)

    damaged = None
    with st.expander(tr("ui.measure_yourself")):
        st.caption(tr("ui.live_intro"))
        try:
            cfg = config_form_ui(tr, s.experiment, s.key, list(s.fields))
        except ValueError as err:  # a shipped file the run needs is damaged: it costs this section's run, not the page
            damaged, cfg = err, None
        live = run_ui(tr, s.experiment, cfg, s.key, preview if s.during else None)
    with shown:
        if damaged is not None:  # said where the learner looks, not inside the closed form
            st.error(tr("ui.bad_input", error=literal(str(damaged))))
        both, primary = view.both, view.primary = shown_data(tr, s.experiment.name, live)
        view.lines = s.takeaways(primary, tr) if s.takeaways and len(primary) else []
        if s.verdict is not None:
            gpu = gpu_reference(both, primary) if s.gpu_verdict else ()
            verdict = s.verdict(primary) if len(primary) else None
            why = s.why(view) if s.why else view.lines
            ref = reference_rows(both) if live is not None and len(live) else both.iloc[:0]
            beside = (s.verdict(ref), ref) if len(ref) else None  # a live run is read beside the reference
            verdict_ui(tr, view.prediction, verdict, why, s.verdict(gpu) if len(gpu) else None, primary, beside)
        if not len(s.measured(both) if s.measured else both):
            st.info(tr(s.no_data))
            return view
        revealed = revealed_now() or not s.gate
        first, rest = (s.charts[:1], s.charts[1:]) if revealed else ((), ())
        _charts_ui(tr, first, both, primary)
        in_view, later = _takeaways_in_view(view.lines)
        if revealed and s.verdict is not None and s.why is not None:
            in_view = (s.why(view) or [])[:1] + in_view[: IN_VIEW - 1]
            later = [line for line in view.lines if line not in in_view]
        takeaways_ui(tr, in_view)
        if revealed_now() and s.instant is not None:  # never before the answer, whatever the gate
            instant_ui(tr, s)
        with st.expander(tr("ui.details")):
            if revealed:
                status_ui(tr, both)
                _charts_ui(tr, rest, both, primary)
                if s.legend:
                    st.caption(tr(s.legend))
                caption_source_ui(tr, primary)
                takeaways_ui(tr, later)
                if s.special:
                    s.special(tr, view)
            if s.method:
                method_ui(tr, s.method, inline=True)
            if s.table:
                table_ui(tr, both, s.experiment.name, inline=True)
    return view
