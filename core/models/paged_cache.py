"""A KV cache that grows a page at a time, as a serving engine's does, instead of being copied at every token.

Appending with torch.cat copies the whole cache for every generated token, which at long contexts costs more than
the attention reading it and would charge attention for work a real server does not do. Here the keys (or values) are a view of a buffer that holds
whole pages of KV_PAGE tokens; a new token is written into the free room in place, and only when a page is full is the
cache copied once into a buffer one page longer (a copy every KV_PAGE tokens, not every token). The memory held is
therefore ⌈n / KV_PAGE⌉ · KV_PAGE tokens' worth (`tokens_held`), which the byte counts and formulas use.
"""

from __future__ import annotations

import torch

from core.harness.memory_formulas import tokens_held


def append(cache: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """cache (B, H, n, hs) followed by new (B, H, m, hs) along dim 2, as a view of a buffer of tokens_held(n + m)
    tokens. The new tokens are written in place when the buffer has room, so a state must not be stepped twice
    (the second step would write over the first's token, as in a server, where a sequence's cache is its own)."""
    B, H, n, hs = cache.shape
    total = n + new.shape[2]
    buf = cache._base if cache._base is not None else cache
    ours = buf.dim() == 4 and buf.shape[:2] == (B, H) and buf.shape[3] == hs and buf.stride() == cache.stride()
    if not ours or cache.data_ptr() != buf.data_ptr() or buf.shape[2] < total:
        buf = cache.new_zeros(B, H, tokens_held(total), hs)  # the next whole page; zeros, so no stale values
        buf[:, :, :n] = cache
    buf[:, :, n:total] = new
    return buf[:, :, :total]
