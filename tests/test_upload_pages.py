"""Issue #32 through the pages: a long live run's charts, table and download; an uploaded file's text as text on
the page; the shipped references re-uploaded unchanged drawn as "uploaded" on every page, never in a verdict; every
file the CLI writes (stopped, refused, diverged) accepted and drawn; the page's download without formulas; over-long
URL values; the bounds on uploads per session."""

import csv
import io
import json

import pandas as pd
import pytest
from conftest import app_test, unescaped
from test_upload_safety import EVIL_NOTE, FORMULAS, GPU, MARKUP, _csv, _long_depth_rows, _reference

from core.server import uploads
from core.store.results import REFERENCE_DIR


def _texts(at) -> list[str]:
    """Every Markdown source the page drew: markdown, captions, alerts (their bodies are Markdown too)."""
    kinds = ("markdown", "caption", "warning", "error", "info", "success")
    return [str(e.value) for kind in kinds for e in at.get(kind)]


def _specs(at) -> list[str]:
    """Each chart drawn: its spec and the rows it was sent (Arrow tables beside the spec), as text."""
    import pyarrow as pa

    out = []
    for c in at.get("vega_lite_chart"):
        rows = [pa.ipc.open_stream(d.data.data).read_all().to_pylist() for d in c.proto.datasets]
        out.append(c.proto.spec + json.dumps(rows, ensure_ascii=False, default=str))
    return out


def _page(key: str, files=(), session: dict | None = None, lang: str = "en", timeout: float = 120):
    """Page `key` after uploading `files` ((name, bytes) pairs) in the sidebar's uploader, as a visitor would."""
    at = app_test(default_timeout=timeout)
    at.query_params["lang"] = lang
    for k, v in (session or {}).items():
        at.session_state[k] = v
    at.run()
    at.switch_page(f"pages/{key}.py").run()
    if files:
        at.file_uploader(key="upload_files").set_value([(n, data, "text/csv") for n, data in files]).run()
    return at


@pytest.fixture(scope="module")
def long_rows():
    return _long_depth_rows()


def _with_live_rows(monkeypatch, rows):
    """The page's live run returns `rows` (as ui.live hands a page its run's rows: a frame, source 'live')."""
    from ui import section

    monkeypatch.setattr(section, "run_ui", lambda *a, **k: pd.DataFrame(rows).assign(source="live"))


def test_the_depth_page_with_a_long_live_run_shows_charts_table_and_download(monkeypatch, long_rows):
    _with_live_rows(monkeypatch, long_rows)
    at = _page("depth", timeout=180)
    assert not at.exception, at.exception
    assert not at.get("warning") or not any("could not be drawn" in w.value for w in at.warning)
    specs = _specs(at)
    assert len(specs) >= 5 and any("your run" in s for s in specs)
    assert any(e.label == "Download CSV" for e in at.get("download_button"))
    assert any(m.value == "**Results table**" for m in at.markdown)  # in the section's Details


@pytest.mark.slow
def test_a_live_depth_run_of_10200_steps_finishes_with_its_charts_table_and_download(monkeypatch):
    """The issue's run (one LSTM, 2 layers, one seed, 10,200 steps), measured, then drawn. Its rows, not its
    width, are what the page must bear: each logged step writes one whole-model row and one per layer whatever the
    model's size, so the smallest task (width 8, 4 tokens, batch 1) writes the same ~15,300 rows as the quick
    preset's (width 32, 24 tokens, batch 16) in about 40% of the time (1,000 steps: 8.0 s against 20.7 s)."""
    from core.experiments import depth

    overrides = {"models": "lstm", "depths": "2", "init_depths": "2", "warmup_steps": "0", "seeds": "1",
                 "d_model": "8", "seq_len": "4", "batch_size": "1"}  # fmt: skip
    cfg = depth.EXPERIMENT.config("quick", {**overrides, "steps": "10200", "device": "cpu"})
    rows = depth.run(cfg).to_dict("records")
    assert sum(r["phase"] == "train" and pd.isna(r["layer"]) for r in rows) > 5_000  # Altair's limit: raised
    _with_live_rows(monkeypatch, rows)
    at = _page("depth", timeout=180)
    assert not at.exception, at.exception
    assert len(at.get("vega_lite_chart")) >= 5 and not any("could not be drawn" in t for t in _texts(at))
    assert any(e.label == "Download CSV" for e in at.get("download_button"))


