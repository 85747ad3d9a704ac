"""The chapter's own models as mixers, for decoding: the fused nn.LSTM / nn.GRU layer and the Pre-LN Transformer
block of core.models.registry, each reading one token at a time — the recurrent ones through their state, the
block through a KV cache that keeps one key and one value per token (Shazeer 2019's cache of every past token),
growing a page of core.harness.memory_formulas.KV_PAGE tokens at a time as a server's does.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from core.models import paged_cache
from core.models.layers import merge_heads, split_heads
from core.models.mixers.base import FUSED, ChunkMixer, MixerLayer


class FusedRecurrent(ChunkMixer):
    """A registry layer holding `.rnn` (nn.LSTM or nn.GRU): training runs the fused kernel; decoding feeds it one
    token at a time with its state (h, or h and c)."""

    def __init__(self, layer: torch.nn.Module):
        super().__init__(FUSED)
        self.layer = layer

    def forward_fused(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        rnn = self.layer.rnn
        zeros = like.new_zeros(rnn.num_layers, batch, rnn.hidden_size)
        return (zeros, zeros.clone()) if isinstance(rnn, torch.nn.LSTM) else (zeros,)

    def run(self, x: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        """The fused kernel reads the whole chunk, starting from `state`."""
        out, new = self.layer.rnn(x, state if len(state) == 2 else state[0])
        return out, (new if isinstance(new, tuple) else (new,))


class CachedBlock(MixerLayer):
    """A Pre-LN Transformer block (core.models.layers.Block) decoding with a KV cache: x + attn(ln1 x), then
    x + mlp(ln2 x); the cache holds the keys and values of every token read, in whole pages
    (2 · tokens_held(tokens) · d_model numbers, core.harness.memory_formulas)."""

    def __init__(self, block: torch.nn.Module):
        super().__init__(FUSED)
        self.block = block

    def forward_fused(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)

    def _kv(self, x: torch.Tensor):
        return split_heads(self.block.attn.qkv(self.block.ln1(x)), self.block.attn.n_heads)  # (B, H, T, hs)

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        d = self.block.attn.qkv.in_features
        empty = like.new_zeros(batch, self.block.attn.n_heads, 0, d // self.block.attn.n_heads)
        return empty, empty.clone()

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        x = x_t[:, None]  # (B, 1, d)
        q, k, v = self._kv(x)
        keys, values = paged_cache.append(state[0], k), paged_cache.append(state[1], v)  # (B, H, past+1, hs)
        y = F.scaled_dot_product_attention(q, keys, values)  # the newest query may see every cached key
        x = x + self.block.attn.proj(merge_heads(y))
        x = x + self.block.mlp(self.block.ln2(x))
        return x[:, 0], (keys, values)

    def prefill(self, x: torch.Tensor, state: tuple) -> tuple:
        """Reading a context only needs its keys and values: one parallel projection, no attention."""
        _, k, v = self._kv(x)
        return paged_cache.append(state[0], k), paged_cache.append(state[1], v)
