"""The attention-implementation registry: one record per way of computing (or replacing) attention.

What each implementation computes (exact softmax attention, a different function, or a recurrent state), how its
time and memory should grow with n, its analytic FLOPs, the bytes it keeps for backward by formula, a generous
peak for the memory guard, and what a whole model of it would hold at long n: the record answers, so the
attention-cost experiment, its findings and its charts never ask an implementation's name. This module imports no
torch (the kernels live in `core.models.layers` and are imported when called); adding an implementation (sliding-window, chunked) is
one `register(...)` call plus its catalogue strings (`attention_cost.impl.<name>`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from functools import partial

from core.harness.memory_formulas import score_bytes

AUTO = "auto"  # SDPA chooses its backend; any other backend is forced with sdpa_kernel
BACKENDS = (AUTO, "flash", "efficient", "cudnn", "math")
NO_BACKEND = "-"  # the backend column of an implementation that has none


def forced(backend: str) -> bool:
    """Whether a requested SDPA backend was forced (rather than left to SDPA's own choice, or not applicable)."""
    return backend not in (AUTO, NO_BACKEND)


@dataclasses.dataclass(frozen=True)
class Shape:
    """One attention call: batch, heads, length, head size, bytes per element, causal mask."""

    batch_size: int
    n_heads: int
    seq_len: int
    head_dim: int
    elem_bytes: float = 4
    causal: bool = False


@dataclasses.dataclass(frozen=True)
class AttentionImpl:
    name: str
    computes: str  # 'softmax' (exact attention), 'linear' (a different function), 'state' (a recurrence reading n)
    mode: str  # 'train' (forward + backward of one call) or 'inference' (reading n tokens once)
    time_exponent: int  # how its time grows with n: 2 for softmax attention, 1 otherwise
    memory_exponent: int  # how the bytes it keeps grow with n: 2 materialised, 1 fused or linear, 0 a fixed state
    flops: Callable[[Shape], float]  # forward + backward (or inference) FLOPs
    predicted_bytes: Callable[[Shape, str, str], float]  # (shape, backend, device type) → a generous peak
    attend: Callable | None = None  # (q, k, v, causal, backend) → output, for mode 'train'
    uses_backends: bool = False  # SDPA: auto or a forced backend
    saved_formula: Callable[[Shape, str], float] | None = None  # exact bytes kept for backward, fp32, if known
    model_bytes: Callable[[int, Shape], float] | None = None  # what L layers keep for backward at long n (formula)
    latency_bound: bool = False  # n dependent steps: predicted from the step latency when nothing was measured

    def backends(self, requested: tuple[str, ...]) -> tuple[str, ...]:
        """The backend variants to run: the requested ones for SDPA, else none."""
        return tuple(requested) if self.uses_backends else (NO_BACKEND,)

    def label(self, backend_ran: str, requested: str) -> str:
        """'naive', 'sdpa (auto → flash)', 'sdpa (math)': a row's implementation as the takeaways name it."""
        if not self.uses_backends:
            return self.name
        return f"{self.name} (auto → {backend_ran})" if requested == AUTO else f"{self.name} ({backend_ran})"


IMPLS: dict[str, AttentionImpl] = {}


def register(impl: AttentionImpl) -> AttentionImpl:
    IMPLS[impl.name] = impl
    return impl


def get(name: str) -> AttentionImpl:
    if name not in IMPLS:
        raise ValueError(f"impl: {name!r} is not one of {', '.join(IMPLS)}")
    return IMPLS[name]


def find(among, **facts) -> str | None:
    """The first implementation among `among` whose record has every fact given (e.g. memory_exponent=2)."""
    for n in dict.fromkeys(among):
        r = IMPLS.get(n)
        if r is not None and all(getattr(r, f) == v for f, v in facts.items()):
            return n
    return None


# ---- the formulas --------------------------------------------------------------------------------------------


def _linear_part(s: Shape) -> float:
    return 12 * s.batch_size * s.n_heads * s.seq_len * s.head_dim * s.elem_bytes  # q, k, v, grads, output, temps


def _softmax_flops(s: Shape) -> float:
    """4·B·H·n²·d forward (QKᵀ and PV), backward 2.5× that (Dao 2023)."""
    return 3.5 * 4.0 * s.batch_size * s.n_heads * s.seq_len**2 * s.head_dim


# A peak for the guard counts the inputs too (q, k, v and the output's gradient exist before the call): the guard
# asks whether a point fits before anything is allocated. Both formulas are within a few per cent of the peak
# measured on the CPU (live tensors plus the inputs, tests/test_attention_cost.py) for fp32 and bf16.


def _naive_bytes(s: Shape, backend: str, device_type: str) -> float:
    # in backward three n² tensors are live at once (the probabilities, their gradient, the scores' gradient), in the
    # input's dtype; a causal mask adds one n×n boolean
    mask = s.seq_len**2 if s.causal else 0
    return float(_linear_part(s) + 3 * score_bytes(s.batch_size, s.n_heads, s.seq_len, s.elem_bytes) + mask)


def _math_bytes(s: Shape) -> float:
    # SDPA's math backend keeps its three live n² tensors in fp32 whatever the input dtype, and no mask
    return float(_linear_part(s) + 3 * score_bytes(s.batch_size, s.n_heads, s.seq_len, max(s.elem_bytes, 4)))


def _sdpa_bytes(s: Shape, backend: str, device_type: str) -> float:
    # the math backend (and 'auto' where no fused kernel exists) materialises the scores
    quadratic = backend == "math" or (backend == AUTO and device_type not in ("cpu", "cuda"))
    return _math_bytes(s) if quadratic else float(_linear_part(s))


def _linear_bytes(s: Shape, backend: str, device_type: str) -> float:
    dd = s.head_dim**2 * (s.seq_len if s.causal else 1)  # causal prefix sums hold a d × d matrix per position
    return 2.0 * _linear_part(s) + 4.0 * s.batch_size * s.n_heads * dd * s.elem_bytes


def _state_bytes(s: Shape, backend: str, device_type: str) -> float:
    B, d = s.batch_size, s.n_heads * s.head_dim
    return 2.0 * B * s.seq_len * d * s.elem_bytes + 64 * B * d * s.elem_bytes


def _naive_saved(s: Shape, backend: str) -> float:
    """The probabilities (B·H·n²), plus the n×n boolean causal mask if causal."""
    return float(score_bytes(s.batch_size, s.n_heads, s.seq_len, s.elem_bytes) + (s.seq_len**2 if s.causal else 0))


def _sdpa_saved(s: Shape, backend: str) -> float:
    """flash: the output (B·H·n·d) and the fp32 log-sum-exp (B·H·n); math: the probabilities plus scaled copies of
    q and k (measured on PyTorch 2.13 CPU; its causal mask is not kept); other backends: no formula (NaN)."""
    B, H, n, d, e = s.batch_size, s.n_heads, s.seq_len, s.head_dim, s.elem_bytes
    if backend == "flash":
        return float(B * H * n * d * e + B * H * n * 4)
    if backend == "math":
        return float(score_bytes(B, H, n, e) + 2 * B * H * n * d * e)
    return math.nan


def _attend(kernel: str, q, k, v, causal: bool, backend: str):
    """`kernel` of core.models.layers on (q, k, v), imported when called."""
    from core.models import layers

    if kernel == "naive":
        return layers.naive_attention(q, k, v, causal)[0]
    if kernel == "linear":
        return layers.linear_attention(q, k, v, causal)
    return layers.sdpa(q, k, v, backend, causal)


# fmt: off
register(AttentionImpl(
    "naive", "softmax", "train", 2, 2, _softmax_flops, _naive_bytes, partial(_attend, "naive"), saved_formula=_naive_saved,
    model_bytes=lambda L, s: L * score_bytes(s.batch_size, s.n_heads, s.seq_len, s.elem_bytes),
))
register(AttentionImpl(
    "sdpa", "softmax", "train", 2, 1, _softmax_flops, _sdpa_bytes, partial(_attend, "sdpa"), uses_backends=True,
    saved_formula=_sdpa_saved,
    model_bytes=lambda L, s: L * s.batch_size * s.n_heads * s.seq_len * (s.head_dim * s.elem_bytes + 4),
))
register(AttentionImpl(
    "linear", "linear", "train", 1, 1, lambda s: 3.5 * 4.0 * s.batch_size * s.n_heads * s.seq_len * s.head_dim**2,
    _linear_bytes, partial(_attend, "linear"),
))
# an LSTM as wide as all heads together reads n tokens at inference, keeping only (h, c): 8·d·2d FLOPs per token
register(AttentionImpl(
    "lstm_state", "state", "inference", 1, 0,
    lambda s: 8.0 * (s.n_heads * s.head_dim) * (2 * s.n_heads * s.head_dim) * s.batch_size * s.seq_len,
    _state_bytes, latency_bound=True,
))
# fmt: on
