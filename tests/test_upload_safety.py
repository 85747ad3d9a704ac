"""Issue #32, what the checks and the charts do: a long run's charts are thinned and a chart that cannot draw is a
warning; a note's captured parts are escaped for Markdown; degenerate values, values no device measures and text
where numbers belong are refused with their reason, columns typed by the experiments rather than by a shipped file;
downloads cannot hold a formula; the server's upload limit. The pages themselves: tests/test_upload_pages.py."""

import csv
import io
import re

import numpy as np
import pandas as pd
import pytest
from conftest import unescaped

from core.server import uploads
from core.store.results import REFERENCE_DIR

GPU = "cuda · ![img](http://127.0.0.1:9/x.png) [link](http://127.0.0.1:9/)"


EVIL_NOTE = "would need [link](http://127.0.0.1:9/a); budget ![img](http://127.0.0.1:9/b.png)"


MARKUP = re.compile(r"(?<!\\)\]\((?:https?|ftp):")  # a link or image that Markdown would form


def _reference(name: str) -> pd.DataFrame:
    return pd.read_csv(next(REFERENCE_DIR.glob(f"{name}-*.csv")), dtype={"git_commit": str, "note": object})


def _csv(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode()


# ---- 1 · a long run draws, and a chart that cannot draw hides nothing else ---------------------------------------


def _long_depth_rows(steps: int = 10_200) -> list[dict]:
    """A real tiny depth run's rows (one LSTM, one layer), its training rows repeated out to `steps` logged steps,
    as a page's live run keeps them (a list of row dicts)."""
    from core.experiments import depth

    cfg = depth.EXPERIMENT.config(
        "tiny", {"models": "lstm", "depths": "1", "warmup_steps": "0", "steps": "4", "log_every": "1", "device": "cpu"}
    )
    df = depth.run(cfg)
    init, train = df[df["phase"] == "init"], df[df["phase"] == "train"]
    first = train[train["step"] == train["step"].min()]  # the whole-model row and the layer's row of one step
    step = np.repeat(np.arange(1, steps + 1), len(first))
    rows = pd.concat([first] * steps, ignore_index=True).assign(step=step, loss=2.0 + 1.0 / step)
    return pd.concat([init, rows], ignore_index=True).to_dict("records")


@pytest.fixture(scope="module")
def long_rows():
    return _long_depth_rows()


def test_a_depth_run_of_10000_logged_steps_draws_thinned(long_rows):
    from core.charts import depth as charts
    from core.charts.common import MAX_ROWS
    from core.terms.i18n import translator

    df = pd.DataFrame(long_rows).assign(source="live")
    tr = translator("en")
    whole = df[(df["phase"] == "train") & df["layer"].isna()]
    assert whole["step"].nunique() >= 10_000 and len(whole) > 5_000  # over Altair's limit
    for chart in (charts.loss_chart(df, tr), charts.grad_norm_chart(df, tr), charts.grad_heatmap_chart(df, tr)):
        spec = chart.to_dict()  # raised MaxRowsError before
        (rows,) = [v for v in spec["datasets"].values()]
        assert 2 < len(rows) <= MAX_ROWS
        steps = [r["step"] for r in rows]
        assert min(steps) == 1 and max(steps) == 10_200  # the first and the last step are drawn


def test_thinning_keeps_every_row_that_is_not_ok():
    from core.charts.common import thin

    df = pd.DataFrame({"run": "a", "step": range(20_000), "status": "ok"})
    df.loc[12_345, "status"] = "diverged"
    out = thin(df, ["run"])
    assert len(out) <= 4_001 and 12_345 in out.index and {0, 19_999} <= set(out.index)


def test_a_chart_that_cannot_be_drawn_is_a_warning_and_the_rest_still_shows():
    from streamlit.testing.v1 import AppTest

    def script():
        import altair as alt
        import pandas as pd
        import streamlit as st

        from ui.data import chart_ui

        chart_ui(alt.Chart(pd.DataFrame({"x": range(6_000)})).mark_point().encode(x="x:Q"))  # over Altair's limit
        chart_ui(lambda: 1 / 0)  # a chart whose building fails
        st.download_button("Download CSV", "a,b\n", key="after")

    at = AppTest.from_function(script, default_timeout=60).run()
    assert not at.exception, at.exception
    assert len(at.warning) == 2 and all("could not be drawn" in w.value for w in at.warning)
    assert at.get("download_button")


# ---- 2 · an uploaded file's text is text -------------------------------------------------------------------------


def test_a_notes_captured_parts_are_escaped_for_markdown():
    from core.findings.notes import note_text, notes_text
    from core.terms.i18n import translator
    from ui.frame import literal

    tr = translator("en")
    plain = note_text(EVIL_NOTE, tr)
    assert MARKUP.search(plain)  # what the tooltip shows (not Markdown): the characters as they are
    shown = notes_text([EVIL_NOTE], tr, literal)[0]
    assert not MARKUP.search(shown) and "[link]" in unescaped(shown)
    huge = "would take about 3 s per step (n^2.0 from n = " + "9" * 5000 + ")"
    assert note_text(huge, tr) == tr("note.other")  # int() of 5,000 digits raised


# ---- 3 · uploaded rows are their own source ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, kind",
    [
        (lambda df: df.__setitem__("train_ms", 0.0), "implausible"),  # a GPU file of zero times
        (lambda df: df.__setitem__("model", ""), "blank_key"),
        (lambda df: df.loc.__setitem__((df.index[0], "seq_len"), None), "blank_key"),
        (lambda df: df.__setitem__("device", " "), "blank_key"),
        (lambda df: df.__setitem__("params", 1e308), "absurd"),
        (lambda df: df.loc.__setitem__((df.index[0], "ratio_q25"), -1e308), "absurd"),
    ],
    ids=["zero times", "blank model", "blank length", "blank device", "1e308", "-1e308"],
)
def test_degenerate_values_are_refused_with_their_reason(change, kind):
    df = _reference("serial")
    df["device"], df["device_type"] = "cuda · Test GPU", "cuda"
    change(df)
    outcome = uploads.check(df.to_csv(index=False).encode(), "serial-x.csv")
    assert isinstance(outcome, uploads.Rejected) and outcome.kind == kind, outcome


