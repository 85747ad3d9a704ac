"""Analytic FLOP counts (a multiply-add = 2 FLOPs), as nanoGPT's estimate_mfu and flash-attention's flops() do.

`torch.utils.flop_counter.FlopCounterMode` reports 0 for fused kernels (oneDNN/cuDNN LSTM, CPU flash SDPA), so
these formulas are the count; tests check them against the counter on the unfused paths.
"""

from __future__ import annotations


def recurrent_forward(gates: int, batch_size: int, seq_len: int, d_in: int, hidden: int, n_layers: int = 1) -> int:
    """gates × 2·h·(d_in+h) per token per layer: LSTM 4 gates, GRU 3, tanh RNN 1 (layers ≥2 take d_in=h)."""
    tokens = batch_size * seq_len
    per_token = 2 * gates * hidden * (d_in + hidden)
    per_token += (n_layers - 1) * 2 * gates * hidden * (2 * hidden)
    return tokens * per_token


CONVENTION = "causal_half"  # the convention of every count here, recorded in each row's flop_convention column


def attention_forward(
    batch_size: int, seq_len: int, d_model: int, kv_len: int | None = None, causal: bool = False
) -> int:
    """QKᵀ and (probabilities)V: 4·B·T·S·d for all heads together, halved when causal.
    Causal counts what fused kernels perform (blocks above the diagonal skipped), so a share of peak cannot exceed 1."""
    full = 4 * batch_size * seq_len * (kv_len or seq_len) * d_model
    return full // 2 if causal else full


def transformer_layer_forward(
    batch_size: int, seq_len: int, d_model: int, mlp_ratio: int = 4, causal: bool = True
) -> int:
    """One block: QKV + output projection 8·d², MLP 2·2·ratio·d², per token; plus attention (halved if causal)."""
    tokens = batch_size * seq_len
    dense = tokens * (8 + 4 * mlp_ratio) * d_model * d_model
    return dense + attention_forward(batch_size, seq_len, d_model, causal=causal)


def head_forward(batch_size: int, seq_len: int, d_model: int, vocab_size: int) -> int:
    return 2 * batch_size * seq_len * d_model * vocab_size


def training_step(forward_flops: int) -> int:
    """Forward + backward ≈ 3 × forward (backward computes gradients for inputs and weights: two matmuls each)."""
    return 3 * forward_flops
