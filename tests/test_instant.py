"""Each page's instant view (core.mechanism): its numbers against their source — the reference rows, the exact
formula, or a fresh computation at one point — its charts valid in both languages, and it waits for the answer."""

import math

import altair as alt
import numpy as np
import pandas as pd
import pytest
from conftest import app_test

from core.charts import mechanism as charts
from core.experiments import long_range as long_range_experiment
from core.findings import long_range as long_range_findings
from core.harness import roofline
from core.mechanism import answers, attention_cost, depth, long_range, serial
from core.store.results import load_reference
from core.terms.i18n import translator


def reference(name: str) -> pd.DataFrame:
    rows, problems = load_reference(name)
    assert not problems, problems
    device = rows["device"].iloc[0]
    return rows[rows["device"] == device]


def valid(chart) -> dict:
    """The chart's spec, checked against Vega-Lite's schema (the page builds it unchecked, for speed)."""
    spec = chart.to_dict(validate=True)
    assert charts.spec(chart) == {**spec, "usermeta": {"instant": True}}
    return spec


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_view_draws_a_valid_chart_and_its_sentences(lang):
    tr = translator(lang)
    rows = reference("serial")
    n = serial.lengths(rows)[-1]
    frame = serial.chain(rows, n)
    valid(charts.chain_chart(frame, n, tr))
    assert len(serial.lines(frame, serial.gpu_busy(rows, n), n, tr)) == 3
    reach = long_range.reach(reference("gradient_reach"))
    valid(charts.reach_chart(reach, 800, tr))
    assert long_range.lines(reach, long_range.trained(reference("long_range"), 800), 800, tr)
    layers = depth.layers(reference("depth"), 8)
    valid(charts.layers_chart(layers, 8, tr))
    assert depth.lines(layers, 8, tr)
    bars = attention_cost.bars(4096, 12, 12)
    valid(charts.bytes_chart(bars, 16 * 2**30, tr))
    assert len(attention_cost.lines(bars, 4096, 12, 12, 16 * 2**30, tr)) == 3
    valid(charts.levels_chart(answers.levels(4096), 4096, tr))
    valid(charts.tree_chart(16, tr))


# ---- page 1: each bar is the measured step; the GPU share is the roofline's ---------------------------------------
def test_serial_chain_is_the_measured_step_cut_into_its_dependent_steps():
    rows = reference("serial")
    for n in serial.lengths(rows):
        frame = serial.chain(rows, n)
        for model, g in frame.groupby("model"):
            row = rows[(rows["model"] == model) & (rows["seq_len"] == n) & (rows["status"] == "ok")].iloc[-1]
            assert g["end_ms"].max() == pytest.approx(row["train_ms"])  # the bar is the measured step
            assert len(g) == min(int(row["seq_steps"]), serial.DRAWN)
            assert (g["steps"] == row["seq_steps"]).all()
        steps = frame.groupby("model")["steps"].first()
        assert steps["lstm"] == n and steps["transformer"] == 1  # n dependent steps against one


def test_serial_gpu_share_is_compute_time_over_the_roofline_time():
    rows = reference("serial")
    busy = serial.gpu_busy(rows, 1024).set_index("model")
    hw = roofline.DATACENTRE_GPU
    for model in ("lstm", "transformer"):
        row = rows[(rows["model"] == model) & (rows["seq_len"] == 1024) & (rows["status"] == "ok")].iloc[-1]
        compute = row["flops"] / hw.peak_flops_per_s
        expected = compute / max(compute, row["seq_steps"] * hw.step_latency_s)
        assert busy.loc[model, "busy"] == pytest.approx(expected)
        assert 0 < busy.loc[model, "busy"] <= 1  # a share of a peak never exceeds 100%
    assert busy.loc["lstm", "busy"] < busy.loc["transformer", "busy"]


# ---- page 2: the reach rows as shipped; trained recall at the chapter's distance ---------------------------------
def test_reach_values_are_the_reference_rows():
    rows = reference("gradient_reach")
    frame = long_range.reach(rows)
    for d in (1, 36, 100, 800, 999):
        values = long_range.at(frame, d)
        for model in long_range.SHOWN:
            row = rows[(rows["model"] == model) & (rows["distance"] == d)].iloc[0]
            assert values[model] == row["relative"]
    # through a recurrence the gradient underflows float32 long before 800; attention's does not shrink
    for model in ("rnn", "lstm"):
        assert long_range.first_zero(frame, model) < long_range_experiment.FAR
    assert long_range.first_zero(frame, "attention") is None
    assert long_range.at(frame, 800)["attention"] > 0.1


def test_the_reference_answers_at_the_chapters_distance():
    rows = reference("long_range")
    far = long_range.trained(rows, long_range_experiment.FAR)
    assert len(far) == 2 and set(far["distance"]) == {long_range_experiment.FAR}
    stats = long_range_findings.by_distance(rows)
    for r in far.itertuples():
        same = stats[(stats["task"] == "recall") & (stats["model"] == r.model) & (stats["distance"] == r.distance)]
        assert r.accuracy == same["accuracy"].iloc[0] and r.seeds >= 2
    acc = far.set_index("model")["accuracy"]
    assert acc["transformer"] >= 0.9  # attention reaches "Alice" from "she" 800 tokens later
    assert acc["lstm"] <= 2 * far["chance"].iloc[0]  # the LSTM stays near chance at the same steps


