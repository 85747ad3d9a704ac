"""The one import point for pages (`from ui import common as ui`): every helper they use, re-exported from the
modules that answer one question each, plus the NAVIGATION_READY flag dashboard.py sets and the lazy `ui.pd`.

- ui.frame: language, device card, warm-up, the page list, page_ui, method_ui;
- ui.form: an experiment's config as a form, round-tripping through the URL;
- ui.live: the live run with progress and Stop;
- ui.predict: the predict-first question that hides the results until answered, and the computed verdict;
- ui.data: reference and live data, status banner, takeaways, table and charts with export.

A page reads: claim → predict first → reference results at once → Run (live) → takeaways → method → table.
Helpers that draw widgets end in `_ui`; all computation lives in `core`. Importing this module imports neither
torch nor pandas (the home page's cold start skips both).
"""

from __future__ import annotations

from ui.data import (
    caption_source_ui,
    chart_ui,
    file_problem_ui,
    gpu_reference,
    gpu_reference_rows,
    latest_rows,
    reference_ui_data,
    shown_data,
    status_ui,
    table_ui,
    takeaways_ui,
    yes_no,
)
from ui.form import config_form_ui
from ui.frame import (
    LANG_NAMES,
    PAGES,
    WARM_UP_MODULES,
    current_lang,
    device_card_ui,
    has_key,
    language_ui,
    literal,
    method_ui,
    page_ui,
    warm_up_torch,
)
from ui.live import live_run_ui, run_ui
from ui.predict import predict_ui, revealed_now, tally_rows, verdict_ui

__all__ = [
    "LANG_NAMES",
    "NAVIGATION_READY",
    "PAGES",
    "WARM_UP_MODULES",
    "caption_source_ui",
    "chart_ui",
    "config_form_ui",
    "current_lang",
    "device_card_ui",
    "file_problem_ui",
    "gpu_reference",
    "gpu_reference_rows",
    "has_key",
    "language_ui",
    "latest_rows",
    "literal",
    "live_run_ui",
    "method_ui",
    "page_ui",
    "predict_ui",
    "reference_ui_data",
    "revealed_now",
    "run_ui",
    "shown_data",
    "status_ui",
    "table_ui",
    "takeaways_ui",
    "tally_rows",
    "verdict_ui",
    "warm_up_torch",
    "yes_no",
]

# Set by dashboard.py once it has built the navigation (`ui.NAVIGATION_READY = True` on this module). Until some
# session has run dashboard.py, Streamlit serves a deep link (/serial) from the pages/ folder directly (its old
# multipage mode), skipping the language switch and our navigation; a page that finds this flag unset reruns, and
# the rerun goes through dashboard.py. It lives here, not in ui.frame, because this is the module dashboard.py
# assigns to; ui.frame.page_ui reads it from here at call time.
NAVIGATION_READY = False


def __getattr__(name: str):
    """`ui.pd` for pages, imported on first use: pandas costs ~0.5 s, which the home page's cold start skips."""
    if name == "pd":
        import pandas

        return pandas
    raise AttributeError(name)
