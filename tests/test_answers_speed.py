"""Amdahl's law on page 5: the recurrence a parallel form replaces is timed alone, in each form. The callables timed
are the ones the whole step runs, on the same gate tensors, and every form's recurrence computes the same states
(float64, values and gradients); the run writes the new columns; the finding's share, ceiling and prediction are
the arithmetic on the rows, and the sentence says them in both languages."""

import math
import re

import pandas as pd
import pytest
import torch

from core.experiments import answers_speed
from core.findings import answers as findings
from core.models import registry
from core.models.registry import LOOP, Spec
from core.terms.i18n import translator

SPEC = Spec(16, window=4, kernel=2, levels=3, chunk=4, d_state=4)
# a mixer with a step loop has a parallel form of the same recurrence (scan or chunked), and the recurrence to time
RECURRENT = [m for m in registry.names("answers") if LOOP in registry.get(m).forms]
PAIRS = [(m, f) for m in RECURRENT for f in registry.get(m).forms]


def _layer(name: str, form: str):
    torch.manual_seed(1)
    return registry.get(name).mixer(SPEC, form).double()


def _inputs(layer, T: int = 13):
    x = torch.randn(2, T, SPEC.d_model, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    with torch.no_grad():
        return x, tuple(t.detach().clone().requires_grad_(True) for t in layer.recurrence_inputs(x))


def test_only_mixers_with_a_loop_have_a_recurrence_to_time():
    assert {"min_gru", "min_lstm", "rwkv", "selective_ssm", "linear_attention"} <= set(RECURRENT)
    for m in registry.names("answers"):
        for f in registry.get(m).forms:
            layer = registry.get(m).mixer(SPEC, f)
            has = getattr(layer, "recurrence_inputs", lambda x: None)(torch.randn(1, 5, SPEC.d_model)) is not None
            assert has == (m in RECURRENT), (m, f)


@pytest.mark.parametrize("name, form", PAIRS)
def test_each_forms_recurrence_alone_gives_the_loops_states_and_gradients(name, form):
    layer = _layer(name, form)
    _, inputs = _inputs(layer)
    want = layer.recurrence(LOOP)(*inputs)
    got = layer.recurrence(form)(*inputs)
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-10)
    w = torch.randn(want.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    for g_want, g_got in zip(
        torch.autograd.grad((want * w).sum(), inputs), torch.autograd.grad((got * w).sum(), inputs)
    ):
        torch.testing.assert_close(g_got, g_want, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name, form", PAIRS)
def test_the_whole_step_runs_the_timed_recurrence_on_the_same_gates(name, form):
    layer = _layer(name, form)
    x, inputs = _inputs(layer)
    timed = layer.recurrence(form)
    seen = []

    def spy(*args):
        seen.append(timed(*args))
        return seen[-1]

    setattr(layer, f"recur_{form}", spy)  # what forward_<form> calls, on this instance
    with torch.no_grad():
        layer(x)
        alone = timed(*inputs)
    assert len(seen) == 1
    torch.testing.assert_close(seen[0], alone, rtol=0, atol=0)


def test_the_gated_layers_output_is_the_states_of_h_equals_a_h_plus_b():
    """minGRU and minLSTM output their hidden states: the scan's recurrence against the bare update, written out."""
    for name in ("min_gru", "min_lstm"):
        layer = _layer(name, "scan")
        x, inputs = _inputs(layer)
        if name == "min_gru":
            z, h_tilde = inputs
            a, b = 1 - z, z * h_tilde
        else:
            f, i, h_tilde = inputs
            a, b = f, i * h_tilde
        h, states = torch.zeros_like(a[:, 0]), []
        for t in range(a.shape[1]):
            h = a[:, t] * h + b[:, t]
            states.append(h)
        with torch.no_grad():
            torch.testing.assert_close(layer(x), torch.stack(states, 1), rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(layer.recurrence("scan")(*inputs), torch.stack(states, 1))


def _frame(points):
    """answers_speed rows for minGRU: (n, loop step ms, loop recurrence ms, scan step ms, scan recurrence ms)."""
    rows = []
    for n, loop, loop_rec, scan, scan_rec in points:
        base = {**dict.fromkeys(answers_speed.COLUMNS, math.nan), "mixer": "min_gru", "seq_len": n, "status": "ok",
                "device": "cpu · test · 2 threads", "saved_bytes": 1e6, "note": ""}  # fmt: skip
        rows.append({**base, "form": "loop", "train_ms": loop, "rec_ms": loop_rec, "seq_steps": n})
        whole, rec = loop / scan, loop_rec / scan_rec
        rows.append({**base, "form": "scan", "train_ms": scan, "rec_ms": scan_rec, "seq_steps": 20,
                     "speedup_vs_loop": whole, "speedup_q25": whole * 0.9, "speedup_q75": whole * 1.1,
                     "rec_speedup_vs_loop": rec, "rec_speedup_q25": rec * 0.9, "rec_speedup_q75": rec * 1.1})  # fmt: skip
    return pd.DataFrame(rows)


# n = 1,024: loop 100 ms of which 80 the recurrence (shared 20 ms, 20%); scan 25 ms of which 5 the recurrence
KNOWN = [(256, 30.0, 20.0, 12.5, 2.5), (1024, 100.0, 80.0, 25.0, 5.0)]


def test_the_share_the_ceiling_and_the_prediction_are_the_arithmetic_on_the_rows():
    assert {"rec_ms", "rec_iqr_ms", "rec_speedup_vs_loop", "rec_speedup_q25", "rec_speedup_q75"} <= set(
        answers_speed.COLUMNS
    )
    a = findings.amdahl(_frame(KNOWN)).set_index("seq_len")
    r = a.loc[1024]
    assert r["whole"] == pytest.approx(4.0) and r["rec"] == pytest.approx(16.0)
    assert r["shared_ms"] == pytest.approx(20.0) and r["fast_shared_ms"] == pytest.approx(20.0)
    assert r["share"] == pytest.approx(0.2) and r["ceiling"] == pytest.approx(5.0)
    assert r["predicted"] == pytest.approx(1 / (0.2 + 0.8 / 16))  # = 4: the measured whole step, here by design
    assert a.loc[256, "share"] == pytest.approx(10 / 30) and a.loc[256, "ceiling"] == pytest.approx(3.0)
    # a recurrence timed at its whole step's time (a busy moment) leaves nothing shared: no ceiling, no sentence
    busy = findings.amdahl(_frame([(1024, 100.0, 100.0, 25.0, 5.0)]))
    assert math.isnan(busy["share"].iloc[0]) and math.isnan(busy["ceiling"].iloc[0])
    assert findings.amdahl_text(_frame([(1024, 100.0, 100.0, 25.0, 5.0)]), translator("en")) == []
    assert not len(findings.amdahl(_frame(KNOWN).drop(columns=[c for c in answers_speed.COLUMNS if "rec" in c])))


def test_the_sentence_states_both_speed_ups_the_share_and_the_ceiling_in_both_languages():
    said = {}
    for lang in ("en", "zh"):
        lines = findings.speed_takeaways(_frame(KNOWN), translator(lang))
        assert not any("«" in line for line in lines), lines
        said[lang] = findings.amdahl_text(_frame(KNOWN), translator(lang))
        assert len(said[lang]) == 2 and all(line in lines for line in said[lang])
    (en, every), (zh, zh_every) = said["en"], said["zh"]
    assert (
        "was 16× for the recurrence alone" in en and "(paired repeats: 14–18×)" in en and "and 4× for the whole" in en
    )
    assert "20 ms of the loop's 100 ms step, 20% of it (20 ms of the scan's)" in en and "1 ÷ 20% ≈ 5×" in en
    assert "the law predicts 4× for the whole step" in en
    assert every == "At every one of the 2 lengths from n = 256 to 1,024, the recurrence's own speed-up (8–16×) " \
                    "exceeded the whole step's (2.4–4×)."  # fmt: skip
    assert "加速比为 16（配对重复测量：14–18）" in zh and "整个训练步的加速比为 4。" in zh
    assert "100 毫秒中占 20 毫秒，即 20%（扫描一步中为 20 毫秒）" in zh and "1 ÷ 20% ≈ 5 以内" in zh
    assert "2 个长度上" in zh_every and "（8–16）" in zh_every and "（2.4–4）" in zh_every
    for line in (zh, zh_every):  # Chinese punctuation: no ASCII comma, semicolon, colon or parenthesis
        assert not re.search(r"[,;:()]", line.replace("1,024", "")), line
    assert not any("above that ceiling" in line for line in findings.amdahl_text(_frame(KNOWN), translator("en")))
    # loop: 40 of 100 ms shared (ceiling 2.5×); scan: 15 of 25 ms: the step's 4× beats the ceiling, and says why
    beyond = findings.amdahl_text(_frame([(1024, 100.0, 60.0, 25.0, 10.0)]), translator("en"))
    assert "≈ 2.5×" in beyond[0] and beyond[1] == (
        "The measured 4× is above that ceiling because the law takes the shared work to cost the same in both "
        "forms, and here it did not: 40 ms in the loop's step, 15 ms in the scan's."
    )
    assert "«" not in " ".join(findings.amdahl_text(_frame([(1024, 100.0, 60.0, 25.0, 10.0)]), translator("zh")))
    some = findings.amdahl_text(_frame([*KNOWN, (4096, 400.0, 300.0, 80.0, 60.0)]), translator("en"))
    assert "at only 2 of them" in some[-1]  # at n = 4,096 the recurrence's 5× is not above the step's 5×


def test_the_amdahl_chart_draws_the_three_measures_with_the_device():
    from core.charts import answers as charts

    spec = charts.amdahl_chart(_frame(KNOWN), translator("en")).to_dict()
    data = next(d for d in spec["datasets"].values() if d and "what" in d[0])
    assert {r["what"] for r in data} == {"recurrence alone", "whole training step", "ceiling (1 ÷ shared share)"}
    assert sorted(r["speedup"] for r in data if r["seq_len"] == 1024) == pytest.approx([4.0, 5.0, 16.0])
    assert "cpu · test" in str(spec["layer"][0].get("title") or spec.get("title"))


def test_the_shipped_reference_tells_amdahls_story_in_both_languages():
    """The shipped CPU reference carries the recurrence alone, and page 5's headline mixer's recurrence sped up more
    than its whole step at every length (the shared work is a real part of the step)."""
    from core.store.results import load_reference

    df, problems = load_reference("answers_speed")
    assert not problems and df["device"].nunique() == 1  # one machine's run, not two concatenated
    a = findings.amdahl(df)
    h = findings.headline(df)
    mine = a[a["mixer"] == h["mixer"]]
    assert len(mine) == df["seq_len"].nunique() and (mine["rec"] > mine["whole"]).all(), mine
    for lang in ("en", "zh"):
        said = findings.amdahl_text(df, translator(lang))
        assert len(said) >= 2 and not any("«" in line for line in said)
        assert all(line in findings.speed_takeaways(df, translator(lang)) for line in said)
