"""The one import point for pages (`from ui import common as ui`): every helper they use, re-exported from the
modules that answer one question each, plus the page frame (`page_ui`), the NAVIGATION_READY flag dashboard.py sets
and the lazy `ui.pd`. It sits above the other ui modules (each says its one job; CONTRIBUTING.md lists them) and
none of them imports it. Helpers that draw widgets end in `_ui`; all computation lives in `core`. Importing this
module imports neither torch nor pandas (the home page's cold start skips both).
"""
# ruff: noqa: F401 (every import is here for the pages: `ui.<name>`, checked by tests/test_ui_split.py)

from __future__ import annotations

import streamlit as st

from core.terms.i18n import translator
from ui.data import (
    chart_ui,
    file_problem_ui,
    gpu_reference_rows,
    labelled,
    latest_rows,
    reference_rows,
    reference_ui_data,
    shown_data,
    status_ui,
    table_ui,
    takeaways_ui,
    yes_no,
)
from ui.form import pick_ui
from ui.frame import (
    PAGES,
    current_lang,
    device_card_ui,
    has_key,
    heading_ui,
    language_ui,
    literal,
    method_ui,
    warm_up_torch,
)
from ui.live import run_ui
from ui.predict import answered, open_gate, predict_ui, revealed_now, tally_rows
from ui.section import Section, both, register, section_ui, sections_ui
from ui.upload import upload_ui

# Set by dashboard.py once it has built the navigation (`ui.NAVIGATION_READY = True` on this module). Until some
# session has run dashboard.py, Streamlit serves a deep link (/serial) from the pages/ folder directly (its old
# multipage mode), skipping the language switch and our navigation; a page that finds this flag unset reruns, and
# the rerun goes through dashboard.py. page_ui, below, reads it at call time.
NAVIGATION_READY = False


def page_ui(page: str):
    """Title, claim, and the sidebar's device card; returns the page's translator."""
    if not NAVIGATION_READY:
        # Calling st.navigation switches Streamlit out of its old pages/-folder mode for the whole server;
        # the rerun then goes through dashboard.py and lands on this same page by its URL.
        # (A page's identity is its URL path; home must be the default so /serial keeps its own.)
        st.navigation(
            [st.Page("pages/home.py", default=True)] + [st.Page(path, url_path=key) for key, path in PAGES],
            position="hidden",
        )
        st.rerun()
    open_gate()  # nothing is hidden until the page asks its question (ui.predict)
    tr = translator(st.session_state.get("lang") or current_lang())
    st.title(tr(f"{page}.title"))
    st.markdown(tr(f"{page}.claim"))
    if has_key(
        f"{page}.glossary", st.session_state.get("lang") or current_lang()
    ):  # the terms a learner meets on this page, explained once, on demand
        with st.popover(tr("ui.glossary"), icon=":material/menu_book:"):
            st.markdown(tr(f"{page}.glossary"))
    device_card_ui(tr)
    if page != "home":  # the home page starts from its shipped summary, torch-free; files are added on the pages
        upload_ui(tr)
    return tr


def __getattr__(name: str):
    """`ui.pd` for pages, imported on first use: pandas costs ~0.5 s, which the home page's cold start skips."""
    if name == "pd":
        import pandas

        return pandas
    raise AttributeError(name)
