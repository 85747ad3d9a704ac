"""The KV cache: the formula against public model configs, a real cache measured byte for byte, the RNN's state."""

import os
import subprocess
import sys

import pandas as pd
import pytest
import torch

from core import kv_cache_bytes
from core.experiments import kv_cache as kv
from core.harness.memory_formulas import MODEL_PRESETS, model_kv_bytes_per_token
from core.terms.i18n import translator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIRED = (
    "model",
    "scheme",
    "n_layers",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "seq_len",
    "batch_size",
    "bytes_per_elem",
    "cache_bytes",
    "measured_bytes",
    "device",
)
KiB, GiB = 2**10, 2**30


# ---- the formula against published configs -------------------------------------------------------------------


def test_llama_2_7b_mha_is_512_kib_per_token_and_2_gib_at_4096():
    assert kv_cache_bytes(32, 32, 128, 1) == 512 * KiB
    assert kv_cache_bytes(32, 32, 128, 4096) == 2 * GiB
    assert kv_cache_bytes(32, 32, 128, 4096, batch_size=8, bytes_per_elem=4) == 2 * GiB * 8 * 2


def test_llama_2_70b_gqa_uses_kv_heads_not_query_heads():
    m = MODEL_PRESETS["Llama-2-70B"]
    assert (m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim) == (80, 64, 8, 128)
    assert model_kv_bytes_per_token(m) == 320 * KiB
    with_query_heads = kv_cache_bytes(m.n_layers, m.n_heads, m.head_dim, 1)  # the common calculator mistake
    assert with_query_heads == 8 * 320 * KiB


@pytest.mark.parametrize(
    "name, per_token_kib, scheme",
    [
        ("GPT-2 small", 36, "mha"),  # 2·12·12·64·2 B = 36 KiB
        ("Llama-3-8B", 128, "gqa"),
        ("Mistral-7B-v0.1", 128, "gqa"),
        ("Qwen2-7B", 56, "gqa"),
        ("Falcon-7B", 8, "mqa"),  # one K/V head of 64 for 71 query heads
    ],
)
def test_other_presets(name, per_token_kib, scheme):
    m = MODEL_PRESETS[name]
    assert model_kv_bytes_per_token(m) == per_token_kib * KiB and m.scheme == scheme and m.source


def test_kv_cache_bytes_is_importable_without_torch():
    code = "import sys; from core import kv_cache_bytes; assert 'torch' not in sys.modules; print(kv_cache_bytes(80, 8, 128, 1))"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(320 * KiB)


