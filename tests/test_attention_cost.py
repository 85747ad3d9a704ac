"""The attention-cost experiment: implementations agree, exact saved bytes, n² vs n slopes, the guard, the wall."""

import math
import os
import resource
import subprocess
import sys

import pandas as pd
import pytest
import torch
from conftest import app_test, unescaped

from core.experiments import attention_cost as ac
from core.findings import attention_cost as findings
from core.harness import bench
from core.harness.fit import tail_slope
from core.harness.memory_formulas import MODEL_PRESETS
from core.models import attention, layers
from core.models.attention import Shape
from core.models.layers import naive_attention
from core.terms.i18n import translator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIRED = (
    "impl",
    "backend",
    "seq_len",
    "batch_size",
    "n_heads",
    "head_dim",
    "dtype",
    "time_ms",
    "time_iqr_ms",
    "peak_bytes",
    "saved_bytes",
    "analytic_bytes",
    "device",
    "status",
)
tr = translator("en")


def qkv(B=2, H=3, n=40, d=16, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, n, d, generator=g).to(dtype).requires_grad_() for _ in range(3)]


def cfg(**overrides):
    base = {"device": "cpu", "repeats": "1", "warmup": "0", "max_point_s": "0.2"}
    return ac.EXPERIMENT.config("quick", {**base, **overrides})


# ---- the implementations compute the same function (except linear attention, which is not softmax) ----------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("backend", ["auto", "flash", "math"])
def test_sdpa_and_naive_agree_forward_and_backward(backend, causal):
    q, k, v = qkv()
    g = torch.randn_like(q)
    ref = naive_attention(q, k, v, causal)[0]
    ref_grads = torch.autograd.grad(ref, (q, k, v), g)
    out = layers.sdpa(q, k, v, backend, causal)
    grads = torch.autograd.grad(out, (q, k, v), g)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_bfloat16_error_is_of_the_order_of_bfloat16s_own():
    q, k, v = qkv(n=64)
    exact = naive_attention(q.double(), k.double(), v.double(), False)[0]
    lo = [t.detach().bfloat16() for t in (q, k, v)]
    own = (naive_attention(*lo, False)[0].double() - exact).abs().max()  # the explicit path's bf16 error
    fused = (layers.sdpa(*lo).double() - exact).abs().max()
    assert fused <= 3 * own + 1e-3


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_matches_its_quadratic_definition_and_is_not_softmax(causal):
    q, k, v = qkv(n=24, dtype=torch.float64)
    fq, fk = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
    w = fq @ fk.transpose(-2, -1)  # (B, H, n, n) similarities, written out only here, for the check
    if causal:
        w = w.tril()
    ref = (w @ v) / (w.sum(-1, keepdim=True) + 1e-6)
    out = layers.linear_attention(q, k, v, causal)
    torch.testing.assert_close(out, ref, atol=1e-9, rtol=1e-9)
    assert (out - naive_attention(q, k, v, causal)[0]).abs().max() > 1e-2  # a different function


# ---- exact bytes ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("impl, backend", [("naive", "-"), ("sdpa", "flash"), ("sdpa", "math")])
def test_saved_bytes_equal_the_formula_exactly(impl, backend, causal):
    from core.harness.bench import saved_activation_bytes

    B, H, n, d = 2, 3, 40, 16
    q, k, v = qkv(B, H, n, d)
    fn = (
        (lambda: naive_attention(q, k, v, causal)[0])
        if impl == "naive"
        else (lambda: layers.sdpa(q, k, v, backend, causal))
    )
    saved = saved_activation_bytes(fn, exclude=(q, k, v))
    assert saved == attention.get(impl).saved_formula(Shape(B, H, n, d, 4, causal), backend)


def test_naive_keeps_exactly_one_extra_score_tensor():
    from core.harness.bench import saved_activation_bytes

    B, H, n, d = 2, 3, 50, 8
    q, k, v = qkv(B, H, n, d)
    assert saved_activation_bytes(lambda: naive_attention(q, k, v, False)[0], exclude=(q, k, v)) == B * H * n * n * 4


def test_live_peak_counts_live_tensors_only():
    x0 = torch.ones(1000)  # exists before: not counted
    with bench.LivePeak(exclude=(x0,)) as live:
        x = x0 * 2  # 4000 B live
        y = x + 1  # 8000 B live
        del x
        z = y * 3  # 8000 B live again (x freed)
        del y, z
        view = x0[:10] + 0  # 40 B
    assert live.peak == 8000 and live.current == 40 and view.numel() == 10


