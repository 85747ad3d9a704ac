"""A live run reaches the home page in the same session: its finding and its Table 1 row are computed from the rows
the learner just measured, whichever page's form ran them (live rows are kept under the experiment's name)."""

from __future__ import annotations

import pytest
from conftest import app_test

pytestmark = pytest.mark.slow  # a real (small) page-5 run in a worker process


def _home(at):
    finding = next(m.value for m in at.markdown if m.value.startswith("**Finding:**") and "minGRU" in m.value)
    table1 = next(t.value for t in at.table if "Layer type" in t.value.index.names)
    return finding, table1


def test_a_page_5_run_changes_the_home_pages_finding_and_table_1_row():
    at = app_test(default_timeout=120).run()
    finding, table1 = _home(at)
    assert "n = 8,192" in finding  # the shipped reference's longest length
    at.switch_page("pages/answers.py").run()
    at.multiselect(key="w:answers:mixers").set_value(["min_gru", "lstm", "transformer"])
    at.text_input(key="w:answers:seq_lens").set_value("16, 32")
    at.text_input(key="w:answers:long_lens").set_value("")  # no longer lengths: n = 32 is this run's longest
    at.number_input(key="w:answers:d_model").set_value(16)
    at.button(key="FormSubmitter:form:answers-Run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.switch_page("pages/home.py").run()
    assert not at.exception
    live_finding, live_table1 = _home(at)
    assert "n = 32" in live_finding and "n = 8,192" not in live_finding  # this run's longest length
    scan = next(i for i in table1.index if "scan" in i)
    cost = "Measured: cost vs n"
    assert live_table1.loc[scan, cost] != table1.loc[scan, cost]
    others = [i for i in table1.index if i.startswith(("Self-attention", "Recurrent")) and "restricted" not in i]
    assert len(others) == 3 and live_table1.loc[others].equals(table1.loc[others])  # their experiments did not run
    for absent in ("Convolutional", "Self-attention (restricted)"):  # mixers this run left out: not the reference's
        assert live_table1.loc[absent, cost] == "no result yet" != table1.loc[absent, cost]
