"""A tiny pre-LN decoder with a real KV cache and n_kv_heads ≤ n_heads K/V heads: multi-head (MHA), grouped-query
(GQA, Ainslie et al. 2023) and multi-query attention (MQA, Shazeer 2019), generating one token at a time."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from core.models.layers import sinusoidal_positions


class CachedAttention(nn.Module):
    """Causal self-attention with n_kv_heads ≤ n_heads K/V heads (MHA, GQA, MQA) and an explicit KV cache."""

    def __init__(self, n_heads: int, n_kv_heads: int, head_dim: int):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, head_dim
        d = n_heads * head_dim
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * n_kv_heads * head_dim, bias=False)  # only the KV heads are projected and cached
        self.proj = nn.Linear(d, d, bias=False)

    def forward(self, x, cache: tuple | None):
        B, T, C = x.shape  # batch, new tokens, channels
        q = self.q(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, hs)
        k, v = self.kv(x).view(B, T, 2, self.n_kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)  # (B, Hkv, T, hs)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)  # (B, Hkv, past+T, hs)
        if cache is not None and T > 1:
            raise ValueError("seq_len: feed one token at a time once the cache holds tokens")
        # each group of n_heads / n_kv_heads query heads reads the same K/V head
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=cache is None and T > 1, enable_gqa=self.n_kv_heads != self.n_heads
        )
        return self.proj(y.transpose(1, 2).reshape(B, T, C)), (k, v)


class TinyDecoder(nn.Module):
    """Pre-LN decoder: embedding + sinusoidal positions → blocks of cached attention and MLP → vocabulary head."""

    def __init__(self, vocab_size: int, n_layers: int, n_heads: int, n_kv_heads: int, head_dim: int):
        super().__init__()
        d = n_heads * head_dim
        self.embed = nn.Embedding(vocab_size, d)
        self.attn = nn.ModuleList(CachedAttention(n_heads, n_kv_heads, head_dim) for _ in range(n_layers))
        self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(n_layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(n_layers))
        self.mlp = nn.ModuleList(
            nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)) for _ in range(n_layers)
        )
        self.head = nn.Linear(d, vocab_size)

    def forward(self, tokens, cache: list | None = None):
        """(logits (B, T, vocab), new cache: one (K, V) pair per layer)."""
        past = 0 if cache is None else cache[0][0].shape[2]
        x = self.embed(tokens)
        x = x + sinusoidal_positions(past + x.shape[1], x.shape[2], x.device, x.dtype)[past:]
        new_cache = []
        for i, attn in enumerate(self.attn):
            a, kv = attn(self.ln1[i](x), None if cache is None else cache[i])
            x = x + a
            x = x + self.mlp[i](self.ln2[i](x))
            new_cache.append(kv)
        return self.head(x), new_cache