def test_backend_names_from_operators_cover_cuda_kernels():
    assert bench.backend_from_ops({"aten._scaled_dot_product_flash_attention_for_cpu.default"}) == "flash"
    assert bench.backend_from_ops({"aten._scaled_dot_product_flash_attention.default"}) == "flash"
    assert bench.backend_from_ops({"aten._scaled_dot_product_efficient_attention.default"}) == "efficient"
    assert bench.backend_from_ops({"aten._scaled_dot_product_cudnn_attention.default"}) == "cudnn"
    assert bench.backend_from_ops({"aten.bmm.default", "aten._softmax.default"}) == "math"


# ---- a tiny sweep: slopes, columns, the LSTM's flat state ----------------------------------------------------


@pytest.fixture(scope="module")
def sweep():
    progress = []
    df = ac.run(cfg(seq_lens="128,256,512", backends="auto,flash,efficient"), on_progress=progress.append)
    return df, progress


def test_columns_progress_and_statuses(sweep):
    df, progress = sweep
    assert set(REQUIRED) <= set(df.columns)
    assert [p.done for p in progress] == list(range(1, len(df) + 1))
    assert set(df[df.requested_backend != "efficient"].status) == {"ok"}
    auto = df[(df.impl == "sdpa") & (df.requested_backend == "auto")]
    assert set(auto.backend) == {"flash"}  # what CPU SDPA actually ran, read from the dispatched operators
    if not torch.cuda.is_available():  # CPU has no memory-efficient kernel: a row, not a crash
        eff = df[df.requested_backend == "efficient"]
        assert set(eff.status) == {"unsupported"} and eff.time_ms.isna().all()
        assert "No viable backend" in eff.note.iloc[0]


def test_naive_memory_grows_as_n_squared_and_sdpa_as_n(sweep):
    df, _ = sweep
    ok = df[df.status == "ok"]
    slope = {}
    for (impl, req), g in ok.groupby(["impl", "requested_backend"]):
        slope[(impl, req, "saved")] = tail_slope(g.seq_len, g.saved_bytes)
        slope[(impl, req, "peak")] = tail_slope(g.seq_len, g.peak_bytes)
    assert slope[("naive", "-", "saved")] == pytest.approx(2.0, abs=1e-9)  # exactly n² (inputs excluded)
    assert 1.85 < slope[("naive", "-", "peak")] < 2.1
    assert (
        slope[("sdpa", "auto", "saved")] == pytest.approx(1.0, abs=1e-9)
        and abs(slope[("sdpa", "auto", "peak")] - 1) < 0.1
    )
    assert abs(slope[("linear", "-", "saved")] - 1) < 0.1
    assert abs(slope[("lstm_state", "-", "peak")]) < 0.01  # the recurrent state does not grow


def test_rows_match_the_formulas(sweep):
    df, _ = sweep
    ok = df[df.status == "ok"]
    naive = ok[ok.impl == "naive"]
    assert (naive.saved_bytes == naive.analytic_bytes).all()  # one B·H·n²·4 tensor, nothing else
    exact = ok[ok.formula_saved_bytes.notna()]
    assert set(exact.impl) == {"naive", "sdpa"} and (exact.saved_bytes == exact.formula_saved_bytes).all()
    lstm = ok[ok.impl == "lstm_state"]
    assert set(lstm.state_bytes) == {2 * 1 * 4 * 32 * 4}  # h and c: batch × (heads·head_dim) × fp32
    assert (naive.peak_bytes > 2.5 * naive.analytic_bytes).all()  # scores, probabilities, their gradient


def test_takeaways_follow_the_data(sweep):
    df, _ = sweep
    lines = findings.takeaways(df, tr)
    ratio = next(x for x in lines if x.startswith("At n = 512"))
    naive, fused = (
        df[(df.seq_len == 512) & (df.impl == i) & (df.requested_backend.isin(["-", "auto"]))].iloc[0]
        for i in ("naive", "sdpa")
    )
    assert f"{naive.saved_bytes / fused.saved_bytes:.0f}× as much" in ratio
    doubled = df.copy()
    doubled.loc[doubled.impl == "naive", "saved_bytes"] *= 2
    assert f"{2 * naive.saved_bytes / fused.saved_bytes:.0f}× as much" in next(
        x for x in findings.takeaways(doubled, tr) if x.startswith("At n = 512")
    )
    assert any("cannot run here" in x for x in lines) != torch.cuda.is_available()


# ---- the guard, time limits, OOM -----------------------------------------------------------------------------


def _count_measured(monkeypatch) -> list[int]:
    """The lengths at which an attention point was actually measured (the guard let it through)."""
    real, measured = ac._measure_attention, []

    def counting(impl, backend, c, n, device):
        measured.append(n)
        return real(impl, backend, c, n, device)

    monkeypatch.setattr(ac, "_measure_attention", counting)
    return measured


