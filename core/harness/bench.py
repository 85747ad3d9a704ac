"""The measurement harness: timing, bytes saved for backward, CUDA peak memory, device peak FLOP/s.

Timing follows torch.utils.benchmark, as flash-attention's benchmarks do: inputs built outside the timed region,
`warmup` untimed calls, each repeat timed alone by a Timer (accelerator synchronised, garbage collector off), and
the median and IQR from its `Measurement`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable

import numpy as np
import torch
import torch.utils.benchmark as tub
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.benchmark.utils import common

from core.harness import cancel, heap
from core.harness.device import synchronize
from core.harness.heap import freed_memory_reused
from core.terms.rules import NOISY_IQR_FRACTION


@dataclasses.dataclass(frozen=True)
class Timing:
    median_ms: float
    iqr_ms: float
    times_ms: tuple[float, ...]
    fresh_bytes: float = math.nan  # median bytes of fresh pages the OS mapped per timed call (nan: not counted)

    @property
    def noisy(self) -> bool:
        return self.median_ms > 0 and self.iqr_ms / self.median_ms > NOISY_IQR_FRACTION


def timed(timing: Timing, prefix: str = "train") -> dict:
    """A Timing as row fields: <prefix>_ms (the median), <prefix>_iqr_ms, noisy."""
    return {f"{prefix}_ms": timing.median_ms, f"{prefix}_iqr_ms": timing.iqr_ms, "noisy": timing.noisy}


def time_fn(
    fn: Callable[[], object],
    *,
    warmup: int = 2,
    repeats: int = 7,
    device: torch.device | str = "cpu",
    max_seconds: float | None = None,
) -> Timing:
    """Median and IQR (ms) of `repeats` calls of `fn()` after `warmup` untimed ones; `times_ms` in call order.
    `max_seconds` caps the timed work (at least 3 repeats kept), so one slow point cannot stall a live run."""
    if repeats < 1 or warmup < 0:
        raise ValueError("repeats must be >= 1 and warmup >= 0")
    timings, _ = time_interleaved({"fn": fn}, warmup=warmup, repeats=repeats, device=device, max_seconds=max_seconds)
    return timings["fn"]


def saved_activation_bytes(fn: Callable[[], object], exclude: tuple = ()) -> int:
    """Exact bytes autograd saves for backward while `fn()` runs, each storage counted once.
    Storages of `exclude` (parameters, inputs) are skipped; it counts what the graph holds, not what was reserved."""

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
                keep.append(t.detach())
        # detached: handing back an op's own output makes a node hold itself, a cycle the collector cannot see
        return t.detach()

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


def peak_flops(device_str: str = "cpu", dtype_str: str = "float32", n: int | None = None, repeats: int = 10) -> float:
    """The best FLOP/s of `repeats` large square matmuls: this device's ceiling, measured now.
    The best, not the median: a busy moment slows some tries, and a ceiling is what the device can do."""
    device = torch.device(device_str)
    dtype = getattr(torch, dtype_str)
    n = n or (8192 if device.type == "cuda" else 1024)
    g = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=g).to(device, dtype)
    b = torch.randn(n, n, generator=g).to(device, dtype)
    t = time_fn(lambda: a @ b, warmup=2, repeats=repeats, device=device)
    return 2 * n**3 / (min(t.times_ms) / 1e3)


@functools.lru_cache(maxsize=8)
def peak_flops_estimate(device_str: str = "cpu", dtype_str: str = "float32") -> float:
    """`peak_flops` once per process, for predictions that only need its order of magnitude (a guard's time)."""
    return peak_flops(device_str, dtype_str)


def time_interleaved(
    fns: dict[str, Callable[[], object]],
    *,
    warmup: int = 1,
    repeats: int = 5,
    device: torch.device | str = "cpu",
    max_seconds: float | None = None,
    is_fatal: Callable[[BaseException], bool] | None = None,
    after_round: Callable[[int], None] | None = None,
    min_sample_s: float = 0.0,
) -> tuple[dict[str, Timing], dict[str, BaseException]]:
    """Time callables round-robin, repeat by repeat, so background load falls on all alike: (timings, errors).

    Each round times every callable once, in rotating order, so times_ms pair up by round. With `min_sample_s` a
    fast callable runs k = ⌈min_sample_s / t⌉ times (at most 50) a round and the mean is kept, as timeit does.
    `max_seconds` caps each callable's timed work (at least 3 rounds); an error `is_fatal` accepts drops the
    callable and is returned. `after_round(r)` runs between rounds, untimed; cancel.check() between calls.
    """
    device = torch.device(device)
    # the caller's thread count, not Timer's default of 1: timing never changes the threads chosen
    num_threads = torch.get_num_threads()
    timers = {name: tub.Timer("fn()", globals={"fn": fn}, num_threads=num_threads) for name, fn in fns.items()}
    errors: dict[str, BaseException] = {}
    times: dict[str, list[float]] = {name: [] for name in fns}
    mapped: dict[str, list[float]] = {name: [] for name in fns}  # bytes of fresh pages per call, counted around it

    def call(name, action):
        try:
            return action()
        except Exception as err:  # a fatal one is a result for this callable, the rest go on
            if is_fatal is None or not is_fatal(err):
                raise
            errors[name] = err
            return None

    calls = dict.fromkeys(fns, 1)
    # Timer's clock synchronises the accelerator's current device: make that the device being timed.
    index = device.index if device.type != "cpu" else None
    with torch.accelerator.device_index(index), common.set_torch_threads(num_threads), freed_memory_reused():
        for name, fn in fns.items():
            # a step that allocates gigabytes grows the heap over several calls: warm up until two calls in a row
            # fault in fewer than FRESH_PAGES (at most EXTRA_WARMUPS more calls and max_seconds of them)
            done, planned, extra_s, was_fresh = 0, warmup, 0.0, False
            while name not in errors and done < planned:
                before = heap.minor_faults()
                synchronize(device)
                t0 = time.perf_counter()
                call(name, fn)
                synchronize(device)
                took = time.perf_counter() - t0
                done += 1
                calls[name] = min(50, max(1, math.ceil(min_sample_s / max(took, 1e-6)))) if min_sample_s else 1
                cancel.check()  # a Stop is seen between calls, not only between points
                extra_s += took if done > warmup else 0.0
                fresh = before is not None and heap.minor_faults() - before >= heap.FRESH_PAGES
                room = planned < warmup + heap.EXTRA_WARMUPS and (max_seconds is None or extra_s < max_seconds)
                if done == planned and (fresh or was_fresh) and room:
                    planned += 1
                was_fresh = fresh
        synchronize(device)
        # each repeat is one Timer._timeit, blocked_autorange's step: not Timer.timeit(1), which first makes
        # max(number // 100, 2) untimed calls of its own (overheads: docs/BENCHMARKS.md)
        start = time.perf_counter()
        for r in range(repeats):
            names = [n for n in fns if n not in errors]
            if not names:
                break
            names = names[r % len(names) :] + names[: r % len(names)]  # rotate: no callable always goes first
            for name in names:
                before = heap.minor_faults()
                t = call(name, lambda name=name: timers[name]._timeit(calls[name]) / calls[name])
                if t is not None:
                    times[name].append(t)
                    if before is not None:
                        mapped[name].append((heap.minor_faults() - before) * heap.PAGE_BYTES / calls[name])
                paused = time.perf_counter()
                cancel.check()
                start += time.perf_counter() - paused
            spent = time.perf_counter() - start
            if after_round is not None:
                after_round(r + 1)
            start += time.perf_counter() - start - spent  # the callback's time is not timed work
            if max_seconds is not None and r >= 2 and spent > max_seconds * len(names):
                break
    # Measurement's quantiles interpolate linearly, as numpy's default does
    spec = common.TaskSpec(stmt="fn()", setup="pass", num_threads=num_threads)
    out = {}
    for name, ts in times.items():
        if ts and name not in errors:
            m = common.Measurement(number_per_run=1, raw_times=ts, task_spec=spec)
            faulted = float(np.median(mapped[name])) if mapped[name] else math.nan
            out[name] = Timing(m.median * 1e3, m.iqr * 1e3, tuple(t * 1e3 for t in ts), faulted)
    return out, errors


@functools.lru_cache(maxsize=8)
def step_latency_s(device_str: str = "cpu") -> float:
    """Seconds per dependent step of the fused LSTM kernel at width 8, batch 1: the fwd + bwd slope from 32 to 512
    steps. The latency floor of a chain of steps here (a Python LSTMCell loop would time the interpreter)."""
    device = torch.device(device_str)
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(8, 8, batch_first=True).to(device)
    times = {}
    for n in (32, 512):
        x = torch.randn(1, n, 8, device=device)

        def step(x=x):
            lstm(x)[0].sum().backward()

        times[n] = time_fn(step, warmup=2, repeats=7, device=device).median_ms / 1e3
    return max(times[512] - times[32], 0.0) / (512 - 32) or times[32] / 32


# ---- what ran, and how much it held: for kernels that hide both (CPU flash SDPA, fused RNNs) ----------------

# aten operator names → the SDPA backend that ran (math is composite: it shows no fused operator)
KERNEL_OPS = (
    ("cudnn_attention", "cudnn"),
    ("efficient_attention", "efficient"),
    ("flash_attention", "flash"),
    ("fused_attention_overrideable", "overrideable"),
)


class LivePeak(TorchDispatchMode):
    """Peak bytes of live tensors returned by operators while active (a CPU stand-in for max_memory_allocated).
    Storages in `exclude` are not counted, nor a fused kernel's scratch; the operator names are recorded too."""

    def __init__(self, exclude=()):
        super().__init__()
        self.excluded = {t.untyped_storage().data_ptr() for t in exclude if isinstance(t, torch.Tensor)}
        self.live: dict[int, tuple] = {}
        self.current = self.peak = 0
        self.ops: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.ops.add(str(func))
        for key, (ref, nbytes) in list(self.live.items()):
            if ref.expired():
                self.current -= nbytes
                del self.live[key]
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.layout == torch.strided and t.device.type != "meta":
                storage = t.untyped_storage()
                key = storage.data_ptr()
                if key and key not in self.live and key not in self.excluded:
                    self.live[key] = (StorageWeakRef(storage), storage.nbytes())
                    self.current += storage.nbytes()
        self.peak = max(self.peak, self.current)
        return out


def backend_from_ops(ops) -> str:
    """Which SDPA backend ran, from the aten operators seen (math has no fused operator of its own)."""
    for fragment, name in KERNEL_OPS:
        if any(fragment in op for op in ops):
            return name
    return "math"


@functools.lru_cache(maxsize=8)
def cell_loop_latency_s(device_str: str = "cpu") -> float:
    """Seconds per step of a tiny nn.LSTMCell in a Python loop (forward, no grad): a step loop's cost per token."""
    device = torch.device(device_str)
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(8, 8).to(device)
    x = torch.randn(64, 1, 8, device=device)

    @torch.no_grad()
    def read():
        h = c = torch.zeros(1, 8, device=device)
        for t in range(x.shape[0]):
            h, c = cell(x[t], (h, c))

    return time_fn(read, warmup=2, repeats=5, device=device).median_ms / 1e3 / x.shape[0]
