"""A shared host: memory that levels off, damaged shipped files contained, a Stop that frees the lock at once,
and what a link or a learner types shown back as text."""

import gc
import os
import shutil

import pytest
import torch
from conftest import app_test
from streamlit.testing.v1 import AppTest

from core.config import make_config
from core.experiments import attention_cost, long_range, serial
from core.harness import cancel
from core.harness.bench import LivePeak, saved_activation_bytes, time_interleaved
from core.harness.device import MEASURE_LOCK, measuring
from core.harness.heap import return_freed_memory
from core.offline import checkpoints
from core.store import files, results
from ui.frame import literal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _live_tensors() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, torch.Tensor))


# ---- memory ---------------------------------------------------------------------------------------------------
def test_counting_saved_bytes_keeps_no_tensor_alive():
    q = torch.randn(1, 2, 64, 8, requires_grad=True)

    def forward():  # softmax saves its own output: the case that leaked
        return (q @ q.transpose(-1, -2)).softmax(-1) @ q

    saved_activation_bytes(forward, exclude=(q,))
    before = _live_tensors()
    for _ in range(3):
        assert saved_activation_bytes(forward, exclude=(q,)) >= 2 * 64 * 64 * 4  # the saved n² probabilities
        with LivePeak(exclude=(q,)):
            forward().sum().backward()
    assert _live_tensors() <= before + 1  # q.grad


@pytest.mark.slow
def test_repeated_runs_keep_no_tensor_alive():
    """Run the attention sweep (naive attention's n² tensors) five times in one process, as a page's live run does
    (it returns freed memory after each run): no run leaves a tensor behind, so nothing a run allocated can pile up.
    (What the heap then holds, RSS run after run, depends on the allocator's history, not on the code:
    scripts/bench_fresh_memory.py prints it.)"""
    cfg = attention_cost.EXPERIMENT.config(
        "quick", {"impls": "naive,sdpa", "seq_lens": "512,1024", "device": "cpu", "repeats": 3}
    )
    alive = []
    for _ in range(5):
        attention_cost.run(cfg)
        return_freed_memory()
        alive.append(_live_tensors())
    assert alive[-1] <= alive[1], alive


class _FakeLibc:
    """glibc's malloc controls as heap.freed_memory_reused calls them, recorded."""

    def __init__(self):
        self.calls = []

    def mallopt(self, param, value):
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad):
        self.calls.append(("trim", pad))
        return 1


def test_timed_steps_reuse_freed_memory_and_hand_it_back_after(monkeypatch):
    """Entering the outermost freed_memory_reused raises glibc's mmap and trim thresholds (freed blocks stay in the
    heap for the next step); a nested one changes nothing; leaving the outermost sets them back to where glibc's
    dynamic ones end and hands the free pages back. Checked on the calls themselves; what the real heap then does,
    page faults and MiB handed back, scripts/bench_fresh_memory.py prints."""
    from core.harness import heap

    fake = _FakeLibc()
    monkeypatch.setattr(heap, "_libc", lambda: fake)
    with heap.freed_memory_reused():
        entered = list(fake.calls)
        with heap.freed_memory_reused():
            pass
        assert fake.calls == entered  # the nested one did nothing, entering or leaving
    timing = [("mallopt", p, v) for p, v in heap._TIMING]
    steady = [("mallopt", p, v) for p, v in heap._STEADY]
    assert entered == timing and fake.calls == timing + steady + [("trim", 0)]
    assert all(v == 2**31 - 1 for _, v in heap._TIMING) and dict(heap._STEADY)[heap._M_MMAP_THRESHOLD] == 32 << 20


# ---- damaged files --------------------------------------------------------------------------------------------
def _damage(path, how: str) -> None:
    data = path.read_bytes()
    if how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "junk":
        path.write_bytes(b"\x00\xffnot a file of ours\x01" * 50)
    elif how == "wrong_type":
        torch.save([1, 2, 3], path) if path.suffix == ".pt" else path.write_text('{"a": 1}\n')


@pytest.mark.parametrize("how", ["empty", "truncated", "junk", "wrong_type"])
def test_a_damaged_checkpoint_is_one_problem(tmp_path, how):
    for name in checkpoints.MODELS:
        shutil.copy(checkpoints.path_for(name), checkpoints.path_for(name, tmp_path))
    _damage(checkpoints.path_for("transformer", tmp_path), how)
    with pytest.raises(files.DamagedFile) as err:
        checkpoints.load("transformer", tmp_path)
    expected = {"empty": "empty", "truncated": "truncated", "junk": "unreadable", "wrong_type": "wrong_kind"}
    assert err.value.problem.kind == expected[how] and err.value.problem.file == "transformer_recall.pt"
    _model, meta = checkpoints.load("lstm", tmp_path)  # the other one still loads
    assert meta["n_keys"] >= 2