def test_a_million_tokens_naive_is_refused_without_running_or_allocating(monkeypatch):
    measured = _count_measured(monkeypatch)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    df = ac.run(cfg(impls="naive", seq_lens="1000000"))
    assert measured == []  # refused from its prediction: nothing was run
    row = df.iloc[0]
    assert row.status == "skipped_memory" and "would need" in row.note and math.isnan(row.time_ms)
    assert row.predicted_bytes >= 4 * 1_000_000**2 * 4  # at least one B·H·n² fp32 matrix: 16 TB
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 200_000  # KiB: nothing big allocated
    assert "would need" in findings.takeaways(df, tr)[-1]


def test_a_point_too_slow_for_the_limit_is_skipped_not_run(monkeypatch):
    measured = _count_measured(monkeypatch)
    df = ac.run(cfg(impls="sdpa", seq_lens="64,200000", time_limit_s="5"))
    assert measured == [64]  # the long point was predicted from the short one and never run
    assert list(df.status) == ["ok", "skipped_time"] and "would take" in df.note.iloc[1]


def test_an_out_of_memory_point_is_a_row_and_the_next_point_runs(monkeypatch):
    real = ac._measure_attention

    def flaky(impl, backend, c, n, device):
        if n == 64:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(impl, backend, c, n, device)

    monkeypatch.setattr(ac, "_measure_attention", flaky)
    df = ac.run(cfg(impls="naive", seq_lens="64,128"))
    assert list(df.status) == ["oom", "ok"] and "out of memory" in df.note.iloc[0]


