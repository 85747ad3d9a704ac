"""How does a page run an experiment live? The 'measure it yourself' section: the form, then a run in a worker
process (core.server.jobs) that the page follows: its place in the server's queue, a moving progress bar and a Stop button,
its rows kept in session state as they arrive so a Stop, a rerun or a dead worker loses nothing already measured.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import streamlit as st

from ui.frame import literal

if TYPE_CHECKING:
    import pandas as pd


POLL_S = 0.25  # how often a page looks at its job
# the worker waits this long before it measures, while the browser redraws the page for the rerun that Run began: on
# 2 cores, without it the first length's points of a serial quick run came out noisy (4 of the 5-6 noisy points of
# two browser runs were at n = 32; scripts/bench_serial_noise.py)
START_SETTLE_S = 1.5
PREVIEW_S = 1.0  # while a run measures, its rows are drawn again at most this often


@st.cache_resource(show_spinner=False, on_release=lambda q: q.shutdown())
def job_queue():
    """The server's one queue of workers (core.server.jobs): every session's runs, one measuring at a time. Its workers and
    zygote end with it: at exit, or when the cache is cleared (its replacement starts its own)."""
    import atexit

    from core.server.jobs import JobQueue

    q = JobQueue()
    atexit.register(q.shutdown)
    return q


def _session() -> tuple[str, bool]:
    """(this session's id, whether its browser is still connected); AppTest has no runtime: connected."""
    from streamlit import runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    sid = ctx.session_id if ctx is not None else "local"
    connected = not runtime.exists() or runtime.get_instance().is_active_session(sid)
    return sid, connected


def _live_state(experiment_name: str) -> dict:
    """This session's live run of an experiment, keyed by the experiment's name wherever its form sits: the home
    page and ui.data.latest_rows find page 5's answers_speed run under the name they know it by."""
    return st.session_state.setdefault(f"live:{experiment_name}", {"rows": [], "job": None})


def run_ui(tr, experiment, cfg, page: str, preview=None) -> pd.DataFrame | None:
    """Run `cfg` live (when given) in a worker process and follow it (ui.live's docstring); return this session's
    live rows. The job outlives this script run: a visit to another page leaves it measuring, and the page follows it
    again when it is drawn next. `preview(rows, where)`: draws the rows measured so far in `where` (an st.empty
    under the progress bar) while the run goes on."""
    import dataclasses

    from core.harness.device import page_threads

    state = _live_state(experiment.name)
    r = job_queue()
    r.prepare()  # the zygote (or a spare worker) imports torch while the learner reads the form
    if cfg is not None:
        if state.get("job") is not None:
            r.stop(state["job"])  # a new Run replaces this page's earlier one
        sid, _ = _session()
        job = r.submit(sid, experiment.name, dataclasses.asdict(cfg), threads=page_threads(), settle_s=START_SETTLE_S)
        state.update(job=job, rows=job.rows)  # the same list: the rows as they arrive
    job = state.get("job")
    if job is not None and job.active:
        _follow_ui(tr, r, job, page, experiment.point, preview)
    if job is None:
        return None
    if job.state == "bad_input":
        st.error(tr("ui.bad_input", error=literal(job.error or "")))
    elif job.state == "failed":
        st.error(tr("ui.run_failed", error=literal(job.error or "")))
    elif job.state == "died":
        st.error(tr("ui.worker_died", why=literal(job.error or ""), n=len(job.rows)))
    if not job.rows:
        if job.state in ("stopped", "cancelled"):
            st.info(tr("ui.stopped_empty"))
        return None
    import pandas as pd

    if job.state in ("stopped", "cancelled") or job.active:
        st.warning(tr("ui.stopped", done=job.kept, total=job.total))
    return pd.DataFrame(list(job.rows)).assign(source="live")  # a copy: the job's list may still grow


def _follow_ui(tr, r, job, page: str, point: tuple[str, ...] = (), preview=None) -> None:
    """Until `job` ends: its queue place and wait, or its progress in the page's words (core.terms.progress: the
    point measured last, from its `point` columns); Stop (or cancel) ends it at once."""
    from core.terms.progress import left_words, progress_words

    stop = st.empty()
    stop.button(tr("ui.stop"), key=f"stop:{page}", help=tr("ui.stop_help"), on_click=r.stop, args=(job,))
    bar = st.progress(0.0, text=tr("ui.starting"))
    during = st.empty()  # the section's chart with the rows so far, where the learner is looking
    shown_step, drawn, drawn_at = None, 0, 0.0
    while job.active:
        if preview is not None and len(job.rows) > drawn and time.monotonic() - drawn_at > PREVIEW_S:
            drawn, drawn_at = len(job.rows), time.monotonic()
            try:
                preview(list(job.rows[:drawn]), during)
            except Exception:  # noqa: BLE001 - a chart that cannot be drawn yet costs the preview, not the run
                preview = None
                during.empty()
        _, connected = _session()
        if not connected and job.state == "queued":
            r.stop(job)  # a closed tab leaves the queue
            break
        r.touch(job)
        if job.state == "queued":
            place, wait = r.position(job)
            wait = 5 * round(wait / 5)  # the estimate moves in steps of 5 s: each change is a redraw beside a run
            step, fraction, text = ("queued", place, wait), 0.0, tr("ui.queued", place=place, wait=f"{wait:,.0f}")
        elif job.total:
            step, fraction = ("running", job.done), min(1.0, job.done / job.total)
            last, left = job.rows[-1] if job.rows else None, r.left(job)
            text = progress_words(job.done, job.total, last, point, left, tr)
            step = (*step, left_words(left, tr))  # the estimate counts down between points
        else:
            step, fraction, text = ("running", 0), 0.0, tr("ui.starting")
        if step != shown_step:  # a point done, or a new place in the queue: one message for the browser to draw
            bar.progress(fraction, text=text)
            shown_step = step
        time.sleep(POLL_S)
    bar.empty()
    stop.empty()
    during.empty()
    if job.state == "done":  # said where the learner is looking: under the Run button, and as a toast
        done = tr("ui.run_done", n=f"{len(job.rows):,}")
        st.success(done)
        st.toast(done)