def test_a_gpu_files_device_and_note_reach_the_page_as_text():
    serial = _reference("serial")
    serial["device"], serial["device_type"] = GPU, "cuda"
    serial.loc[serial.index[-1], ["status", "note"]] = ["skipped_memory", EVIL_NOTE]
    serial.loc[serial.index[-1], ["train_ms", "tokens_per_s", "achieved_flops_per_s", "utilization"]] = None
    at = _page("serial", [("serial-gpu.csv", _csv(serial))])
    assert not at.exception, at.exception
    texts = _texts(at)
    shown = [unescaped(t).replace("\u200b", "") for t in texts]
    assert any("Measured on a GPU (uploaded (cuda · ![img](http://127.0.0.1:9/x.png)" in t for t in shown)
    assert any("would need [link](http://127.0.0.1:9/a) against a budget of ![img]" in t for t in shown)  # the banner
    leaks = [t for t in texts if MARKUP.search(t)]
    assert not leaks, leaks


PAGES = {
    "serial": ("serial", "scaling", "checkpoint"),
    "long_range": ("long_range", "gradient_reach"),
    "depth": ("depth",),
    "attention_cost": ("attention_cost", "kv_cache"),
    "answers": ("answers_speed", "answers_decode", "answers_reach", "recall_frontier"),
}


@pytest.mark.parametrize("key", list(PAGES))
def test_the_shipped_references_reuploaded_unchanged_draw_as_uploaded(key):
    paths = [next(REFERENCE_DIR.glob(f"{name}-*.csv")) for name in PAGES[key]]
    at = _page(key, [(p.name, p.read_bytes()) for p in paths], timeout=180)
    assert not at.exception, at.exception  # raised on four of the five pages
    assert len(at.sidebar.get("success")) == len(paths) and not at.sidebar.get("error")  # each file accepted
    specs = _specs(at)
    assert any("uploaded (cpu" in s for s in specs), "no chart says 'uploaded'"
    assert any("reference (cpu" in s for s in specs)
    assert not any("could not be drawn" in t for t in _texts(at))


def _verdict(at) -> list[str]:
    return [t for t in _texts(at) if "Measured here" in t or "Reference, measured on" in t]


def test_an_upload_under_the_references_label_does_not_change_the_verdict():
    serial = _reference("serial")
    serial.loc[serial["model"] == "transformer", "train_ms"] *= 100
    before = _verdict(_page("serial"))
    after = _page("serial", [("serial-same-label.csv", _csv(serial))])
    assert after.sidebar.get("success") and any("uploaded (cpu" in s for s in _specs(after))  # drawn, apart
    after = _verdict(after)
    assert before and after == before


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    """Files `python -m core run` writes (its function, in this process) when a run stops, is refused or diverges."""
    from core import run_record
    from core.experiments import long_range as lr

    folder = tmp_path_factory.mktemp("cli")
    mp = pytest.MonkeyPatch()
    out = {}
    try:
        path = out["nothing"] = folder / "serial-nothing.csv"  # a --time-limit reached before the first point
        with pytest.raises(run_record.TimeLimit):
            run_record.run_one("serial", "tiny", "cpu", None, {}, path, quiet=True, time_limit=1e-3)
        path = out["stopped"] = folder / "serial-stopped.csv"  # a --time-limit reached after the first points
        mp.setenv(run_record.INJECT_ENV, "serial=hang")
        with pytest.raises(run_record.TimeLimit):
            run_record.run_one("serial", "tiny", "cpu", None, {}, path, quiet=True, time_limit=2.0)
        path = out["failed"] = folder / "serial-failed.csv"  # a run that failed: its error in the status row's note
        mp.setenv(run_record.INJECT_ENV, "serial=error")
        with pytest.raises(run_record.RunFailed):
            run_record.run_one("serial", "tiny", "cpu", None, {}, path, quiet=True)
        mp.delenv(run_record.INJECT_ENV)
        path = out["refused"] = folder / "attention_cost-refused.csv"  # the guard refuses n = 2M: no allocation
        sets = {"impls": "naive", "backends": "auto", "seq_lens": "16,2097152"}
        run_record.run_one("attention_cost", "tiny", "cpu", None, sets, path, quiet=True)
        real = lr.build_model

        def poisoned(name, cfg, V, impl="sdpa"):  # the LSTM's loss is NaN from its first step
            import torch

            model = real(name, cfg, V, impl)
            if name == "lstm":
                with torch.no_grad():
                    model.head.bias.fill_(float("nan"))
            return model

        mp.setattr(lr, "build_model", poisoned)
        path = out["diverged"] = folder / "long_range-diverged.csv"
        sets = {"models": "lstm,transformer", "distances": "2", "seq_len": "8", "steps": "4", "eval_every": "2"}
        run_record.run_one("long_range", "quick", "cpu", None, sets, path, quiet=True)
    finally:
        mp.undo()
    return out