# ---- 4 · every file the CLI writes is accepted ---------------------------------------------------------------------


def test_a_text_column_is_typed_by_the_experiment_not_by_a_shipped_file():
    df = _reference("scaling")  # its fit_flag and note columns are empty in the shipped file: they read as numbers
    assert df["fit_flag"].isna().all() and df["note"].isna().all()
    df["fit_flag"] = ["slower"] + [None] * (len(df) - 1)
    df["note"] = [None, "stopped by the learner"] + [None] * (len(df) - 2)
    assert not isinstance(uploads.check(df.to_csv(index=False).encode(), "scaling-x.csv"), uploads.Rejected)


# ---- 5 · downloads are safe for spreadsheets -----------------------------------------------------------------------


FORMULAS = ["=HYPERLINK(\"http://127.0.0.1:9\",\"x\")", "@SUM(1+1)*cmd|' /C calc'!A0", "+cmd|' /C calc'!A0",
            "-2+3+cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]  # fmt: skip


def test_safe_cells_quotes_formulas_and_leaves_numbers():
    from core.store.spreadsheet import safe_cells

    df = pd.DataFrame({"note": [*FORMULAS, "-1.5", "ok - fine"], "train_ms": [-1.0] * 8})
    out = safe_cells(df)
    assert list(out["note"]) == [f"'{f}" for f in FORMULAS] + ["-1.5", "ok - fine"]
    assert out["train_ms"].dtype == float and (out["train_ms"] == -1.0).all()


def test_a_line_break_inside_a_cell_cannot_start_a_row_of_formulas():
    from core.store.spreadsheet import csv_text

    df = pd.DataFrame({"note": ["a\r=1+1", "b\n@SUM(1)", "c"], "seq_len": [1, 2, 3]})
    rows = list(csv.reader(io.StringIO(csv_text(df), newline="")))
    assert len(rows) == 4 and [r[0] for r in rows[1:]] == ["a\r=1+1", "b\n@SUM(1)", "c"]


# ---- 6 · bounds ----------------------------------------------------------------------------------------------------


def test_the_servers_upload_limit_is_what_a_result_file_can_be():
    import tomllib

    from conftest import ROOT

    with open(f"{ROOT}/.streamlit/config.toml", "rb") as f:
        limit_mb = tomllib.load(f)["server"]["maxUploadSize"]
    assert isinstance(limit_mb, int) and uploads.MAX_BYTES <= limit_mb * 2**20 <= 2 * uploads.MAX_BYTES


# ---- 7 · plausibility against physics --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "column, value",
    [("achieved_flops_per_s", 1e30), ("peak_flops_per_s", 5e16), ("train_ms", 1e-12), ("flops", 1e14)],
    ids=["1e30 FLOP/s", "50 PFLOP/s peak", "a 1e-12 ms step", "FLOPs / time above any device"],
)
def test_values_no_device_measures_are_refused_with_their_reason(column, value):
    df = _reference("serial")
    df["device"], df["device_type"] = "cuda · Test GPU", "cuda"
    df.loc[df["status"] == "ok", column] = value
    outcome = uploads.check(_csv(df), "serial-gpu.csv")
    assert isinstance(outcome, uploads.Rejected) and outcome.kind == "implausible", outcome
    assert ("FLOP/s" if column != "train_ms" else "ms <") in outcome.detail


def test_the_bounds_leave_every_shipped_reference_alone():
    for path in REFERENCE_DIR.glob("*.csv"):
        assert not isinstance(uploads.check(path.read_bytes(), path.name), uploads.Rejected), path.name
