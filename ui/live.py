"""How does a page run an experiment live? The 'measure it yourself' section: the form, then a run with a moving
progress bar and a Stop button, its rows kept in session state so a Stop or a rerun loses nothing, and a token so a
stopped or replaced run ends without touching the next run's rows.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import streamlit as st

from ui.form import config_form_ui
from ui.frame import literal

if TYPE_CHECKING:
    import pandas as pd


PROGRESS_EVERY_S = 1.0  # the bar moves at least this far apart between the repeats of one point (see run_ui)
START_SETTLE_S = 1.0  # before a live run times anything: the browser redraws the page for the rerun Run began
SETTLE_S = 2.0  # after waiting for another session's run: let that page draw its results before timing starts
CHART_WAIT_S = 90.0  # the longest a page holds its charts back while another session measures

# Threads of this process inside a live measurement (Streamlit runs each session's script in its own thread).
_measuring_threads: set[int] = set()


def others_measuring() -> bool:
    """True while another session's run holds the measurement lock (this thread's own run does not count)."""
    import threading

    from core.device import MEASURE_LOCK

    return MEASURE_LOCK.locked() and threading.get_ident() not in _measuring_threads


def wait_while_others_measure(tr) -> None:
    """Hold this page's heavy drawing back while another session times its points, so building charts here does
    not land in that session's timed region (on 2 cores it slowed its first points 5-9x); at most CHART_WAIT_S."""
    import time

    if not others_measuring():
        return
    with st.spinner(tr("ui.chart_wait")):
        deadline = time.monotonic() + CHART_WAIT_S
        while others_measuring() and time.monotonic() < deadline:
            time.sleep(0.25)


def _live_state(page: str) -> dict:
    return st.session_state.setdefault(
        f"live:{page}", {"rows": [], "done": 0, "total": 0, "finished": False, "error": None}
    )


class _Superseded(Exception):
    """Raised inside an experiment's progress callback to end a run that was stopped or replaced."""


def run_ui(tr, experiment, cfg, page: str) -> pd.DataFrame | None:
    """Run `cfg` live (when given) with a moving progress bar and a Stop button; return this session's live rows.

    Rows are kept in session state as they arrive, so a Stop (or any rerun) loses nothing already measured. Each
    run owns the state through a token: Streamlit starts the next script run at once (a Stop, or Enter in the form
    and then Run), while the old run's thread may still be inside a measurement; when it reports, it sees it was
    stopped or replaced and ends, without touching the new run's rows.
    """
    from core import cancel
    from core.device import configure_threads, measuring, page_threads
    from core.heap import return_freed_memory

    state = _live_state(page)
    if cfg is not None:
        token = object()
        state.update(rows=[], done=0, kept=0, total=0, finished=False, error=None, token=token, stop=False)
        configure_threads(page_threads())  # one core left to the server and the browser (core.device.page_threads)
        stop = st.empty()  # the Stop button exists only while the run does
        stop.button(
            tr("ui.stop"),
            key=f"stop:{page}",
            help=tr("ui.stop_help"),
            on_click=lambda: state.update(stop=True) if state.get("token") is token else None,
        )
        bar = st.progress(0.0, text=tr("ui.starting"))
        shown = [0.0]  # when the bar last changed (time.monotonic)

        def on_progress(p):
            if state.get("token") is not token:
                raise _Superseded
            state["rows"].extend(p.rows)
            state["done"], state["total"] = p.done, p.total
            if p.rows:  # the count a Stop message gives is the work whose rows are shown, never more
                state["kept"] = p.done
            if state.get("stop"):
                raise _Superseded
            # Every update is a message the browser renders, on the cores the next timed repeat runs on: between
            # points (a message with rows) always, between the repeats of one point at most every PROGRESS_EVERY_S
            # (on 2 cores, an update per repeat flagged most points of a serial quick run as noisy)
            now = time.monotonic()
            if not p.rows and now - shown[0] < PROGRESS_EVERY_S:
                return
            shown[0] = now
            bar.progress(
                min(1.0, p.done / max(1, p.total)), text=tr("ui.progress", done=p.done, total=p.total, what=p.message)
            )

        waited = []

        def on_wait():
            if state.get("token") is not token or state.get("stop"):
                raise _Superseded
            waited.append(True)
            bar.progress(0.0, text=tr("ui.waiting"))

        def settle(seconds: float):
            """Let a browser finish drawing before timing starts, checking for Stop meanwhile: after a wait for the
            lock, the other session's page draws its results (SETTLE_S); at any start, this page redraws itself
            for the rerun that Run began (START_SETTLE_S)."""
            bar.progress(0.0, text=tr("ui.settling" if waited else "ui.settling_start"))
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                cancel.check()
                time.sleep(0.1)

        def stop_asked() -> bool:  # read by core.cancel.check() between timed repeats and training steps
            return state.get("token") is not token or bool(state.get("stop"))

        import threading

        me = threading.get_ident()
        try:
            with measuring(on_wait), cancel.stop_when(stop_asked):
                _measuring_threads.add(me)
                settle(SETTLE_S if waited else START_SETTLE_S)
                experiment.run(cfg, on_progress=on_progress)
            state["finished"] = True
        except (_Superseded, cancel.Stopped):
            pass  # the lock is released on the way out; the rows measured so far stay in the state
        except ValueError as err:
            state["error"] = str(err)
        except Exception as err:  # noqa: BLE001 - shown as a result, not a traceback; measured rows are kept
            state["error"] = f"{type(err).__name__}: {err}"
        finally:
            _measuring_threads.discard(me)
            return_freed_memory()  # a long-lived server levels off (core.heap.return_freed_memory)
        if state.get("token") is not token:
            return None  # a newer run of this page draws the results
        bar.empty()
        stop.empty()
    if state["error"]:
        st.error(tr("ui.run_failed", error=literal(state["error"])))
    if not state["rows"]:
        if state.get("stop"):
            st.info(tr("ui.stopped_empty"))
        return None
    import pandas as pd

    if not state["finished"] and not state["error"]:
        st.warning(tr("ui.stopped", done=state.get("kept", 0), total=state["total"]))
    return pd.DataFrame(list(state["rows"])).assign(source="live")  # a copy: see the docstring


def live_run_ui(tr, experiment, page: str, fields: list[str]) -> pd.DataFrame | None:
    """The 'measure it yourself' section every page has: heading, the form over `fields`, and the live run."""
    st.subheader(tr("ui.live_header"))
    st.caption(tr("ui.live_intro"))
    cfg = config_form_ui(tr, experiment, page, fields)
    return run_ui(tr, experiment, cfg, page)
