"""What every token mixer of page 5 shares: one module interface (forms, decoding, facts) and the scans.

A mixer is an `nn.Module` mapping (B, T, d) → (B, T, d) through `forward`, computed in the form it was built with
(`loop`, `scan`, `chunked` or `fused`; every form of one mixer computes the same function, tested). For inference
it also reads one token at a time: `init_state(batch, like)` → state, `step(x_t, state)` → (y_t, state), and
`prefill(x, state)` → state reads a whole chunk (a loop of `step` unless the mixer has a faster exact way).
A state is a tuple of tensors: everything the mixer keeps per sequence between tokens.

Its facts (name, family, forms, steps, state kept, bytes saved, Table 1 row, source, colour, tags) are class
attributes named as `core.models.registry.Model`'s fields; `@mixer` registers the class as that record.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from core.models.registry import ANSWERS, CHUNKED, FUSED, LOOP, RECURRENT, SCAN, Model, Spec, register  # noqa: F401

TINY = 1e-30  # keeps a log finite where a ± split leaves a value of exactly 0


class MixerLayer(nn.Module):
    """Base class: `forward` dispatches to `forward_<form>`, or where the mixer has none, runs its recurrence in
    that form between `recurrence_inputs` and `read_out`; decoding through `step`."""

    def __init__(self, form: str):
        super().__init__()
        self.form = form

    @classmethod
    def from_spec(cls, s: Spec, form: str) -> MixerLayer:
        """The layer sized by a Spec (a mixer with more sizes than the width overrides this)."""
        return cls(s.d_model, form)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        own = getattr(self, f"forward_{self.form}", None)
        if own is not None:
            return own(x)
        return self.read_out(x, self.recurrence(self.form)(*self.recurrence_inputs(x)))

    def read_out(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The layer's output from its input and what its recurrence returned (by default that itself)."""
        return y

    def recurrence_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, ...] | None:
        """The tensors the mixer's recurrence reads (its gates, decays, keys), computed from `x` exactly as every
        form computes them; None where there is no recurrence to separate (a window, a convolution, a library
        kernel). What comes before them and after the recurrence is the same in every form."""
        return None

    def recurrence(self, form: str) -> Callable[..., torch.Tensor]:
        """The recurrence alone in `form`: from `recurrence_inputs` to what the form's sequential or parallel part
        returns (the states, or their per-token readout) — the part a parallel form replaces, and what `forward`
        itself calls."""
        return getattr(self, f"recur_{form}")

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        raise NotImplementedError

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        raise NotImplementedError

    def prefill(self, x: torch.Tensor, state: tuple) -> tuple:
        """The state after reading every token of `x` (B, T, d) from `state`."""
        for x_t in x.unbind(1):
            _, state = self.step(x_t, state)
        return state


def scan_depth(n: int) -> int:
    """Dependent steps of a parallel scan over n elements: an up- and a down-sweep of ⌈log₂ n⌉ levels (Blelloch)."""
    return 2 * max(1, math.ceil(math.log2(max(n, 2))))


class LinearRecurrence(MixerLayer):
    """A state updated linearly, h_t = a_t·h_{t−1} + b_t: n steps as a loop, or a scan of depth 2⌈log₂ n⌉."""

    family, forms, table1 = RECURRENT, (LOOP, SCAN), "scan"

    @staticmethod
    def steps(n: int, form: str, s: Spec) -> int:
        return n if form == LOOP else scan_depth(n)


def answers_tags(*tags: str) -> frozenset:
    """Page 5's tags: its own, its gradient reach's and its recall frontier's, plus `tags`."""
    return frozenset({ANSWERS, "gradient_reach", "answers_reach", "recall_frontier", *tags})


def per_form(loop: int, parallel: int) -> Callable[[str, Spec], int]:
    """A `saved` fact: floats per token and channel kept for backward by the loop form, else the parallel one."""
    return staticmethod(lambda form, s: (loop if form == LOOP else parallel) * s.d_model)


FACTS = tuple(f.name for f in dataclasses.fields(Model) if f.name != "make")


def mixer(cls: type[MixerLayer]) -> type[MixerLayer]:
    """Registers the class as a model: its attributes named as Model's fields are the record's facts."""
    own = {k: v for klass in reversed(cls.__mro__) if issubclass(klass, MixerLayer) for k, v in vars(klass).items()}
    facts = {f: getattr(cls, f) for f in FACTS if f in own}
    register(Model(make=cls.from_spec, **facts))
    return cls


class ChunkMixer(MixerLayer):
    """A mixer that reads a chunk of tokens from a state exactly, in one call: `run(x, state)` → (y, state)."""

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        y, state = self.run(x_t[:, None], state)
        return y[:, 0], state

    def prefill(self, x: torch.Tensor, state: tuple) -> tuple:
        return self.run(x, state)[1]


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


