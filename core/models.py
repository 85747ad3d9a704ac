"""The models every page compares, behind one interface: `model(tokens) -> logits`.

Recurrent models start from a zero state inside `forward`, so training and benchmark code never branch on model
type (STYLE.md). The fast path and the explicit path sit side by side: fused `nn.LSTM` beside an `nn.LSTMCell`
step loop, `scaled_dot_product_attention` beside the materialised softmax(QKᵀ)V.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

RECURRENT = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


class RecurrentLM(nn.Module):
    """Embedding → fused nn.RNN / nn.LSTM / nn.GRU stack (cuDNN or oneDNN where available) → vocabulary head."""

    def __init__(self, kind: str, vocab_size: int, d_model: int, n_layers: int):
        super().__init__()
        self.kind = kind
        self.embed = nn.Embedding(vocab_size, d_model)
        self.rnn = RECURRENT[kind](d_model, d_model, num_layers=n_layers, batch_first=True)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h, _ = self.rnn(self.embed(tokens))  # (B, T, d_model), zero initial state
        return self.head(h)


class LoopLSTMLM(nn.Module):
    """The recurrence made literal: one nn.LSTMCell call per time step and layer, in a Python loop."""

    def __init__(self, vocab_size: int, d_model: int, n_layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.cells = nn.ModuleList(nn.LSTMCell(d_model, d_model) for _ in range(n_layers))
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)  # (B, T, d)
        B, T, d = x.shape
        for cell in self.cells:
            h = c = x.new_zeros(B, d)
            outs = []
            for t in range(T):  # h_t = f(h_{t-1}, x_t): T dependent steps
                h, c = cell(x[:, t], (h, c))
                outs.append(h)
            x = torch.stack(outs, dim=1)
        return self.head(x)


def sinusoidal_positions(T: int, d: int, device, dtype) -> torch.Tensor:
    """(T, d) fixed sinusoidal position codes (Vaswani et al. 2017, §3.5); no length limit."""
    pos = torch.arange(T, device=device, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(T, d, device=device)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div[: d // 2])
    return pe.to(dtype)


def naive_attention(q, k, v, causal: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(QKᵀ/√d)V with the (B, H, T, T) score matrix materialised; returns (output, probabilities)."""
    T, S = q.shape[-2], k.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (B, H, T, S)
    if causal:
        mask = torch.ones(T, S, dtype=torch.bool, device=q.device).tril(S - T)
        scores = scores.masked_fill(~mask, float("-inf"))
    probs = scores.softmax(dim=-1)
    return probs @ v, probs


class SelfAttention(nn.Module):
    """Multi-head causal self-attention; `impl` is 'sdpa' (fused kernels) or 'naive' (explicit, keeps probs)."""

    def __init__(self, d_model: int, n_heads: int, impl: str = "sdpa", causal: bool = True):
        super().__init__()
        assert d_model % n_heads == 0, "d_model must be divisible by n_heads"
        self.n_heads, self.impl, self.causal = n_heads, impl, causal
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.last_probs: torch.Tensor | None = None  # (B, H, T, T) after a forward with impl='naive'

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape  # batch, time, channels
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (z.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for z in (q, k, v))  # (B, H, T, hs)
        if self.impl == "naive":
            y, probs = naive_attention(q, k, v, self.causal)
            self.last_probs = probs.detach()
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    """A Transformer block. norm='pre' (GPT-2 style), 'post' (2017 original) or 'none'; residual on or off."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        norm: str = "pre",
        residual: bool = True,
        impl: str = "sdpa",
        causal: bool = True,
    ):
        super().__init__()
        self.norm, self.residual = norm, residual
        self.ln1 = nn.LayerNorm(d_model) if norm != "none" else nn.Identity()
        self.ln2 = nn.LayerNorm(d_model) if norm != "none" else nn.Identity()
        self.attn = SelfAttention(d_model, n_heads, impl, causal)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def _sub(self, x, f, ln):
        if self.norm == "post":
            return ln(x + f(x)) if self.residual else ln(f(x))
        return x + f(ln(x)) if self.residual else f(ln(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._sub(x, self.attn, self.ln1)
        return self._sub(x, self.mlp, self.ln2)


class TransformerLM(nn.Module):
    """Embedding + sinusoidal positions → n Blocks → (final LayerNorm for pre-LN) → vocabulary head."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_layers: int,
        n_heads: int = 4,
        norm: str = "pre",
        residual: bool = True,
        impl: str = "sdpa",
        causal: bool = True,
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, norm, residual, impl, causal) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model) if norm == "pre" else nn.Identity()
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        x = x + sinusoidal_positions(x.shape[1], x.shape[2], x.device, x.dtype)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def n_heads_for(d_model: int) -> int:
    """Heads of size 32 where d_model allows (at least one head)."""
    for h in (max(1, d_model // 32), 4, 2, 1):
        if d_model % h == 0:
            return h
    return 1
