"""The measurement harness: timing, bytes saved for backward, CUDA peak memory, device peak FLOP/s.

Method follows flash-attention's benchmarks/ and torch.utils.benchmark: inputs built outside the timed region,
warm-up first, CUDA synchronised around the timed region, median and interquartile range of repeats.
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
import time
from collections.abc import Callable

import torch

from core.device import synchronize

NOISY_IQR_FRACTION = 0.1  # IQR/median above this marks a timing as noisy


@dataclasses.dataclass(frozen=True)
class Timing:
    median_ms: float
    iqr_ms: float
    times_ms: tuple[float, ...]

    @property
    def noisy(self) -> bool:
        return self.median_ms > 0 and self.iqr_ms / self.median_ms > NOISY_IQR_FRACTION


def _quantile(sorted_xs: list[float], q: float) -> float:
    """Linear-interpolated quantile, as numpy's default."""
    if len(sorted_xs) == 1:
        return sorted_xs[0]
    pos = q * (len(sorted_xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def time_fn(
    fn: Callable[[], object],
    *,
    warmup: int = 2,
    repeats: int = 7,
    device: torch.device | str = "cpu",
    max_seconds: float | None = None,
) -> Timing:
    """Median and IQR (ms) of `repeats` calls of `fn()`, after `warmup` untimed calls.

    `max_seconds` caps the total timed work: once it is spent, at least 3 repeats are kept and the rest skipped,
    so one slow point cannot stall a live run.
    """
    if repeats < 1 or warmup < 0:
        raise ValueError("repeats must be >= 1 and warmup >= 0")
    device = torch.device(device)
    for _ in range(warmup):
        fn()
    synchronize(device)
    times = []
    start_all = time.perf_counter()
    for i in range(repeats):
        t0 = time.perf_counter()
        fn()
        synchronize(device)
        times.append((time.perf_counter() - t0) * 1e3)
        if max_seconds is not None and i >= 2 and time.perf_counter() - start_all > max_seconds:
            break
    xs = sorted(times)
    return Timing(statistics.median(xs), _quantile(xs, 0.75) - _quantile(xs, 0.25), tuple(times))


def saved_activation_bytes(fn: Callable[[], object], exclude: tuple = ()) -> int:
    """Exact bytes autograd saves for backward while `fn()` runs, each storage counted once.

    Tensors whose storage belongs to `exclude` (pass the parameters and the inputs) are not activations and are
    skipped. Device-independent: it counts what the graph holds, not what an allocator happened to reserve.
    """

    def key(t: torch.Tensor):
        return (t.device.type, t.device.index, t.untyped_storage().data_ptr())

    excluded = {key(t) for t in exclude if isinstance(t, torch.Tensor)}
    seen: dict = {}
    keep = []  # hold saved tensors so a freed storage's address cannot be reused and miscounted

    def pack(t: torch.Tensor):
        if t.layout == torch.strided and t.device.type != "meta":
            k = key(t)
            if k not in excluded and k not in seen:
                seen[k] = t.untyped_storage().nbytes()
                keep.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    del out
    keep.clear()
    return int(sum(seen.values()))


def cuda_peak_bytes(fn: Callable[[], object], device: torch.device) -> int | None:
    """Peak bytes allocated on CUDA while `fn()` runs (flash-attention's benchmark_memory); None off CUDA."""
    if device.type != "cuda":
        return None
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    synchronize(device)
    base = torch.cuda.memory_allocated(device)
    fn()
    synchronize(device)
    return int(torch.cuda.max_memory_allocated(device) - base)


@functools.lru_cache(maxsize=8)
def peak_flops(device_str: str = "cpu", dtype_str: str = "float32", n: int | None = None) -> float:
    """Achieved FLOP/s of a large square matmul on this device: the practical ceiling models are compared to."""
    device = torch.device(device_str)
    dtype = getattr(torch, dtype_str)
    n = n or (4096 if device.type == "cuda" else 1024)
    g = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=g).to(device, dtype)
    b = torch.randn(n, n, generator=g).to(device, dtype)
    t = time_fn(lambda: a @ b, warmup=2, repeats=7, device=device)
    return 2 * n**3 / (t.median_ms / 1e3)


@functools.lru_cache(maxsize=8)
def step_latency_s(device_str: str = "cpu") -> float:
    """Seconds per dependent step of a tiny recurrence (fwd+bwd), where compute is negligible: the latency floor."""
    device = torch.device(device_str)
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(8, 8).to(device)
    x = torch.randn(64, 1, 8, device=device)

    def step():
        h = c = torch.zeros(1, 8, device=device)
        for t in range(x.shape[0]):
            h, c = cell(x[t], (h, c))
        h.sum().backward()

    return time_fn(step, warmup=2, repeats=5, device=device).median_ms / 1e3 / x.shape[0]