def _sweep_(a: torch.Tensor, x: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    """In place along dim 1, whose length is a power of 2: x becomes h for h_t = a_t·h_{t−1} + x_t (or, with
    `reverse`, h_t = a_t·h_{t+1} + x_t), as the work-efficient up-sweep and down-sweep of Blelloch 1990 (the in-place
    form of mamba.py's pscan). Level k combines elements 2^k apart, all of them at once: ⌈log₂ n⌉ levels up and as
    many down, O(n) work. `reverse` runs the mirror image of the same sweeps, so no flipped copies are made."""
    levels = x.shape[1].bit_length() - 1
    first, second = (1, 0) if reverse else (0, 1)  # which of a pair is folded into the other
    for k in range(levels):  # up: each pair's receiving element holds its block of 2^(k+1)
        s = 1 << k
        sl = slice(0, None, s) if reverse else slice(s - 1, None, s)
        ak, xk = a[:, sl].unflatten(1, (-1, 2)), x[:, sl].unflatten(1, (-1, 2))
        xk[:, :, second].addcmul_(ak[:, :, second], xk[:, :, first])
        ak[:, :, second].mul_(ak[:, :, first])
    for k in range(levels - 2, -1, -1):  # down: the other element of each pair from the finished one before it
        s = 1 << k
        sl = slice(0, None, s) if reverse else slice(s - 1, None, s)
        ak, xk = a[:, sl].unflatten(1, (-1, 2)), x[:, sl].unflatten(1, (-1, 2))
        if reverse:
            xk[:, :-1, 1].addcmul_(ak[:, :-1, 1], xk[:, 1:, 0])
        else:
            xk[:, 1:, 0].addcmul_(ak[:, 1:, 0], xk[:, :-1, 1])
    return x


def _padded(t: torch.Tensor, length: int, fill: float) -> torch.Tensor:
    """A fresh copy of t along dim 1, extended to `length` with `fill` (the sweep works in place)."""
    if t.shape[1] == length:
        return t.clone()
    out = t.new_empty(t.shape[0], length, *t.shape[2:])
    out[:, : t.shape[1]] = t
    out[:, t.shape[1] :] = fill
    return out


class _Scan(torch.autograd.Function):
    """h for h_t = a_t·h_{t−1} + b_t along dim 1: forward one sweep; backward the adjoint recurrence, which is the
    same scan run backwards, g_t = ∂L/∂h_t + a_{t+1}·g_{t+1}, so ∂L/∂b_t = g_t and ∂L/∂a_t = g_t·h_{t−1}. Autograd
    through the sweep's ~4·log₂ n in-place steps would keep a copy per step; this keeps a and h."""

    @staticmethod
    def forward(ctx, a, b):
        T = a.shape[1]
        P = 1 << max(0, (T - 1).bit_length())  # padded with a = 1, b = 0: steps that leave h as it is
        h = _sweep_(_padded(a, P, 1.0), _padded(b, P, 0.0))[:, :T]
        ctx.save_for_backward(a, h)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        a, h = ctx.saved_tensors
        T = a.shape[1]
        P = 1 << max(0, (T - 1).bit_length())
        a_next = a.new_zeros(a.shape[0], P, *a.shape[2:])  # a_{t+1}; nothing flows back from beyond the end
        a_next[:, : T - 1] = a[:, 1:]
        g = _sweep_(a_next, _padded(grad_h, P, 0.0), reverse=True)[:, :T]
        grad_a = torch.zeros_like(a)
        torch.mul(g[:, 1:], h[:, :-1], out=grad_a[:, 1:])  # h_{−1} = 0: the first decay has no gradient
        return grad_a, g


def scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """h for h_t = a_t·h_{t−1} + b_t from h_{−1} = 0, along dim 1, in linear space, as a parallel scan of depth
    2⌈log₂ n⌉. Needs |a| ≤ 1 only to stay finite: products of decays may underflow to 0 (their true value is that
    small), nothing can overflow, and b may have any sign. On a CPU this is several times faster than the log-space
    scan (torch.logcumsumexp and its backward are the slow part there) and keeps more digits."""
    return _Scan.apply(a, b)


def g(x: torch.Tensor) -> torch.Tensor:
    """minGRU/minLSTM's positive activation: x + 0.5 for x ≥ 0, σ(x) below (keeps h > 0, as the paper's log-space
    scan needs), written as relu(x) + σ(min(x, 0)): the same values, and half the time of torch.where on a CPU."""
    return F.relu(x) + torch.sigmoid(x.clamp(max=0))