def test_a_checkpoint_of_another_shape_is_refused(tmp_path):
    blob = torch.load(checkpoints.path_for("lstm"), weights_only=True)
    blob["meta"]["d_model"] *= 2  # the weights no longer fit the model the meta describes
    torch.save(blob, checkpoints.path_for("lstm", tmp_path))
    with pytest.raises(files.DamagedFile) as err:
        checkpoints.load("lstm", tmp_path)
    assert err.value.problem.kind == "wrong_kind" and "size mismatch" in err.value.problem.detail


def test_a_csv_cut_mid_row_loses_that_row_only(tmp_path):
    src = next(results.REFERENCE_DIR.glob("serial-*.csv"))
    whole, problem = results.load_csv(src)
    assert problem is None
    text = src.read_text()
    (tmp_path / "serial-cpu-x.csv").write_text(text[: text.rstrip("\n").rfind("\n") + 30])
    cut, problem = results.load_csv(tmp_path / "serial-cpu-x.csv", ("device",))
    assert problem.kind == "cut_row" and len(cut) == len(whole) - 1
    assert cut["model"].notna().all()


@pytest.mark.parametrize("how", ["empty", "truncated", "junk", "wrong_type"])
def test_a_damaged_reference_costs_one_message(tmp_path, how):
    src = next(results.REFERENCE_DIR.glob("serial-*.csv"))
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    _damage(dst, how)
    df, problems = results.load_reference("serial", folder=tmp_path)
    assert len(problems) == 1
    if how == "truncated":  # cut in the middle: the rows before the cut are kept
        assert problems[0].kind in ("cut_row", "unreadable") and len(df) < len(pd_read(src))
    else:
        assert problems[0].kind == {"empty": "empty", "junk": "unreadable", "wrong_type": "wrong_kind"}[how]
        assert not len(df)


def pd_read(path):
    import pandas as pd

    return pd.read_csv(path)


APP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dashboard.py")


def _open(page: str, query: dict | None = None) -> AppTest:
    """The app opened at `page` (in English), with `query` as the link's parameters."""
    at = app_test(default_timeout=120)
    at.query_params["lang"] = "en"
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    at.switch_page(page).run()
    return at


PAGE_FILES = {"serial": "serial", "long_range": "long_range", "depth": "depth", "attention_cost": "attention_cost"}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["junk", "wrong_type"])
@pytest.mark.parametrize("page", list(PAGE_FILES))
def test_a_page_with_a_damaged_reference_shows_one_warning_and_works(tmp_path, monkeypatch, page, how):
    for src in results.REFERENCE_DIR.glob("*.csv"):
        shutil.copy(src, tmp_path / src.name)
    damaged_files = sorted(tmp_path.glob(f"{PAGE_FILES[page]}-*.csv"))
    for damaged in damaged_files:
        _damage(damaged, how)
    monkeypatch.setattr(results, "REFERENCE_DIR", tmp_path)
    at = _open(f"pages/{page}.py")
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning if "could not be used" in w.value]
    assert len(warnings) == len(damaged_files), warnings  # one per damaged file (long_range ships two)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["empty", "truncated", "junk", "wrong_type"])
def test_the_long_range_page_without_a_whole_checkpoint_still_works(tmp_path, monkeypatch, how):
    for name in checkpoints.MODELS:
        shutil.copy(checkpoints.path_for(name), checkpoints.path_for(name, tmp_path))
    _damage(checkpoints.path_for("transformer", tmp_path), how)
    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", tmp_path)
    at = _open("pages/long_range.py")
    assert not at.exception, at.exception
    assert [w.value for w in at.warning if "transformer\\_recall\\.pt" in w.value]
    assert len(at.get("vega_lite_chart")) >= 2  # the gradient-reach and training charts are drawn


@pytest.fixture(autouse=True)
def _fresh_caches():
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


