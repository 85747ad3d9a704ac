"""Restricted self-attention, the row of Vaswani et al.'s Table 1 the other pages do not measure: each token attends
to the r tokens up to itself.

`chunked`: queries in blocks of r; a block attends to its own keys and the previous block's, masked to the window,
so the work is about 2·r·n·d, not the n² that a banded mask handed to SDPA over the whole sequence still computes
(`banded`, kept only as the tests' reference definition).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from core.models.layers import merge_heads, split_heads
from core.models.mixers.base import CHUNKED, MixerLayer, answers_tags, mixer
from core.models.registry import ATTENTION, Spec


@mixer
class SlidingWindow(MixerLayer):
    """Causal multi-head softmax attention over the last `window` tokens (the token itself included)."""

    name, family, color, tags = "sliding_window", ATTENTION, "#2ca02c", answers_tags()
    forms, table1, source = (CHUNKED,), "restricted", "Vaswani et al. 2017, restricted self-attention (Table 1)"
    reach_depth, reference, reference_max_len = 4, "banded", 2048  # its reach in steps of r; a dense check costs n²

    @staticmethod
    def steps(n: int, form: str, s: Spec) -> int:
        return 1

    @staticmethod
    def state_floats(n: int, s: Spec) -> int:
        return 2 * min(n, s.window) * s.d_model

    @staticmethod
    def saved(form: str, s: Spec) -> int:
        return 16 * s.d_model + 4 * s.window * s.heads

    @classmethod
    def from_spec(cls, s: Spec, form: str) -> SlidingWindow:
        return cls(s.d_model, s.heads, form, s.window)

    def __init__(self, d_model: int, n_heads: int, form: str = CHUNKED, window: int = 32):
        super().__init__(form)
        self.n_heads, self.window = n_heads, window
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward_banded(self, x: torch.Tensor) -> torch.Tensor:
        """The definition, as one banded mask over the whole n × n score matrix."""
        q, k, v = split_heads(self.qkv(x), self.n_heads)
        t = torch.arange(x.shape[1], device=x.device)
        band = (t[None, :] <= t[:, None]) & (t[None, :] > t[:, None] - self.window)  # key s allowed for query t
        return self.proj(merge_heads(F.scaled_dot_product_attention(q, k, v, attn_mask=band)))

    def forward_chunked(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = split_heads(self.qkv(x), self.n_heads)
        B, H, T, hs = q.shape
        r = self.window
        pad = -T % r
        q, k, v = (F.pad(z, (0, 0, 0, pad)) for z in (q, k, v))
        n = (T + pad) // r
        q = q.reshape(B, H * n, r, hs)  # block b of head h at index h·n + b
        k, v = (z.view(B, H, n, r, hs) for z in (k, v))
        k2, v2 = (torch.cat([F.pad(z, (0, 0, 0, 0, 1, 0))[:, :, :-1], z], dim=3) for z in (k, v))  # prev + own block
        i = torch.arange(r, device=x.device)[:, None]
        j = torch.arange(2 * r, device=x.device)[None, :]
        inside = (j > i) & (j <= i + r)  # key j of [previous block, own block] is within query i's window
        mask = inside.expand(n, r, 2 * r).clone()
        mask[0, :, :r] = False  # the first block has no previous block
        mask = mask.repeat(H, 1, 1)  # (H·n, r, 2r)
        y = F.scaled_dot_product_attention(
            q, k2.reshape(B, H * n, 2 * r, hs), v2.reshape(B, H * n, 2 * r, hs), attn_mask=mask
        )
        return self.proj(merge_heads(y.view(B, H, n * r, hs)[:, :, :T]))

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        hs = self.qkv.in_features // self.n_heads
        empty = like.new_zeros(batch, self.n_heads, 0, hs)
        return empty, empty.clone()

    def _append(self, state: tuple, k, v) -> tuple:
        """The cache with new keys and values, cut to the last `window` tokens (a copy: no wider storage kept)."""
        return tuple(torch.cat([s, z], dim=2)[:, :, -self.window :].clone() for s, z in zip(state, (k, v)))

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        q, k, v = split_heads(self.qkv(x_t[:, None]), self.n_heads)
        state = self._append(state, k, v)
        y = F.scaled_dot_product_attention(q, state[0], state[1])  # the one query sees every cached key
        return self.proj(merge_heads(y))[:, 0], state

    def prefill(self, x: torch.Tensor, state: tuple) -> tuple:
        _, k, v = split_heads(
            self.qkv(x[:, -self.window :]), self.n_heads
        )  # only the last r tokens' keys and values are kept
        return self._append(state, k, v)