# ---- page 3: each layer's gradient as shipped ---------------------------------------------------------------------
def test_depth_view_reads_each_layers_gradient_from_the_rows():
    rows = reference("depth")
    assert depth.depths(rows)[-1] == 64
    frame = depth.layers(rows, 8)
    assert sorted(frame["model"].unique()) == sorted(depth.SHOWN)
    init = rows[(rows["phase"] == "init") & (rows["n_layers"] == 8) & (rows["seed"] == 0)]
    for model, ratio in depth.ratios(frame).items():
        g = init[init["model"] == model].set_index("layer")["grad_norm"]
        assert ratio == pytest.approx(g[1.0] / g[8.0])
    ratios = depth.ratios(frame)
    assert ratios["lstm"] < 1e-3 and ratios["lstm_residual"] > 0.5  # the plain stack fades; the residual one does not


# ---- page 4: exact bytes, written out by hand --------------------------------------------------------------------
@pytest.mark.parametrize("n, heads, layers", [(128, 1, 1), (4096, 12, 12), (131072, 32, 80)])
def test_attention_bytes_are_the_exact_formulas(n, heads, layers):
    b = attention_cost.bars(n, heads, layers).set_index("what")["bytes"]
    d = attention_cost.HEAD_DIM
    assert b["scores"] == layers * heads * n * n * 4  # fp32 probabilities, n × n per head and layer
    assert b["fused"] == layers * heads * n * (d * 4 + 4)  # the output and one fp32 log-sum-exp per row
    for scheme, kv_heads in (("mha", heads), ("gqa", max(1, heads // 4)), ("mqa", 1)):
        assert b[f"kv_{scheme}"] == 2 * layers * kv_heads * d * n * 2  # K and V, bf16
    doubled = attention_cost.bars(2 * n, heads, layers).set_index("what")["bytes"]
    assert doubled["scores"] / b["scores"] == 4 and doubled["fused"] / b["fused"] == 2  # n² against n


def test_attention_wall_names_only_what_does_not_fit():
    frame = attention_cost.bars(65536, 32, 32)
    fits = attention_cost.wall(frame, 2**30)
    b = frame.set_index("what")["bytes"]
    assert fits == {w: bool(b[w] <= 2**30) for w in b.index} and not fits["scores"] and fits["kv_mqa"]
    lines = attention_cost.lines(frame, 65536, 32, 32, 2**30, translator("en"))
    assert "n × n" in lines[-1]


# ---- page 5: the counts, and a scan that the drawn tree really computes ------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 7, 8, 1000, 4096, 65536])
def test_levels_are_the_formulas(n):
    lv = answers.levels(n).set_index("form")["levels"]
    assert lv["loop"] == n and lv["chunked"] == math.ceil(n / answers.CHUNK)
    assert lv["scan"] == 2 * max(1, math.ceil(math.log2(max(n, 2))))


@pytest.mark.parametrize("n", [2, 5, 8, 16])
def test_the_drawn_tree_computes_the_prefix_sums(n):
    """Replaying the drawn combines (Blelloch's up-sweep, then the down-sweep from a zeroed root) on random numbers
    gives the exclusive prefix sums, in 2·log₂ n levels."""
    t = answers.tree(n)
    size = 1 << math.ceil(math.log2(n))
    x = np.random.default_rng(0).integers(0, 100, size)
    a = x.copy()
    for r in t[t["sweep"] == "up"].itertuples():
        a[r.to] += a[r._4]  # `from` is a keyword: its column is field 4
    a[-1] = 0
    for r in t[t["sweep"] == "down"].itertuples():
        left, right = r.to, r._4
        a[left], a[right] = a[right], a[right] + a[left]
    assert (a == np.concatenate([[0], np.cumsum(x)[:-1]])).all()
    assert t["level"].max() == 2 * int(math.log2(size))
    assert (t["sweep"] == "up").sum() == size - 1  # work-efficient: n − 1 combines each way


# ---- the views wait for the answer -------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("page, key", [("pages/depth.py", "depth"), ("pages/attention_cost.py", "attention_cost")])
def test_a_view_waits_for_the_answer(page, key):
    def slider_keys(at):
        return [s.key for s in list(at.slider) + list(at.select_slider) if s.key and s.key.startswith("instant:")]

    at = app_test(default_timeout=90, revealed=False).run()
    at.switch_page(page).run()
    assert not at.exception and not slider_keys(at)
    shown = app_test(default_timeout=90, revealed=False)
    shown.query_params[f"predict.{key}"] = "show"
    shown.run()
    shown.switch_page(page).run()
    assert not shown.exception and slider_keys(shown)


def test_every_chart_type_is_altair():
    assert isinstance(charts.tree_chart(4, translator("en")), alt.LayerChart)


def test_the_reference_device_is_the_fullest_run_of_its_kind():
    from core.store.results import reference_device

    rows = pd.DataFrame({"device": ["cpu · A"] * 2 + ["cpu · B"] * 5 + ["cuda · H100"] * 9})
    assert reference_device(rows, "cpu") == "cpu · B"  # not the first file's, the fullest
    assert reference_device(rows, "cuda") == "cuda · H100"
    assert reference_device(rows, "mps") == "cuda · H100" and reference_device(rows, "mps", strict=True) is None
    assert reference_device(rows.iloc[:0], "cpu") is None
