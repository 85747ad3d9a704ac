"""Gradient reach: exact Jacobian norms on hand-computable layers, the decay/flat shapes, bad input, the CLI."""

import math

import pytest
import torch
from torch import nn

from core.cli import main
from core.config import make_config
from core.experiments import gradient_reach as gr
from core.models import registry
from core.terms.i18n import translator
from core.workloads import reach


def _cfg(**kw):
    return make_config(gr.GradientReachConfig, {"device": "cpu", "seq_len": 60, "d_model": 16, **kw})


class _Seq(nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        return self.rnn(x)[0]


def test_linear_rnn_jacobian_is_a_power_of_the_recurrent_matrix():
    # Zero input and zero biases keep h = 0, so tanh' = 1 exactly: ∂h_T/∂x_(T−k) = W_hh^k W_ih = a^k I.
    d, a, T = 8, 0.5, 12
    rnn = nn.RNN(d, d, batch_first=True)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(torch.eye(d))
        rnn.weight_hh_l0.copy_(a * torch.eye(d))
        rnn.bias_ih_l0.zero_()
        rnn.bias_hh_l0.zero_()
    norms = reach.jacobian_norms(_Seq(rnn), torch.zeros(T, d))
    expected = torch.tensor([a**k * math.sqrt(d) for k in range(T)], dtype=torch.float64)
    assert torch.allclose(norms, expected, rtol=1e-5)
    assert reach.reach(norms) == 11  # 0.5^k < 0.5/1000 first at k = 11 (2^10 = 1024)


def test_lstm_jacobian_decays_by_the_forget_gate_at_zero_state():
    # Zero input, zero recurrent weights: every gate is σ(bias); g = tanh(0) = 0 keeps c = h = 0, so
    # ∂h_T/∂x_(T−k) = σ(b_o)·σ(b_f)^k·σ(b_i)·W_ig = 0.5 · σ(b)^k · 0.5 · I with W_ig = I and forget bias b.
    d, T, b = 6, 10, 1.0
    lstm = nn.LSTM(d, d, batch_first=True)
    with torch.no_grad():
        lstm.weight_ih_l0.zero_()
        lstm.weight_ih_l0[2 * d : 3 * d] = torch.eye(d)  # the cell-input gate g
        lstm.weight_hh_l0.zero_()
        lstm.bias_ih_l0.zero_()
        lstm.bias_hh_l0.zero_()
        lstm.bias_ih_l0[d : 2 * d] = b
    norms = reach.jacobian_norms(_Seq(lstm), torch.zeros(T, d))
    f = 1 / (1 + math.exp(-b))
    expected = torch.tensor([0.25 * f**k * math.sqrt(d) for k in range(T)], dtype=torch.float64)
    assert torch.allclose(norms, expected, rtol=1e-5)


def test_batched_jacobian_matches_autograd_functional():
    torch.manual_seed(0)
    gru = _Seq(nn.GRU(5, 7, batch_first=True))
    x = torch.randn(9, 5)
    J = torch.autograd.functional.jacobian(lambda z: gru(z[None])[0, -1], x)  # (7, 9, 5)
    ref = J.pow(2).sum(dim=(0, 2)).sqrt().flip(0).double()
    assert torch.allclose(reach.jacobian_norms(gru, x, chunk=3), ref, rtol=1e-5)


def test_recurrent_gradients_decay_exponentially_and_attention_stays_flat():
    df = gr.run(_cfg())
    by = {m: df[df["model"] == m].set_index("distance")["grad_norm"] for m in registry.names("gradient_reach:quick")}
    for m in ("rnn", "lstm", "gru"):
        assert by[m][40] < 1e-6 * by[m][1], m  # many orders of magnitude within 40 steps
        logs = torch.tensor([math.log(by[m][k]) for k in (5, 10, 15, 20)])
        steps = logs[1:] - logs[:-1]
        assert (steps < 0).all() and steps.max() / steps.min() > 0.5, m  # roughly equal log-steps: exponential
        assert df[df["model"] == m]["reach"].iloc[0] < 40
    att = by["attention"][by["attention"].index >= 1]
    assert att.max() / att.min() < 20  # flat: no trend with distance, whatever the distance
    assert math.isnan(df[df["model"] == "attention"]["reach"].iloc[0])
    assert set(reach.COLUMNS) <= set(df.columns) and {"device", "seed"} <= set(df.columns)
    lines = gr.takeaways(df, translator("en"))
    assert any("no decay" in s for s in lines) and any("O(n) versus O(1)" in s for s in lines)


@pytest.mark.slow
def test_attention_over_an_lstm_falls_first_and_then_levels_off_not_flat():
    """At the quick preset's 200 tokens the hybrid's gradient falls ~30x from k = 1 before it holds: the takeaway
    says it levels off (the LSTM's path fading, attention's staying), not "no decay" as for attention alone."""
    df = gr.run(gr.EXPERIMENT.config("quick", {"device": "cpu", "models": "attention,lstm_attention"}))
    hybrid = df[(df["model"] == "lstm_attention") & (df["distance"] >= 1)]["grad_norm"]
    tail = hybrid[df["distance"] >= 50]
    assert hybrid.max() / hybrid.min() > 20 and tail.max() / tail.min() < 5  # falls, then holds
    lines = gr.takeaways(df, translator("en"))
    (said,) = [s for s in lines if s.startswith("**LSTM + attention**")]
    assert "levels off" in said and "no decay" not in said
    assert any(s.startswith("**attention block**") and "no decay" in s for s in lines)


def test_spectral_radius_and_forget_bias_controls_act():
    cfg = _cfg(models="rnn,lstm", rnn_radius=1.5, forget_bias=3.0)
    rnn, lstm = reach.build_layer("rnn", cfg), reach.build_layer("lstm", cfg)
    assert reach.spectral_radius(rnn.rnn.weight_hh_l0) == pytest.approx(1.5, rel=1e-6)
    assert (lstm.rnn.bias_ih_l0[16:32] == 3.0).all() and (lstm.rnn.bias_hh_l0[16:32] == 0).all()
    # a larger forget bias lets the LSTM's gradient reach farther
    near = gr.run(_cfg(models="lstm", forget_bias=0.0))["reach"].iloc[0]
    far = gr.run(_cfg(models="lstm", forget_bias=3.0))
    assert math.isnan(far["reach"].iloc[0]) or far["reach"].iloc[0] > near


def test_bad_input_names_the_field(capsys):
    with pytest.raises(ValueError, match="seq_len"):
        _cfg(seq_len=1)
    with pytest.raises(ValueError, match="models"):
        _cfg(models="rnn,transformer")
    assert main(["run", "gradient_reach", "--device", "cpu", "--set", "d_model=0"]) == 2
    assert "d_model" in capsys.readouterr().err


def test_spectral_radius_above_one_explodes():
    df = gr.run(_cfg(models="rnn", rnn_radius=4.0, seq_len=120))
    g = df.set_index("distance")["grad_norm"]
    assert g[100] > 1e10 * g[1]  # Pascanu et al.: radius > 1 can explode
    assert any("grows with distance" in s for s in gr.takeaways(df, translator("en")))


def test_a_nan_gradient_becomes_a_diverged_row_and_the_others_continue(monkeypatch):
    real = reach.build_layer

    def poisoned(name, cfg):
        layer = real(name, cfg)
        if name == "gru":
            with torch.no_grad():
                layer.rnn.weight_hh_l0[0, 0] = float("nan")
        return layer

    monkeypatch.setattr(reach, "build_layer", poisoned)
    df = gr.run(_cfg(models="gru,attention"))
    gru, att = df[df["model"] == "gru"], df[df["model"] == "attention"]
    assert (gru["status"] == "diverged").all() and gru["grad_norm"].isna().all()
    assert (att["status"] == "ok").all() and att["grad_norm"].notna().all()
    assert any("overflowed" in s for s in gr.takeaways(df, translator("en")))


@pytest.mark.slow
def test_cli_quick_preset_prints_columns(capsys):
    assert main(["run", "gradient_reach", "--device", "cpu", "--set", "seq_len=30", "--set", "d_model=8"]) == 0
    out = capsys.readouterr().out
    assert "grad_norm" in out and "attention" in out