def test_a_forced_backend_failing_in_its_own_way_is_a_row_not_a_crash(monkeypatch):
    real = layers.sdpa

    def cudnn_like(q, k, v, backend="auto", causal=False):
        if backend == "cudnn":
            raise RuntimeError("cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph.")
        return real(q, k, v, backend, causal)

    monkeypatch.setattr(layers, "sdpa", cudnn_like)
    df = ac.run(cfg(impls="sdpa", backends="cudnn,auto", seq_lens="32"))
    assert list(df.status) == ["unsupported", "ok"] and "cuDNN Frontend" in df.note.iloc[0]


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"seq_lens": "1,64"}, "seq_lens"),
        ({"dtype": "float64"}, "dtype"),
        ({"n_heads": "0"}, "n_heads"),
        ({"impls": "naive", "backends": "flash"}, "backends"),
        ({"impls": "rnn"}, "impls"),
        ({"seq_lens": "64,64"}, "seq_lens"),
        ({"budget_mib": "-1"}, "budget_mib"),
    ],
)
def test_bad_input_names_the_field(overrides, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        cfg(**overrides)


# ---- the wall ------------------------------------------------------------------------------------------------


def synthetic(a=3.0, b=2.0):
    ns = [256, 512, 1024, 2048]
    return pd.DataFrame(
        {
            "impl": "naive",
            "requested_backend": "-",
            "backend": "naive",
            "seq_len": ns,
            "peak_bytes": [a * n**b for n in ns],
            "time_ms": [1e-6 * n**2 for n in ns],
            "n_heads": 4,
            "head_dim": 32,
            "batch_size": 1,
            "status": "ok",
            "point": "sweep",
        }
    )


def test_wall_solves_the_fitted_curve_for_the_budget():
    w = findings.wall(synthetic(), budget_bytes=3.0 * 8192**2).iloc[0]
    assert w.n_max == pytest.approx(8192, rel=1e-9) and w.slope == pytest.approx(2.0)
    assert w.kind == "extrapolation"
    flat = synthetic(b=0.0)
    assert math.isnan(findings.wall(flat, 1e9).n_max.iloc[0])  # a flat curve has no wall


def test_extrapolation_to_long_contexts_is_labelled_and_uses_the_formulas():
    shape = MODEL_PRESETS["Llama-2-7B"]
    ex = findings.extrapolate(synthetic(), shape, "bfloat16", budget_bytes=80 * 2**30)
    naive_1m = ex[(ex.what == "naive") & (ex.seq_len == 1048576)].iloc[0]
    assert naive_1m.bytes == 32 * 32 * 1048576**2 * 2 and not naive_1m.fits_budget
    kv = ex[(ex.what == "kv_cache") & (ex.seq_len == 8192)].iloc[0]
    assert kv.bytes == 4 * 2**30 and kv.fits_budget  # 512 KiB per token × 8192
    assert set(ex.memory_kind) == {"formula"} and naive_1m.time_kind.startswith("extrapolation")
    # n² from the largest measured point, scaled from the measured shape (4 heads × 32) to 32 layers × 32 × 128
    assert naive_1m.time_s == pytest.approx(1e-6 * 2048**2 * (1048576 / 2048) ** 2 * (32 * 32 * 128) / (4 * 32) / 1e3)
    assert findings.format_seconds(90) == "1.5 min" and findings.format_seconds(0.25) == "250 ms"


def test_wall_check_brackets_the_prediction_with_a_small_budget():
    df = ac.run(cfg(impls="naive", seq_lens="128,256,384", budget_mib="4", verify_wall="true"))
    checks = df[df.point != "sweep"].set_index("point")
    assert list(checks.status) == ["ok", "ok"]
    assert checks.loc["wall_below", "fits_budget"] and not checks.loc["wall_above", "fits_budget"]
    assert sum("as predicted" in x for x in findings.takeaways(df, tr)) == 2


# ---- charts and CLI ------------------------------------------------------------------------------------------


def test_memory_chart_is_log_log_with_slope_guides(sweep):
    from core.charts import attention_cost as charts

    spec = charts.memory_chart(sweep[0], tr).to_dict()
    text = str(spec)
    assert "'type': 'log'" in text and "∝ n^1" in text and "∝ n^2" in text and "cpu" in text
    timed = charts.time_chart(sweep[0], tr).to_dict()
    main, data = timed["layer"][0], None
    while "encoding" not in main:  # the lines drawn over a covered line's band, their data on the layer above
        data = main.get("data", data)
        main = main["layer"][-1]
    assert main["encoding"]["x"]["scale"]["type"] == "log" and main["encoding"]["y"]["field"] == "time_ms"
    drawn = timed["datasets"][main.get("data", data)["name"]]
    assert {(r["impl"], r["seq_len"]) for r in drawn} == {(i, n) for i, n in zip(sweep[0].impl, sweep[0].seq_len)}
    refused = ac.run(cfg(impls="naive", seq_lens="1000000"))
    peak = str(charts.memory_chart(pd.concat([sweep[0], refused]), tr, "peak_bytes").to_dict())
    assert "triangle-up" in peak and "would need" in peak  # drawn at its predicted size, not run


def test_cli_writes_the_columns(tmp_path, capsys):
    from core.cli import main

    out = tmp_path / "a.csv"
    assert (
        main(
            [
                "run",
                "attention_cost",
                "--device",
                "cpu",
                "--set",
                "seq_lens=32,64",
                "--set",
                "impls=naive,sdpa",
                "--set",
                "repeats=1",
                "--set",
                "warmup=0",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert set(REQUIRED) <= set(pd.read_csv(out).columns)
    assert "• At n = 64, naive attention kept" in capsys.readouterr().out  # computed takeaways on stdout


@pytest.mark.slow
def test_the_cli_path_imports_no_ui_packages():
    code = (
        "import sys, core.cli, core.experiments.attention_cost, core.experiments.kv_cache; "
        "assert 'streamlit' not in sys.modules and 'altair' not in sys.modules"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_cli_bad_input_exits_2_naming_the_field(capsys):
    from core.cli import main

    assert main(["run", "attention_cost", "--set", "head_dim=0"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: head_dim:")


# ---- the page ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_page_runs_live_reports_bad_input_and_measures_the_kv_cache():

    at = app_test(default_timeout=90).run()
    at.switch_page("pages/attention_cost.py").run()
    assert not at.exception
    at.multiselect(key="w:attention_cost:impls").set_value(["naive", "sdpa"])
    at.text_input(key="w:attention_cost:seq_lens").set_value("32, 64, 128")
    at.button(key="FormSubmitter:form:attention_cost-Run").click().run()
    assert not at.exception and not at.error
    shown = " ".join(m.value for m in at.markdown)
    assert "naive: memory kept for backward grew as n^2.00" in shown  # computed from this live run
    assert "At n = 128" in shown
    at.text_input(key="w:attention_cost:seq_lens").set_value("1, 64")
    at.button(key="FormSubmitter:form:attention_cost-Run").click().run()
    assert [unescaped(e.value) for e in at.error] == ["Cannot run: seq_lens: 1 is out of range; allowed 2..2097152"]
    at.selectbox(key="kv_model").set_value("Llama-2-70B").run()
    assert any("320.0 KiB per token" in m.value for m in at.markdown)
    at.button(key="kv_run").click().run()
    assert not at.exception
    assert any("exactly the bytes the formula gives" in m.value for m in at.markdown)
    at.selectbox(key="kv_model").set_value("custom").run()
    at.number_input(key="kv_kv_heads").set_value(5).run()
    assert any("KV heads: 5" in unescaped(e.value) for e in at.error) and not at.exception
