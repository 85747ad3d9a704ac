"""What every token mixer of page 5 shares: one module interface (forms, decoding) and the log-space scan.

A mixer is an `nn.Module` mapping (B, T, d) → (B, T, d) through `forward`, computed in the form it was built with
(`loop`, `scan`, `chunked` or `fused`; every form of one mixer computes the same function, tested). For inference
it also reads one token at a time: `init_state(batch, like)` → state, `step(x_t, state)` → (y_t, state), and
`prefill(x, state)` → state reads a whole chunk (a loop of `step` unless the mixer has a faster exact way).
A state is a tuple of tensors: everything the mixer keeps per sequence between tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

LOOP, SCAN, CHUNKED, FUSED = "loop", "scan", "chunked", "fused"
TINY = 1e-30  # keeps a log finite where a ± split leaves a value of exactly 0


class MixerLayer(nn.Module):
    """Base class: `forward` dispatches to `forward_<form>`; decoding through `step`."""

    def __init__(self, form: str):
        super().__init__()
        self.form = form

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return getattr(self, f"forward_{self.form}")(x)

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        raise NotImplementedError

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        raise NotImplementedError

    def prefill(self, x: torch.Tensor, state: tuple) -> tuple:
        """The state after reading every token of `x` (B, T, d) from `state`."""
        for x_t in x.unbind(1):
            _, state = self.step(x_t, state)
        return state


def state_bytes(state) -> int:
    """Bytes of the tensors a state holds, each storage counted once."""
    storages = {}
    for t in state:
        if isinstance(t, torch.Tensor):
            storages[(t.device.type, t.untyped_storage().data_ptr())] = t.untyped_storage().nbytes()
    return int(sum(storages.values()))


def log_scan(log_a: torch.Tensor, log_b: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """log h for h_t = a_t·h_{t−1} + b_t from h_0 = 0, with a, b > 0, in log space (Heinsen 2023):
    a*_t = Σ_{s≤t} log a_s and log h_t = a*_t + log Σ_{s≤t} exp(log b_s − a*_s): a cumulative sum and a
    logcumsumexp, two scans of depth ~log₂ n on parallel hardware, instead of n dependent steps."""
    a_star = torch.cumsum(log_a, dim=dim)
    return a_star + torch.logcumsumexp(log_b - a_star, dim=dim)


def tree_scan(a: torch.Tensor, b: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """h for h_t = a_t·h_{t−1} + b_t from h_0 = 0, in linear space, as a work-efficient odd/even tree (the
    recursive form of Blelloch 1990; mamba.py's pscan): pair neighbours, scan the pairs, fill in the evens —
    ⌈log₂ n⌉ levels down and as many up, O(n) work. Needs 0 ≤ a ≤ 1 only to stay finite: products of decays
    may underflow to 0 (their true value is that small), nothing can overflow, and b may have any sign."""
    T = a.shape[dim]
    if T == 1:
        return b
    if T % 2:  # an identity element (a = 1, b = 0) at the end, cut off again
        pad = [0, 0] * (a.dim() - dim - 1) + [0, 1]
        return tree_scan(F.pad(a, pad, value=1.0), F.pad(b, pad), dim).narrow(dim, 0, T)
    half = T // 2
    a_e, a_o = a.unflatten(dim, (half, 2)).unbind(dim + 1)  # positions 0, 2, 4, … and 1, 3, 5, …
    b_e, b_o = b.unflatten(dim, (half, 2)).unbind(dim + 1)
    h_o = tree_scan(a_e * a_o, a_o * b_e + b_o, dim)  # each pair as one step: the states at the odd positions
    rest = a_e.narrow(dim, 1, half - 1) * h_o.narrow(dim, 0, half - 1) + b_e.narrow(dim, 1, half - 1)
    h_e = torch.cat([b_e.narrow(dim, 0, 1), rest], dim)  # an even position: one step after the odd before it
    return torch.stack([h_e, h_o], dim + 1).flatten(dim, dim + 1)


def g(x: torch.Tensor) -> torch.Tensor:
    """minGRU/minLSTM's positive activation: x + 0.5 for x ≥ 0, σ(x) below (keeps h > 0 for the log scan)."""
    return torch.where(x >= 0, x + 0.5, torch.sigmoid(x))


def log_g(x: torch.Tensor) -> torch.Tensor:
    """log g(x), computed without forming g where it would lose precision."""
    return torch.where(x >= 0, torch.log(F.relu(x) + 0.5), -F.softplus(-x))


def heads_view(z: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, d) → (B, H, T, d/H)."""
    B, T, C = z.shape
    return z.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(z: torch.Tensor) -> torch.Tensor:
    """(B, H, T, hs) → (B, T, H·hs)."""
    B, H, T, hs = z.shape
    return z.transpose(1, 2).reshape(B, T, H * hs)
