"""What a visitor's session keeps once its page is drawn: no table of results.

Streamlit keeps a session (a closed tab's too, for server.disconnectedSessionTTL, 120 s by default) and with it its
widgets, and a widget keeps the functions it was given (a format_func, a callback). A function defined in a page's
script holds that script's whole namespace, so every frame the page built at top level (17,110 rows of depth data,
~12 MiB per session) stayed alive with the session: ten depth visitors grew the server by 129 MiB
(scripts/bench_memory.py). Pages hand widgets functions defined outside them (ui, core), so a drawn page leaves no
DataFrame behind.
"""

from __future__ import annotations

import gc

import pandas as pd
import pytest
from conftest import app_test

pytestmark = pytest.mark.slow  # five whole pages drawn with their reference charts


def _frames() -> list[pd.DataFrame]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, pd.DataFrame) and len(o) >= 20]


@pytest.mark.parametrize("page", ["serial", "long_range", "depth", "attention_cost", "answers"])
def test_a_drawn_page_leaves_no_table_in_its_session(page):
    at = app_test(default_timeout=120).run()
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, at.exception
    kept = [f"{len(f)} rows × {', '.join(map(str, f.columns[:4]))}…" for f in _frames()]
    assert not kept, f"the session of a drawn {page} page still holds {len(kept)} table(s): {kept[:5]}"
    del at
