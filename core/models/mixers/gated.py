"""minGRU and minLSTM (Feng et al. 2024, "Were RNNs All We Needed?"): a GRU and an LSTM whose gates read only the
input, so the state update is linear in the state, h_t = a_t ⊙ h_{t−1} + b_t, and n dependent steps become a scan.

Both forms compute the same function (tests/test_mixers.py): `loop` walks the n steps one after another (the gates
of all steps are computed at once first: they never read h), `scan` is the parallel scan of core.models.mixers.base,
2⌈log₂ n⌉ dependent steps. The paper scans in log space (Heinsen 2023); here the scan is in linear space, which the
decays in (0, 1) allow, and which a CPU runs much faster (the answers page's method gives the figures). The candidate
state still goes through the paper's g, so the layer is the paper's.
"""

from __future__ import annotations

import torch
from torch import nn

from core.models.layers import loop
from core.models.mixers.base import LOOP, LinearRecurrence, answers_tags, g, mixer, per_form, scan
from core.models.registry import SELECTIVE, Spec

FENG = "Feng et al. 2024, Were RNNs All We Needed?"


class _MinRNN(LinearRecurrence):
    """What minGRU and minLSTM share: a state h of d numbers, one token's step `update(h, *gates_t)` → (h_t, h_t)."""

    source = FENG

    @staticmethod
    def state_floats(n: int, s: Spec) -> int:
        return s.d_model

    def recur_loop(self, *gates: torch.Tensor) -> torch.Tensor:
        return loop(self.update, self.init_state(gates[0].shape[0], gates[0])[0], *gates)

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        return (like.new_zeros(batch, self.to_gates.in_features),)

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        h, _ = self.update(state[0], *self.recurrence_inputs(x_t))
        return h, (h,)


@mixer
class MinGRU(_MinRNN):
    """minGRU: z_t = σ(W_z x_t), h̃_t = g(W_h x_t), h_t = (1 − z_t) ⊙ h_{t−1} + z_t ⊙ h̃_t (Feng et al. 2024, §3.1)."""

    name, color, traditional, saved = "min_gru", "#e6550d", "gru", per_form(10, 14)
    tags = answers_tags(SELECTIVE, "recall_frontier:quick", "recall_frontier:tiny", "answers_speed.recurrence:quick")

    def __init__(self, d_model: int, form: str = LOOP):
        super().__init__(form)
        self.to_gates = nn.Linear(d_model, 2 * d_model)  # z and h̃ together: 2·d² weights, a third of a GRU's

    def recurrence_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        k, v = self.to_gates(x).chunk(2, dim=-1)  # (B, T, d) each
        return torch.sigmoid(k), g(v)  # z, h̃

    def update(self, h: torch.Tensor, z: torch.Tensor, h_tilde: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = (1 - z) * h + z * h_tilde
        return h, h

    def recur_scan(self, z: torch.Tensor, h_tilde: torch.Tensor) -> torch.Tensor:
        return scan(1 - z, z * h_tilde)


@mixer
class MinLSTM(_MinRNN):
    """minLSTM: f_t, i_t = σ(W_f x_t), σ(W_i x_t), h̃_t = g(W_h x_t), normalised f′ = f/(f+i), i′ = i/(f+i),
    h_t = f′_t ⊙ h_{t−1} + i′_t ⊙ h̃_t (Feng et al. 2024, §3.2)."""

    name, color, traditional, saved = "min_lstm", "#fd8d3c", "lstm", per_form(12, 18)
    tags = answers_tags(SELECTIVE)

    def __init__(self, d_model: int, form: str = LOOP):
        super().__init__(form)
        self.to_gates = nn.Linear(d_model, 3 * d_model)  # f, i and h̃

    def recurrence_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        kf, ki, v = self.to_gates(x).chunk(3, dim=-1)
        f, i = torch.sigmoid(kf), torch.sigmoid(ki)
        return f / (f + i), i / (f + i), g(v)  # f′, i′, h̃

    def update(self, h: torch.Tensor, f: torch.Tensor, i: torch.Tensor, h_tilde: torch.Tensor) -> tuple:
        h = f * h + i * h_tilde
        return h, h

    def recur_scan(self, f: torch.Tensor, i: torch.Tensor, h_tilde: torch.Tensor) -> torch.Tensor:
        return scan(f, i * h_tilde)