# ---- Stop -----------------------------------------------------------------------------------------------------
def _stop_on_look(run, looks_before_stop: int = 4) -> list:
    """Run `run(on_progress)` holding the measurement lock, its Stop set to come true the `looks_before_stop`-th time
    the harness looks at it (`cancel.check()`). The run must end at that very look (no look after it: nothing more
    was measured once Stop was seen), free the lock, and propagate `Stopped`. Returns the progress reports."""
    looks, reports = [], []

    def stop_now() -> bool:
        looks.append(1)
        return len(looks) >= looks_before_stop

    with pytest.raises(cancel.Stopped), measuring(), cancel.stop_when(stop_now):
        run(reports.append)
    assert len(looks) == looks_before_stop  # it ended at the first look after the Stop
    assert not MEASURE_LOCK.locked()
    return reports


def test_stop_during_a_long_timed_point_ends_it_between_repeats():
    """One point of 200 repeats: the Stop is seen between its repeats, before the point ends (no row reported), so
    a Stop waits for at most one repeat of each model, not for the point."""
    cfg = make_config(
        serial.SerialConfig,
        {"models": "lstm,transformer", "seq_lens": "512", "repeats": 200, "max_point_s": 600, "device": "cpu"},
        base=serial.EXPERIMENT.config("quick"),
    )
    reports = _stop_on_look(lambda on_progress: serial.run(cfg, on_progress), looks_before_stop=6)
    assert all(r.done == 0 for r in reports)  # still inside the first (and only) point


def test_stop_during_training_ends_it_between_steps():
    """5,000 steps with one evaluation at the end: the Stop is seen between training steps (the 4th look is the
    4th step), not at an evaluation or the end of the run, and no row was reported."""
    cfg = long_range.EXPERIMENT.config("quick", {"steps": 5000, "eval_every": 5000, "device": "cpu"})
    reports = _stop_on_look(lambda on_progress: long_range.run(cfg, on_progress))
    assert not any(r.rows for r in reports)


def test_the_timing_loop_checks_for_stop_between_repeats():
    calls = []
    with pytest.raises(cancel.Stopped), cancel.stop_when(lambda: len(calls) >= 3):
        time_interleaved({"a": lambda: calls.append(1)}, warmup=0, repeats=100)
    assert len(calls) == 3


@pytest.mark.slow
def test_a_link_sets_only_the_fields_the_form_shows(monkeypatch):
    import ui.section

    seen = {}

    def capture(tr, experiment, cfg, page, preview=None):
        if cfg is not None and page == "serial":
            seen["cfg"] = cfg

    monkeypatch.setattr(ui.section, "run_ui", capture)  # the run a section starts (ui.section.section_ui)
    at = _open("pages/serial.py", {"repeats": "200", "max_point_s": "600", "d_model": "32", "seed": "7"})
    at.button(key="FormSubmitter:form:serial-Run").click().run()
    quick = serial.EXPERIMENT.config("quick")
    cfg = [c for c in [seen.get("cfg")] if c is not None]
    assert cfg, "the form did not submit"
    assert (cfg[0].d_model, cfg[0].seed) == (32, 7)
    assert (cfg[0].repeats, cfg[0].max_point_s) == (quick.repeats, quick.max_point_s)


# ---- input stays text -----------------------------------------------------------------------------------------
def test_text_shown_back_is_escaped_and_cut():
    evil = "![x](http://host/p.png) [click](http://host/login) <b>x</b> www.host.com " + "z" * 10_000
    out = literal(evil)
    assert len(out.replace("\\", "").replace("\u200b", "")) <= 200
    for fragment in ("![", "](", "<b>", "http:", "www."):
        assert fragment not in out


@pytest.mark.parametrize("value", ["٣٢", "３２", "1_000", "３.５"])
def test_numbers_are_read_from_ascii_digits_only(value):
    with pytest.raises(ValueError, match="d_model"):
        make_config(serial.SerialConfig, {"d_model": value})


def test_a_long_bad_value_is_not_echoed_whole():
    with pytest.raises(ValueError) as err:
        make_config(serial.SerialConfig, {"d_model": "x" * 100_000})
    assert len(str(err.value)) < 200


@pytest.mark.slow
def test_damaged_text_checkpoints_cost_their_section_not_the_page(tmp_path, monkeypatch):
    from core.workloads import text_lm

    for name in text_lm.models():
        for seed in text_lm.SEEDS:
            text_lm.path_for(name, seed, tmp_path).write_bytes(os.urandom(4096))
    monkeypatch.setattr(text_lm, "CHECKPOINT_DIR", tmp_path)
    at = _open("pages/long_range.py", {"predict.long_range.text": "show"})
    assert not at.exception, at.exception
    errors = [e.value for e in at.error if "text\\_" in e.value and ".pt" in e.value]
    assert errors, [e.value for e in at.error]
    assert len(at.get("vega_lite_chart")) >= 2  # the sections that need no text model are drawn
