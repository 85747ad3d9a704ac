"""Causal linear attention (Katharopoulos et al. 2020, "Transformers are RNNs"): softmax(qkᵀ) replaced by
φ(q)·φ(k)ᵀ with φ = elu + 1, so the sum over the past is a running state.

    S_t = S_{t−1} + φ(k_t) v_tᵀ,   z_t = z_{t−1} + φ(k_t),   y_t = φ(q_t)ᵀ S_t / (φ(q_t)ᵀ z_t + ε)

`loop` is that recurrence, one token at a time; `chunked` is the chunkwise-parallel form of
flash-linear-attention's naive reference (fla/ops/linear_attn/naive.py): inside a chunk of C tokens the masked
products tril(QKᵀ)V, across chunks the state S carried from one chunk to the next (n/C dependent steps).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from core.models.layers import loop, merge_heads, split_heads
from core.models.mixers.base import LOOP, MixerLayer, answers_tags, mixer
from core.models.registry import ATTENTION, CHUNKED, TIME_INVARIANT, Spec

EPS = 1e-6


@mixer
class LinearAttention(MixerLayer):
    """Multi-head causal linear attention; the state is S (heads × hs × hs) and z (heads × hs) per sequence."""

    name, family, color, table1 = "linear_attention", ATTENTION, "#17becf", "scan"
    tags = answers_tags(TIME_INVARIANT, "recall_frontier:quick", "real_text")
    forms, source = (LOOP, CHUNKED), "Katharopoulos et al. 2020, Transformers are RNNs"

    @staticmethod
    def steps(n: int, form: str, s: Spec) -> int:
        return n if form == LOOP else math.ceil(n / s.chunk)

    @staticmethod
    def state_floats(n: int, s: Spec) -> int:
        return s.d_model * (s.d_model // s.heads) + s.d_model

    @staticmethod
    def saved(form: str, s: Spec) -> int:
        return (3 * s.d_model // s.heads + 12 if form == LOOP else 2 * s.chunk + 16) * s.d_model

    @classmethod
    def from_spec(cls, s: Spec, form: str) -> LinearAttention:
        return cls(s.d_model, s.heads, form, s.chunk)

    def __init__(self, d_model: int, n_heads: int, form: str = LOOP, chunk: int = 64):
        super().__init__(form)
        self.n_heads, self.chunk = n_heads, chunk
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def recurrence_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q, k, v = split_heads(self.qkv(x), self.n_heads)  # (B, H, T, hs)
        return F.elu(q) + 1, F.elu(k) + 1, v  # φ(q), φ(k), v per head

    def read_out(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.proj(merge_heads(y))

    def _update(self, state: tuple, q_t, k_t, v_t) -> tuple[torch.Tensor, tuple]:
        """One token: (y_t, (S_t, z_t)) from (S_{t−1}, z_{t−1})."""
        S = state[0] + k_t[..., :, None] * v_t[..., None, :]
        z = state[1] + k_t
        return (q_t[..., None, :] @ S).squeeze(-2) / ((q_t * z).sum(-1, keepdim=True) + EPS), (S, z)

    def recur_loop(self, fq: torch.Tensor, fk: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return loop(self._update, self.init_state(fq.shape[0], fq), fq, fk, v, dim=2)

    def recur_chunked(self, fq: torch.Tensor, fk: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, H, T, hs = fq.shape
        C = self.chunk
        pad = -T % C  # zero features at the end: they add nothing to any state, and are cut off after
        fq, fk, v = (F.pad(z, (0, 0, 0, pad)) for z in (fq, fk, v))
        n = (T + pad) // C
        fq, fk, v = (z.view(B, H, n, C, hs) for z in (fq, fk, v))  # (B, H, chunks, C, hs)
        mask = torch.ones(C, C, dtype=torch.bool, device=fq.device).tril()
        scores = (fq @ fk.transpose(-1, -2)).masked_fill(~mask, 0.0)  # (B, H, chunks, C, C): inside each chunk
        num, den = scores @ v, scores.sum(-1, keepdim=True)
        S, z = self.init_state(B, fq)
        nums, dens = [], []
        # unbind, not fq[:, :, i]: one index op's backward writes a zero tensor as large as the whole sequence
        chunks = zip(fq.unbind(2), fk.unbind(2), v.unbind(2), num.unbind(2), den.unbind(2))
        for q_i, k_i, v_i, num_i, den_i in chunks:  # n/C dependent steps: the state after the chunks before
            nums.append(num_i + q_i @ S)
            dens.append(den_i + q_i @ z[..., None])
            S = S + k_i.transpose(-1, -2) @ v_i
            z = z + k_i.sum(-2)
        num = torch.stack(nums, dim=2).view(B, H, n * C, hs)
        den = torch.stack(dens, dim=2).view(B, H, n * C, 1)
        return (num / (den + EPS))[:, :, :T]

    @staticmethod
    def recall(keys: torch.Tensor, values: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
        """Pairs (B, n, d) written into the state S = Σ φ(k) vᵀ, z = Σ φ(k) as `prefill` sums it; queries read as
        `step` reads it: φ(q)ᵀS / φ(q)ᵀz."""
        fk, fq = F.elu(keys) + 1, F.elu(queries) + 1
        S, z = fk.transpose(-1, -2) @ values, fk.sum(-2)  # (B, d, d), (B, d): the fixed state
        return (fq @ S) / ((fq * z[..., None, :]).sum(-1, keepdim=True) + EPS)

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        hs = self.qkv.in_features // self.n_heads
        return like.new_zeros(batch, self.n_heads, hs, hs), like.new_zeros(batch, self.n_heads, hs)

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        fq, fk, v = (z[:, :, 0] for z in self.recurrence_inputs(x_t[:, None]))  # (B, H, hs)
        y, state = self._update(state, fq, fk, v)
        return self.proj(y.reshape(y.shape[0], -1)), state

    def prefill(self, x: torch.Tensor, state: tuple) -> tuple:
        """Exact and parallel: the state is a sum over the tokens read."""
        _, fk, v = self.recurrence_inputs(x)
        return state[0] + fk.transpose(-1, -2) @ v, state[1] + fk.sum(2)
