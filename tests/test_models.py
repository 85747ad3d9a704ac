"""The fast and the explicit paths compute the same function."""

import torch
import torch.nn.functional as F

from core.models import LoopLSTMLM, RecurrentLM, SelfAttention, naive_attention


def test_step_loop_lstm_equals_fused_lstm():
    fused = RecurrentLM("lstm", 20, 16, 2)
    loop = LoopLSTMLM(20, 16, 2)
    loop.embed.load_state_dict(fused.embed.state_dict())
    loop.head.load_state_dict(fused.head.state_dict())
    for i, cell in enumerate(loop.cells):
        cell.weight_ih.data.copy_(getattr(fused.rnn, f"weight_ih_l{i}"))
        cell.weight_hh.data.copy_(getattr(fused.rnn, f"weight_hh_l{i}"))
        cell.bias_ih.data.copy_(getattr(fused.rnn, f"bias_ih_l{i}"))
        cell.bias_hh.data.copy_(getattr(fused.rnn, f"bias_hh_l{i}"))
    tokens = torch.randint(20, (3, 11))
    torch.testing.assert_close(loop(tokens), fused(tokens), rtol=1e-4, atol=1e-5)


def test_naive_attention_equals_sdpa_and_is_causal():
    q, k, v = (torch.randn(2, 3, 10, 8) for _ in range(3))
    out, probs = naive_attention(q, k, v, causal=True)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), rtol=1e-5, atol=1e-5)
    assert torch.all(probs.triu(1) == 0)
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, 3, 10))


def test_attention_module_paths_agree():
    a = SelfAttention(16, 2, impl="sdpa")
    b = SelfAttention(16, 2, impl="naive")
    b.load_state_dict(a.state_dict())
    x = torch.randn(2, 7, 16)
    torch.testing.assert_close(a(x), b(x), rtol=1e-5, atol=1e-5)
    assert b.last_probs.shape == (2, 2, 7, 7)