@pytest.mark.parametrize(
    "args, field",
    [
        ((0, 8, 128, 1), "n_layers"),
        ((32, 0, 128, 1), "n_kv_heads"),
        ((32, 8, -1, 1), "head_dim"),
        ((32, 8, 128, -5), "seq_len"),
        ((32, 8, 128, 1, 0), "batch_size"),
        ((32, 8, 128, 1, 1, float("nan")), "bytes_per_elem"),
        ((32, True, 128, 1), "n_kv_heads"),
    ],
)
def test_bad_input_names_the_field(args, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        kv_cache_bytes(*args)


# ---- the measured cache --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def quick():
    progress = []
    df = kv.run(
        kv.EXPERIMENT.config("quick", {"device": "cpu", "gen_tokens": "48", "record_every": "8"}),
        on_progress=progress.append,
    )
    return df, progress


def test_columns_and_progress(quick):
    df, progress = quick
    assert set(REQUIRED) <= set(df.columns) and (df.status == "ok").all()
    assert [p.done for p in progress] == [1, 2, 3, 4, 5] and sum(len(p.rows) for p in progress) == len(df)


def test_measured_cache_equals_the_formula_and_grows_linearly(quick):
    df, _ = quick
    m = df[df.model == "tiny decoder"]
    assert len(m) == 3 * 6 and (m.measured_bytes == m.cache_bytes).all()
    for scheme, n_kv in (("mha", 8), ("gqa", 2), ("mqa", 1)):
        s = m[m.scheme == scheme]
        per_token = 2 * 2 * n_kv * 16 * 4  # K and V × layers × KV heads × head size × fp32
        assert (s.measured_bytes == s.seq_len * per_token).all()
    last = m[m.seq_len == 48].set_index("scheme").measured_bytes
    assert last["mha"] == 4 * last["gqa"] == 8 * last["mqa"]


def test_rnn_state_stays_flat(quick):
    df, _ = quick
    r = df[df.scheme == "rnn_state"]
    assert len(r) == 6 and set(r.measured_bytes) == {2 * 2 * 1 * 128 * 4}  # (h, c) × layers × batch × width


def test_formula_rows_cover_the_models_and_the_mha_counterfactual(quick):
    df, _ = quick
    f = df[df.kind == "formula"]
    row = f[(f.model == "Llama-2-70B") & (f.scheme == "gqa") & (f.seq_len == 4096)].iloc[0]
    assert row.cache_bytes == 320 * KiB * 4096
    mha = f[(f.model == "Llama-2-70B") & (f.scheme == "mha") & f.hypothetical & (f.seq_len == 4096)].iloc[0]
    assert mha.cache_bytes == 8 * row.cache_bytes


def test_takeaways_are_computed(quick):
    df, _ = quick
    lines = kv.takeaways(df, translator("en"))
    assert any("Llama-2-70B" in x and "320.0 KiB per token" in x and "1/8 of what it would be" in x for x in lines)
    assert any("exactly the bytes the formula gives" in x for x in lines)
    broken = df.copy()
    broken.loc[broken.model == "tiny decoder", "measured_bytes"] += 1
    assert any("differed from the formula" in x for x in kv.takeaways(broken, translator("en")))


@pytest.mark.parametrize("scheme", ["mha", "gqa", "mqa"])
def test_the_cache_is_real_generation_with_it_equals_a_full_forward(scheme):
    torch.manual_seed(0)
    model = kv.TinyDecoder(32, 2, 8, kv.kv_heads(scheme, 8), 8).eval()
    tokens = torch.randint(32, (2, 12))
    with torch.no_grad():
        full, _ = model(tokens)  # causal attention over all 12 tokens at once, no cache
        cache, steps = None, []
        for t in range(12):
            logits, cache = model(tokens[:, t : t + 1], cache)
            steps.append(logits)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    assert kv.cache_storage_bytes(cache) == kv_cache_bytes(2, kv.kv_heads(scheme, 8), 8, 12, 2, 4)


def test_calculator_frame_and_crossing():
    m = MODEL_PRESETS["Llama-2-70B"]
    f = kv.calculator_frame(m, 2, 1, (4096,))
    assert list(f.scheme) == ["mha", "gqa", "mqa"] and list(f.n_kv_heads) == [64, 8, 1]
    assert f.cache_bytes.iloc[1] == 320 * KiB * 4096
    assert kv.crossing_tokens(m, 2, 1, 80 * GiB) == pytest.approx(80 * GiB / (320 * KiB))


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"n_heads": "6"}, "n_heads"),
        ({"record_every": "99", "gen_tokens": "10"}, "record_every"),
        ({"models": "GPT-5"}, "models"),
        ({"schemes": "mla"}, "schemes"),
        ({"model_dtype": "float64"}, "model_dtype"),
    ],
)
def test_bad_config_names_the_field(overrides, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        kv.EXPERIMENT.config("quick", overrides)


@pytest.mark.slow
def test_cli_quick_preset_writes_the_columns(tmp_path):
    out = tmp_path / "kv.csv"
    r = subprocess.run(
        [sys.executable, "-m", "core", "run", "kv_cache", "--preset", "quick", "--device", "cpu", "--out", str(out)],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(out)
    assert set(REQUIRED) <= set(df.columns) and "1/8 of what it would be" in r.stdout
