"""An RWKV-4-style time-mix (Peng et al. 2023, §3.1 and Eq. 14): per-channel exponential decay w ≥ 0, a bonus u
for the current token, token shift, and a receptance gate.

    wkv_t = (Σ_{i<t} e^{−(t−1−i)w + k_i} v_i + e^{u + k_t} v_t) / (Σ_{i<t} e^{−(t−1−i)w + k_i} + e^{u + k_t})
    y_t   = W_o (σ(r_t) ⊙ wkv_t)

`loop` is the recurrence of the official kernel, numerically stable through a running maximum exponent p:
α and β are kept as (a, b)·e^p. `scan` is the same sums as log-space scans of α_t = e^{−w}α_{t−1} + e^{k_t}v_t
and β_t = e^{−w}β_{t−1} + e^{k_t} (v split into two positive parts), combined with the bonus term at a common max.
"""

from __future__ import annotations

import math
from functools import partial

import torch
from torch import nn

from core.models.layers import loop
from core.models.mixers.base import LOOP, TINY, LinearRecurrence, answers_tags, log_scan, mixer, per_form
from core.models.registry import TIME_INVARIANT, Spec

NEG = -1e38  # the running maximum before any token (the official kernel's start value)


@mixer
class RWKVTimeMix(LinearRecurrence):
    """RWKV-4 time-mix; the state between tokens is (a, b, p, x_{t−1}), four vectors per sequence."""

    name, color, tags = "rwkv", "#8c564b", answers_tags(TIME_INVARIANT)
    source, saved = "Peng et al. 2023, RWKV (RWKV-4 time-mix)", per_form(30, 40)

    @staticmethod
    def state_floats(n: int, s: Spec) -> int:
        return 4 * s.d_model

    def __init__(self, d_model: int, form: str = LOOP):
        super().__init__(form)
        d = d_model
        ratio = torch.arange(d, dtype=torch.float32) / max(1, d - 1)
        # RWKV-4's decay init spans slow to fast channels; capped at w = e^1 here so the float32 log-space scan
        # stays precise over 32K tokens (its cumulative decay −t·w is the number that loses digits)
        self.time_decay = nn.Parameter(-5 + 6 * ratio**0.7)  # w = exp(time_decay) in [e^-5, e^1]
        self.time_first = nn.Parameter(torch.full((d,), math.log(0.3)) + 0.5 * ((torch.arange(d) + 1) % 3 - 1))
        self.mix_k = nn.Parameter(ratio**0.5)
        self.mix_v = nn.Parameter(ratio**0.5 * 0.9 + 0.1)
        self.mix_r = nn.Parameter(ratio**0.25)
        self.key, self.value, self.receptance = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.output = nn.Linear(d, d, bias=False)

    def _project(self, x: torch.Tensor, prev: torch.Tensor):
        """k, v, σ(r) from x and the token before it (token shift)."""
        mix = lambda m: x * m + prev * (1 - m)
        return self.key(mix(self.mix_k)), self.value(mix(self.mix_v)), torch.sigmoid(self.receptance(mix(self.mix_r)))

    def _shifted(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x.new_zeros(x.shape[0], 1, x.shape[2]), x[:, :-1]], dim=1)  # x_{t−1}, zero before t = 0

    def recurrence_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        k, v, _ = self._project(x, self._shifted(x))
        return k, v, torch.exp(self.time_decay), self.time_first  # k, v, w, u: wkv_t reads nothing else

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k, v, r = self._project(x, self._shifted(x))  # r gates the output: the recurrence reads k, v, w and u
        return self.output(r * self.recurrence(self.form)(k, v, torch.exp(self.time_decay), self.time_first))

    def recur_loop(self, k: torch.Tensor, v: torch.Tensor, w: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return loop(partial(_wkv_step, w=w, u=u), self.init_state(k.shape[0], k)[:3], k, v)

    def recur_scan(self, k: torch.Tensor, v: torch.Tensor, w: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        log_a = (-w).expand_as(k)
        half = 0.5 * v.abs() + TINY
        log_alpha_pos = log_scan(log_a, k + torch.log(torch.relu(v) + half))  # α⁺ − α⁻ = α
        log_alpha_neg = log_scan(log_a, k + torch.log(torch.relu(-v) + half))
        log_beta = log_scan(log_a, k)

        def before(z):  # the sums up to t − 1: shifted one step, nothing (log 0) before t = 0
            return torch.cat([torch.full_like(z[:, :1], float("-inf")), z[:, :-1]], dim=1)

        lap, lan, lb = before(log_alpha_pos), before(log_alpha_neg), before(log_beta)
        bonus = u + k
        m = torch.maximum(lb, bonus)  # every term is scaled by e^{−m}: none overflows
        num = torch.exp(lap - m) - torch.exp(lan - m) + torch.exp(bonus - m) * v
        den = torch.exp(lb - m) + torch.exp(bonus - m)
        return num / den

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        d = self.key.in_features
        zeros = like.new_zeros(batch, d)
        return zeros, zeros.clone(), torch.full_like(zeros, NEG), zeros.clone()

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        a, b, p, prev = state
        k, v, r = self._project(x_t, prev)
        wkv, (a, b, p) = _wkv_step((a, b, p), k, v, w=torch.exp(self.time_decay), u=self.time_first)
        return self.output(r * wkv), (a, b, p, x_t.clone())  # a copy: the state owns what it keeps


def _wkv_step(state, k, v, *, w, u):
    """One step of the official stable recurrence: wkv_t from the state (a, b, p), then the state after token t."""
    a, b, p = state
    ww = u + k
    q = torch.maximum(p, ww)
    e1, e2 = torch.exp(p - q), torch.exp(ww - q)
    wkv = (e1 * a + e2 * v) / (e1 * b + e2)
    ww = p - w
    q = torch.maximum(ww, k)
    e1, e2 = torch.exp(ww - q), torch.exp(k - q)
    return wkv, (e1 * a + e2 * v, e1 * b + e2, q)
