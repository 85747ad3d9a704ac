"""A minimal selective state-space layer in the manner of Mamba's S6 (Gu & Dao 2023, Algorithm 2), in plain PyTorch:
a minimal reimplementation for measuring, not the fused CUDA kernel of the mamba_ssm package.

Per channel c a state of N numbers: with input-dependent step Δ_t = softplus(W_Δ x_t + b_Δ) (per channel) and
B_t, C_t = W_B x_t, W_C x_t (N each), and a fixed diagonal negative A = −exp(A_log) (channels × N),

    h_t = exp(Δ_t A) ⊙ h_{t−1} + (Δ_t ⊙ x_t) B_t,    y_t = C_t · h_t + D ⊙ x_t,    output W_o y_t

(zero-order hold for A, the Euler step Δ·B for the input, as mamba-minimal and the official selective_scan_ref do).
`loop` walks the n steps; `scan` is the linear-space parallel scan of core.models.mixers.base over all (channel,
state) pairs at once, as the pure-PyTorch Mamba ports do (mamba.py's pscan): the input term has either sign, and a
log-space scan would need two scans of its positive and negative parts over channels × N numbers per token.
"""

from __future__ import annotations

import math
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from core.models.layers import loop
from core.models.mixers.base import LOOP, LinearRecurrence, answers_tags, mixer, scan
from core.models.registry import SELECTIVE, Spec


@mixer
class SelectiveSSM(LinearRecurrence):
    """S6-style selective SSM, state d_model × d_state per sequence."""

    name, color, tags = "selective_ssm", "#9467bd", answers_tags(SELECTIVE)
    source = "Gu & Dao 2023, Mamba (S6, minimal reimplementation)"

    @staticmethod
    def state_floats(n: int, s: Spec) -> int:
        return s.d_model * s.d_state

    @staticmethod
    def saved(form: str, s: Spec) -> int:
        return (8 if form == LOOP else 24) * s.d_model * s.d_state

    @classmethod
    def from_spec(cls, s: Spec, form: str) -> SelectiveSSM:
        return cls(s.d_model, form, s.d_state)

    def __init__(self, d_model: int, form: str = LOOP, d_state: int = 16):
        super().__init__(form)
        d, N = d_model, d_state
        self.d_state = N
        self.to_dt = nn.Linear(d, d)
        self.to_bc = nn.Linear(d, 2 * N, bias=False)
        # S4D-real init A = −(1, 2, …, N) per channel; Δ between 0.001 and 0.1 (Mamba's dt init, inverse softplus)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, N + 1, dtype=torch.float32)).repeat(d, 1))
        self.D = nn.Parameter(torch.ones(d))
        dt = torch.exp(torch.rand(d) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
        with torch.no_grad():
            self.to_dt.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
        self.output = nn.Linear(d, d)

    def recurrence_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Δ (…, d), B and C (…, N), A (d, N) and the input itself (the state's input term is Δ·x·B)."""
        B, C = self.to_bc(x).chunk(2, dim=-1)
        return F.softplus(self.to_dt(x)), B, C, -torch.exp(self.A_log), x

    def read_out(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.output(y + self.D * x)

    def _update(self, h, dt, B, C, x, *, A) -> tuple[torch.Tensor, torch.Tensor]:
        """One token: (C_t · h_t, h_t) from h_{t−1}."""
        h = torch.exp(dt[..., None] * A) * h + (dt * x)[..., None] * B[:, None, :]
        return (h * C[:, None, :]).sum(-1), h

    def recur_loop(self, dt, B, C, A, x) -> torch.Tensor:
        """C_t · h_t per token, the states h_t (d × N each) read out as they are made: none is kept."""
        return loop(partial(self._update, A=A), self.init_state(x.shape[0], x)[0], dt, B, C, x)

    def recur_scan(self, dt, B, C, A, x) -> torch.Tensor:
        a = torch.exp(dt[..., None] * A)  # (batch, T, d, N): the decay, in (0, 1]
        b = (dt * x)[..., None] * B[:, :, None, :]
        h = scan(a, b)
        return (h * C[:, :, None, :]).sum(-1)

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        return (like.new_zeros(batch, self.D.shape[0], self.d_state),)

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        dt, B, C, A, _ = self.recurrence_inputs(x_t)
        y, h = self._update(state[0], dt, B, C, x_t, A=A)
        return self.output(y + self.D * x_t), (h,)
