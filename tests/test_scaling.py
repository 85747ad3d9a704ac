"""Thread scaling: Amdahl's fit recovers known fractions, more threads that are slower are flagged rather than fitted,
every timed step ran at the thread count its row records, the takeaways follow the rows, the chart, CLI and page."""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import app_test

from core.charts import scaling as charts
from core.experiments import EXPERIMENTS, scaling
from core.findings import scaling as findings
from core.terms import status
from core.terms.i18n import LANGS, translator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTS = (1, 2, 4, 8, 16, 32, 64)


def synthetic(fractions: dict, counts=COUNTS, noise: float = 0.03, seed: int = 0, T: int = 256) -> pd.DataFrame:
    """Rows as the experiment writes them, speed-ups drawn from Amdahl's law with multiplicative noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for model, s in fractions.items():
        for p in counts:
            ideal = float(findings.amdahl(s, p))
            x = 1.0 if p == 1 else ideal * float(np.exp(rng.normal(0, noise)))
            lo, hi = (1.0, 1.0) if p == 1 else (x * (1 - noise), x * (1 + noise))
            rows.append({"model": model, "seq_len": T, "threads": p, "threads_requested": p, "train_ms": 100 / x,
                         "speedup": x, "speedup_q25": lo, "speedup_q75": hi, "efficiency": x / p, "noisy": False,
                         "status": status.OK, "device": "cpu · test · 64 threads"})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize("s", [0.0, 0.08, 0.2, 0.43, 0.71, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_fit_recovers_known_serial_fractions_within_005(s, seed):
    f = findings.fits(synthetic({"m": s}, seed=seed)).iloc[0]
    assert abs(f["serial_fraction"] - s) <= 0.05, (s, f["serial_fraction"])
    assert f["fit_points"] == len(COUNTS) - 1 and np.isfinite(f["serial_fraction_se"])
    assert f["serial_fraction_lo"] <= f["serial_fraction"] <= f["serial_fraction_hi"]


def test_the_fit_is_exact_through_two_points_with_the_quartiles_as_its_range():
    rows = synthetic({"m": 0.2}, counts=(1, 2), noise=0.0)
    rows.loc[rows["threads"] == 2, ["speedup", "speedup_q25", "speedup_q75"]] = (1.6, 1.5, 1.7)
    f = findings.fits(rows).iloc[0]
    assert f["serial_fraction"] == pytest.approx(2 / 1.6 - 1, abs=1e-6)  # s = 2/speed-up − 1
    assert np.isnan(f["serial_fraction_se"]) and f["fit_points"] == 1
    assert f["serial_fraction_lo"] == pytest.approx(2 / 1.7 - 1, abs=1e-6)
    assert f["serial_fraction_hi"] == pytest.approx(2 / 1.5 - 1, abs=1e-6)
    lines = findings.takeaways(rows, translator("en"))
    assert any("two points is weak" in x for x in lines)


def test_the_extrapolation_is_amdahl_at_the_stated_gpu_width():
    f = findings.fits(synthetic({"m": 0.1}, noise=0.0)).iloc[0]
    assert f["gpu_width"] == findings.GPU_WIDTH == 132 * 4
    assert f["gpu_speedup_extrapolated"] == pytest.approx(1 / (0.1 + 0.9 / 528), rel=1e-3)
    assert f["gpu_speedup_lo"] <= f["gpu_speedup_extrapolated"] <= f["gpu_speedup_hi"]


def test_more_threads_slower_is_flagged_and_not_fitted():
    rows = synthetic({"lstm": 0.4, "transformer": 0.1}, counts=(1, 2, 4))
    slow = (rows["model"] == "lstm") & (rows["threads"] == 4)
    rows.loc[slow, ["speedup", "speedup_q25", "speedup_q75"]] = (0.3, 0.25, 0.4)  # oversubscribed
    f = findings.fits(rows).set_index("model")
    assert f.loc["lstm", "fit_flag"] == findings.SLOWER and np.isnan(f.loc["lstm", "gpu_speedup_extrapolated"])
    assert 0 <= f.loc["lstm", "serial_fraction"] <= 1  # clamped, never nonsense
    assert f.loc["transformer", "fit_flag"] == ""
    lines = findings.takeaways(rows, translator("en"))
    assert any("slower than 1 thread, beyond the paired spread" in x for x in lines)
    fitted = next(x for x in lines if "Amdahl's law" in x)
    assert "LSTM" not in fitted and "Transformer" in fitted


def test_a_superlinear_speed_up_is_clamped_and_flagged():
    rows = synthetic({"m": 0.0}, counts=(1, 2), noise=0.0)
    rows.loc[rows["threads"] == 2, ["speedup", "speedup_q25", "speedup_q75"]] = (2.3, 2.2, 2.4)
    f = findings.fits(rows).iloc[0]
    assert f["serial_fraction"] == 0.0 and f["fit_flag"] == findings.CLAMPED


PAIR_WORDS = {
    "above": ("The Transformer (SDPA) gained more", "Transformer（SDPA）从"),
    "overlap": ("cannot tell", "分辨不出"),
    "below": ("Here the LSTM (fused) gained more", "这里 LSTM"),
}


@pytest.mark.parametrize(
    "tf, lstm, order",
    [((1.86, 1.8, 1.9), (1.40, 1.35, 1.45), "above"), ((1.5, 1.3, 1.7), (1.4, 1.35, 1.6), "overlap"),
     ((1.1, 1.05, 1.15), (1.4, 1.35, 1.45), "below")],
)  # fmt: skip
def test_the_pair_is_ordered_only_when_the_paired_ranges_are_apart(tf, lstm, order):
    rows = synthetic({"lstm": 0.4, "transformer": 0.1}, counts=(1, 2))
    for model, values in (("transformer", tf), ("lstm", lstm)):
        rows.loc[(rows["model"] == model) & (rows["threads"] == 2), ["speedup", "speedup_q25", "speedup_q75"]] = values
    assert findings.comparison(rows)["order"] == order
    for lang, words in zip(LANGS, PAIR_WORDS[order]):
        said = " ".join(findings.takeaways(rows, translator(lang)))
        assert words in said and all(w not in said for o, ws in PAIR_WORDS.items() if o != order for w in ws)


def test_takeaways_hold_for_every_prefix_and_both_languages():
    rows = synthetic({"rnn": 0.8, "lstm": 0.4, "gru": 0.7, "transformer": 0.1}, counts=(1, 2, 4))
    for lang in LANGS:
        tr = translator(lang)
        for cut in range(len(rows) + 1):
            lines = findings.takeaways(rows.iloc[:cut], tr)
            assert lines and all("«" not in x and "nan" not in x.lower() for x in lines), (cut, lines)


def test_thread_counts_double_up_to_the_top():
    assert scaling.thread_counts(1) == [1]
    assert scaling.thread_counts(2) == [1, 2]
    assert scaling.thread_counts(6) == [1, 2, 4, 6]
    assert scaling.thread_counts(8) == [1, 2, 4, 8]
    assert scaling.thread_counts(0)[-1] == scaling.physical_cores()


def test_each_timed_step_runs_at_its_thread_count_interleaved(monkeypatch):
    """Fake steps record the threads in force when called: every call at count p saw p threads, every round visits
    every (model, threads) pair, and the thread count never changes while a step runs."""
    calls = []

    def fake_prepare(name, cfg, seq_len, device):
        def step():
            calls.append((name, torch.get_num_threads()))

        return None, step, None, None

    monkeypatch.setattr(scaling, "prepared_step", fake_prepare)
    cfg = scaling.EXPERIMENT.config("quick", {"models": "lstm,transformer", "max_threads": 2, "repeats": 4,
                                              "warmup": 1})  # fmt: skip
    before = torch.get_num_threads()
    fields = scaling.measure_length(cfg, 16, ["lstm", "transformer"], [1, 2], torch.device("cpu"))
    assert torch.get_num_threads() == before
    warm, timed = calls[:4], calls[4:]
    assert sorted(warm) == [("lstm", 1), ("lstm", 2), ("transformer", 1), ("transformer", 2)]
    assert len(timed) == 4 * 4 and all(set(timed[i : i + 4]) == set(warm) for i in range(0, 16, 4))
    assert timed[0][1] != timed[4][1]  # the thread order rotates from round to round
    for (name, p), f in fields.items():
        assert f["threads"] == p == f["threads_requested"] and f["repeats"] == 4 and f["status"] == status.OK
        assert f["efficiency"] == pytest.approx(f["speedup"] / p)
    assert all(fields[(n, 1)]["speedup"] == 1.0 for n in ("lstm", "transformer"))


@pytest.fixture(scope="module")
def tiny():
    cfg = scaling.EXPERIMENT.config("quick", {"models": "lstm,transformer", "seq_lens": "8,16", "d_model": 16,
                                              "max_threads": 2, "repeats": 3, "device": "cpu"})  # fmt: skip
    progress = []
    return cfg, scaling.run(cfg, on_progress=progress.append), progress


def test_a_tiny_run_has_the_columns_statuses_and_progress(tiny):
    _, df, progress = tiny
    assert list(df.columns[: len(scaling.COLUMNS)]) == list(scaling.COLUMNS)
    assert {"device", "date", "git_commit"} <= set(df.columns)
    assert len(df) == 2 * 2 * 2 and (df["status"] == status.OK).all()
    assert set(df["threads"]) == {1, 2} and (df[df["threads"] == 1]["speedup"] == 1).all()
    assert (df["gpu_width"] == findings.GPU_WIDTH).all()
    # tiny models may well be slower on 2 threads (per-op overhead): then flagged, and no extrapolation
    assert (df["gpu_speedup_extrapolated"].isna() == (df["fit_flag"] == findings.SLOWER)).all()
    per_group = df.groupby(["model", "seq_len"])["serial_fraction"].nunique()
    assert (per_group == 1).all()  # the fit of a model at a length, in each of its rows
    assert [p.done for p in progress if p.rows] == list(range(1, len(df) + 1))
    assert any("round" in p.message for p in progress if not p.rows)
    assert EXPERIMENTS["scaling"].takeaways(df, translator("en"))


def test_another_device_gives_unsupported_rows_not_an_error(monkeypatch):
    monkeypatch.setattr(scaling, "resolve_device", lambda name: torch.device("meta"))
    cfg = scaling.EXPERIMENT.config("quick", {"models": "lstm", "seq_lens": "8", "max_threads": 2})
    df = scaling.run(cfg)
    assert (df["status"] == status.UNSUPPORTED).all() and df["train_ms"].isna().all()
    assert findings.takeaways(df, translator("en")) == [translator("en")("serial.scaling.take.none")]


@pytest.mark.parametrize("field, value", [("max_threads", "-1"), ("seq_lens", "1"), ("models", "attention")])
def test_bad_input_names_the_field(field, value):
    with pytest.raises(ValueError, match=f"^{field}:"):
        scaling.EXPERIMENT.config("quick", {field: value})


def test_the_chart_has_log2_threads_the_ideal_line_and_dashed_fits():
    rows = synthetic({"lstm": 0.4, "transformer": 0.1}, counts=(1, 2, 4)).assign(run="reference · cpu")
    spec = charts.speedup_chart(rows, translator("en")).to_dict()
    layers = spec["layer"]
    assert all(la["encoding"]["x"]["scale"] == {"type": "log", "base": 2} for la in layers if "x" in la["encoding"])

    def dashes(la) -> list:  # the dashes a layer's rows draw with, read from its legend's scale
        dash = la["encoding"].get("strokeDash")
        styles = set(pd.DataFrame(spec["datasets"][la["data"]["name"]])["style"]) if dash else ()
        return [dash["scale"]["range"][dash["scale"]["domain"].index(s)] for s in styles]

    dashed = [la for la in layers if dashes(la) == [[6, 4]]]
    assert len(dashed) == 1 and dashed[0]["encoding"]["color"]["field"] == "model"
    ideal = [la for la in layers if isinstance(la["mark"], dict) and la["mark"].get("color") == "gray"]
    assert len(ideal) == 1 and dashes(ideal[0]) == [[2, 2]]
    assert "n = 256" in spec["title"]["text"] and "extrapolation" in translator("en")("serial.scaling.chart.legend")
    table = charts.fits_table(rows, translator("en"))
    assert any("extrapolated" in c for c in table.columns) and len(table) == 2


@pytest.mark.slow
def test_cli_run_writes_the_csv_with_the_extrapolation(tmp_path):
    out = tmp_path / "scaling.csv"
    args = ["run", "scaling", "--device", "cpu", "--set", "models=lstm,transformer", "--set", "seq_lens=8",
            "--set", "d_model=16", "--set", "repeats=3", "--out", str(out)]  # fmt: skip
    r = subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(out)
    assert {"threads", "speedup", "speedup_q25", "efficiency", "gpu_speedup_extrapolated", "gpu_width"} <= set(df)
    assert "gave these speed-ups" in r.stdout  # the takeaways, computed from the rows (tiny models may not speed up)


@pytest.mark.slow
def test_the_serial_page_runs_the_scaling_section_live():
    at = app_test(default_timeout=120, revealed=False).run()  # the question unanswered, as a new visitor
    at.switch_page("pages/serial.py").run()
    assert not at.exception
    assert any(s.value == "More cores: who gets faster?" for s in at.subheader)
    at.radio(key="predict:serial.scaling").set_value(0).run()  # predict first: the results show after an answer
    at.multiselect(key="w:serial:scaling:models").set_value(["lstm", "transformer"])
    at.text_input(key="w:serial:scaling:seq_lens").set_value("8, 16")
    at.number_input(key="w:serial:scaling:d_model").set_value(16)
    at.number_input(key="w:serial:scaling:repeats").set_value(3)
    at.button(key="FormSubmitter:form:serial:scaling-Run").click().run()
    assert not at.exception and not at.error
    assert any("gave these speed-ups" in m.value for m in at.markdown)
    assert any("extrapolation" in c.value for c in at.caption)  # the chart's dashed curves, labelled
    assert at.query_params["scaling.seq_lens"] == "8,16"  # the URL reproduces the section's run