def test_every_file_the_cli_writes_is_accepted(cli_files):
    seen = set()
    for case, path in cli_files.items():
        df = pd.read_csv(path)
        seen |= set(df["status"])
        assert df["note"].notna().any(), f"{case}: no row with a note"  # what the shipped-type rule refused
        outcome = uploads.check(path.read_bytes(), path.name)
        assert not isinstance(outcome, uploads.Rejected), (case, outcome)
    assert {"stopped", "skipped_memory", "diverged", "ok"} <= seen


@pytest.mark.parametrize(
    "case, key", [("stopped", "serial"), ("refused", "attention_cost"), ("diverged", "long_range")]
)
def test_a_cli_file_with_status_rows_draws_on_its_page(cli_files, case, key):
    path = cli_files[case]
    at = _page(key, [(path.name, path.read_bytes())])
    assert not at.exception, at.exception
    assert at.sidebar.get("success") and not at.sidebar.get("error")


def test_the_pages_download_quotes_an_uploads_formulas(monkeypatch):
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    files = {}
    real = MemoryMediaFileStorage.load_and_get_id

    def kept(self, path_or_data, mimetype, kind, filename=None):  # what each download button would send
        files[filename] = path_or_data
        return real(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", kept)
    serial = _reference("serial")
    serial["device"], serial["device_type"] = "cuda · Test GPU", "cuda"
    serial["note"] = (FORMULAS * len(serial))[: len(serial)]
    serial.loc[serial.index[0], "git_commit"] = '=HYPERLINK("http://127.0.0.1:9")'
    data = serial.to_csv(index=False, quoting=csv.QUOTE_ALL).encode()  # a carriage return inside a cell stays in it
    at = _page("serial", [("serial-formulas.csv", data)])
    assert at.sidebar.get("success"), [e.value for e in at.sidebar.get("error")]
    assert not at.exception, at.exception
    data = files["serial.csv"]
    cells = pd.read_csv(
        io.BytesIO(data if isinstance(data, bytes) else data.encode()), dtype=str, keep_default_na=False
    )
    assert (cells["device"] == "cuda · Test GPU").any()  # the upload is in the download
    runs = [v for col in cells for v in cells[col] if v[:1] in ("=", "+", "@", "\t", "\r")]
    runs += [v for col in cells for v in cells[col] if v.startswith("-") and not _number(v)]
    assert not runs, runs[:5]
    assert {f"'{f}" for f in FORMULAS} <= set(cells["note"])  # kept, as text


def _number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def test_a_prediction_of_thousands_of_digits_in_the_url_is_ignored():
    at = app_test(revealed=False)
    at.query_params["predict.depth"] = "1" * 5000  # int() of it raised Python's integer-string limit
    at.run()
    at.switch_page("pages/depth.py").run()
    assert not at.exception, at.exception
    assert at.session_state["predict:depth"] is None  # not an answer: the question stays open


def test_a_form_value_of_thousands_of_characters_in_the_url_is_one_message_naming_the_field():
    at = app_test()
    at.query_params["steps"] = "9" * 5000
    at.query_params["depths"] = ",".join(["2"] * 3000)
    at.run()
    at.switch_page("pages/depth.py").run()
    assert not at.exception, at.exception
    (error,) = [e.value for e in at.error]
    assert "depths" in unescaped(error) or "steps" in unescaped(error)
    assert "at most 300" in unescaped(error)


def test_uploads_per_session_are_bounded_in_count_and_size_and_each_is_checked_once(monkeypatch):
    calls = []
    real = uploads.check
    monkeypatch.setattr(uploads, "check", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    monkeypatch.setattr(uploads, "MAX_FILES", 3)
    serial = next(REFERENCE_DIR.glob("serial-*.csv")).read_bytes()
    files = [(f"serial-{i}.csv", serial) for i in range(5)]
    at = _page("serial", files)
    assert not at.exception, at.exception
    assert len(at.sidebar.get("success")) == 3
    refused = [e.value for e in at.sidebar.get("error")]
    assert len(refused) == 2 and all("keeps at most 3 files" in unescaped(e) for e in refused)
    at.run()  # a rerun (any widget) parses nothing again
    assert not at.exception and sorted(calls) == [f"serial-{i}.csv" for i in range(3)]
    monkeypatch.setattr(uploads, "MAX_SESSION_BYTES", len(serial) + 1)  # a second session, limited by size
    at = _page("serial", files[:2])
    assert len(at.sidebar.get("success")) == 1 and len(at.sidebar.get("error")) == 1
