"""minGRU and minLSTM (Feng et al. 2024, "Were RNNs All We Needed?"): a GRU and an LSTM whose gates read only the
input, so the state update is linear in the state, h_t = a_t ⊙ h_{t−1} + b_t, and n dependent steps become a scan.

Both forms compute the same function (tests/test_mixers.py): `loop` walks the n steps one after another (the gates
of all steps are computed at once first: they never read h), `scan` is the parallel scan of core.models.mixers.base,
2⌈log₂ n⌉ dependent steps. The paper scans in log space (Heinsen 2023: a cumsum and a logcumsumexp); here the scan is
in linear space, which the decays in (0, 1) allow: on this lab's 2-core CPU, torch.logcumsumexp's forward and
backward alone took 44 ms at n = 1024 (batch 8, width 128) against 6 ms for the whole linear scan, and made the
"parallel" form slower than the loop it replaces. The candidate state still goes through the paper's g (x + 0.5 for
x ≥ 0, σ(x) below), so the layer is the paper's.
"""

from __future__ import annotations

import torch
from torch import nn

from core.models.mixers.base import LOOP, MixerLayer, g, scan


class MinGRU(MixerLayer):
    """minGRU: z_t = σ(W_z x_t), h̃_t = g(W_h x_t), h_t = (1 − z_t) ⊙ h_{t−1} + z_t ⊙ h̃_t (Feng et al. 2024, §3.1)."""

    def __init__(self, d_model: int, form: str = LOOP):
        super().__init__(form)
        self.to_gates = nn.Linear(d_model, 2 * d_model)  # z and h̃ together: 2·d² weights, a third of a GRU's

    def recurrence_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        k, v = self.to_gates(x).chunk(2, dim=-1)  # (B, T, d) each
        return torch.sigmoid(k), g(v)  # z, h̃

    def recur_loop(self, z: torch.Tensor, h_tilde: torch.Tensor) -> torch.Tensor:
        h = z.new_zeros(z.shape[0], z.shape[2])
        outs = []
        # unbind, not z[:, t]: the backward of one index op writes a zero tensor as large as z (O(n) per step)
        for z_t, h_t in zip(z.unbind(1), h_tilde.unbind(1)):  # n dependent steps
            h = (1 - z_t) * h + z_t * h_t
            outs.append(h)
        return torch.stack(outs, dim=1)

    def recur_scan(self, z: torch.Tensor, h_tilde: torch.Tensor) -> torch.Tensor:
        return scan(1 - z, z * h_tilde)

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        return (like.new_zeros(batch, self.to_gates.in_features),)

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        z, h_tilde = self.recurrence_inputs(x_t)
        h = (1 - z) * state[0] + z * h_tilde
        return h, (h,)


class MinLSTM(MixerLayer):
    """minLSTM: f_t, i_t = σ(W_f x_t), σ(W_i x_t), h̃_t = g(W_h x_t), normalised f′ = f/(f+i), i′ = i/(f+i),
    h_t = f′_t ⊙ h_{t−1} + i′_t ⊙ h̃_t (Feng et al. 2024, §3.2)."""

    def __init__(self, d_model: int, form: str = LOOP):
        super().__init__(form)
        self.to_gates = nn.Linear(d_model, 3 * d_model)  # f, i and h̃

    def recurrence_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        kf, ki, v = self.to_gates(x).chunk(3, dim=-1)
        f, i = torch.sigmoid(kf), torch.sigmoid(ki)
        return f / (f + i), i / (f + i), g(v)  # f′, i′, h̃

    def recur_loop(self, f: torch.Tensor, i: torch.Tensor, h_tilde: torch.Tensor) -> torch.Tensor:
        h = f.new_zeros(f.shape[0], f.shape[2])
        outs = []
        for f_t, i_t, h_t in zip(f.unbind(1), i.unbind(1), h_tilde.unbind(1)):  # n dependent steps
            h = f_t * h + i_t * h_t
            outs.append(h)
        return torch.stack(outs, dim=1)

    def recur_scan(self, f: torch.Tensor, i: torch.Tensor, h_tilde: torch.Tensor) -> torch.Tensor:
        return scan(f, i * h_tilde)

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        return (like.new_zeros(batch, self.to_gates.in_features),)

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        f, i, h_tilde = self.recurrence_inputs(x_t)
        h = f * state[0] + i * h_tilde
        return h, (h,)
