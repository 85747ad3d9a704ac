"""The harness: timing agrees with torch.utils.benchmark; saved bytes are exact on hand-countable graphs."""

import time

import numpy as np
import pytest
import torch

from core.harness import bench, heap
from core.harness.device import configure_threads, torch_threads


class FakeClock:
    """The harness's clock, advanced only by the callables under test: a 'call that takes 2 ms' takes exactly
    2 ms of this clock whatever else the machine is doing, so the tests check the harness's bookkeeping, not the
    host's scheduler."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    """Both of the harness's clocks (its own perf_counter and the one Timer reads) replaced by one fake clock."""
    fake = FakeClock()
    real_timer = bench.tub.Timer
    monkeypatch.setattr(bench.tub, "Timer", lambda *a, **k: real_timer(*a, timer=fake, **k))
    monkeypatch.setattr(bench, "time", type("FakeTime", (), {"perf_counter": staticmethod(fake)}))
    return fake


def test_timing_reports_median_iqr_and_noise():
    t = bench.Timing(10.0, 0.5, (9.8, 10.0, 10.3))
    assert not t.noisy
    assert bench.Timing(10.0, 2.0, ()).noisy
    calls = []
    res = bench.time_fn(lambda: calls.append(1), warmup=2, repeats=5)
    assert len(calls) == 7 and len(res.times_ms) == 5 and res.iqr_ms >= 0


def test_time_fn_times_a_known_duration(clock):
    res = bench.time_fn(lambda: clock.sleep(0.002), warmup=1, repeats=5)
    assert res.median_ms == pytest.approx(2.0) and res.times_ms == pytest.approx((2.0,) * 5)


def test_time_fn_reads_the_real_clock():
    """On the real clock a 2 ms sleep never reads less than 2 ms (a sleep lasts at least as long as asked; only
    a lower bound, which load cannot break)."""
    res = bench.time_fn(lambda: time.sleep(0.002), warmup=0, repeats=3)
    assert min(res.times_ms) >= 2.0


def test_time_fn_does_not_time_warmup_calls(clock):
    calls = []

    def fn():  # the warm-up calls take 30 ms, the timed ones 1 ms: a timed warm-up call would show as 30 ms
        calls.append(1)
        clock.sleep(0.03 if len(calls) <= 3 else 0.001)

    res = bench.time_fn(fn, warmup=3, repeats=5)
    assert len(calls) == 3 + 5 and res.times_ms == pytest.approx((1.0,) * 5)


class FaultCounter:
    """heap.minor_faults as the harness reads it, advanced only by the callables under test: a call that 'touches
    fresh memory' adds FRESH_PAGES faults, so the warm-up rule is checked whatever the allocator already holds (a
    real 2 MiB tensor may come from memory the heap kept, and then faults in nothing)."""

    def __init__(self):
        self.count = 0

    def __call__(self) -> int:
        return self.count

    def touch_fresh(self) -> None:
        self.count += heap.FRESH_PAGES


@pytest.fixture
def faults(monkeypatch):
    counter = FaultCounter()
    monkeypatch.setattr(heap, "minor_faults", counter)
    return counter


def test_warm_up_goes_on_while_a_call_still_faults_in_fresh_memory(faults):
    def grows_then_settles():  # faults in fresh memory on each of its first 3 calls, then none
        if len(calls) < 3:
            faults.touch_fresh()
        calls.append(1)

    calls = []
    bench.time_fn(grows_then_settles, warmup=1, repeats=2)
    assert len(calls) == 5 + 2  # 3 faulting warm-ups, two quiet ones in a row that show it settled, 2 timed

    def quiet_between():  # faults, is quiet once, faults again: one quiet call is not enough to call it warm
        if len(calls) in (0, 2):
            faults.touch_fresh()
        calls.append(1)

    calls = []
    bench.time_fn(quiet_between, warmup=1, repeats=1)
    assert len(calls) == 5 + 1  # faults at 1 and 3, quiet at 2, 4 and 5: two quiet in a row end it, then 1 timed

    def always_grows():  # each call needs memory the heap never had
        faults.touch_fresh()
        calls.append(1)

    calls = []
    bench.time_fn(always_grows, warmup=2, repeats=1)
    assert len(calls) == 2 + heap.EXTRA_WARMUPS + 1  # the extra warm-ups are capped
    calls = []
    bench.time_fn(always_grows, warmup=0, repeats=1)
    assert len(calls) == 1  # no warm-up asked for, none added


def test_fresh_memory_per_call_is_the_faults_counted_around_it(faults):
    """Timing.fresh_bytes: the median over the timed calls of the faults counted around each, in bytes."""

    def fn():
        faults.count += 3  # three pages a call, counted around every timed call
        calls.append(1)

    calls = []
    res = bench.time_fn(fn, warmup=1, repeats=4)
    assert res.fresh_bytes == 3 * heap.PAGE_BYTES


@pytest.mark.skipif(heap.minor_faults() is None, reason="this OS does not count page faults")
def test_the_fault_counter_counts_pages_touched_for_the_first_time():
    """What the rule above reads, on the real kernel: each page of a fresh anonymous mapping faults when first
    written (huge pages asked off, so one fault maps one page). Only a lower bound: faults elsewhere in the process
    can only add to the count."""
    import mmap

    pages = 512
    m = mmap.mmap(-1, pages * heap.PAGE_BYTES)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        m.madvise(mmap.MADV_NOHUGEPAGE)
    before = heap.minor_faults()
    for i in range(pages):
        m[i * heap.PAGE_BYTES] = 1
    assert heap.minor_faults() - before >= pages
    m.close()


def test_time_fn_times_each_repeat_in_call_order(clock):
    calls = []

    def fn():  # call k takes k ms
        calls.append(1)
        clock.sleep(len(calls) * 1e-3)

    res = bench.time_fn(fn, warmup=0, repeats=4)
    assert res.times_ms == pytest.approx((1.0, 2.0, 3.0, 4.0))


def test_a_short_call_is_timed_in_back_to_back_runs_of_at_least_min_sample_s(clock):
    """A call of 3 ms, then 2 ms, with min_sample_s = 20 ms: k = ⌈20 / its warm-up time⌉ = 7 calls per round,
    their mean reported; a 25 ms call stays at one call per round."""
    calls = {"short": 0, "long": 0}

    def short():
        calls["short"] += 1
        clock.sleep(0.003 if calls["short"] == 1 else 0.002)

    def long():
        calls["long"] += 1
        clock.sleep(0.025)

    timings, _ = bench.time_interleaved({"short": short, "long": long}, warmup=1, repeats=3, min_sample_s=0.02)
    assert calls["long"] == 1 + 3 and timings["long"].times_ms == pytest.approx((25.0,) * 3)
    assert calls["short"] == 1 + 3 * 7  # k from the warm-up call: ⌈20 / 3⌉
    assert timings["short"].times_ms == pytest.approx((2.0,) * 3)  # the mean of one call, not the sum of seven


def test_time_fn_median_and_iqr_are_numpys_linear_quantiles(clock):
    calls = []

    def fn():  # four repeats of different lengths: a lower median or nearest-rank quartiles would differ
        calls.append(1)
        clock.sleep((1, 4, 2, 8)[len(calls) - 1] * 1e-3)

    res = bench.time_fn(fn, warmup=0, repeats=4)
    xs = np.array([1.0, 4.0, 2.0, 8.0])
    assert res.times_ms == pytest.approx(tuple(xs))
    assert res.median_ms == pytest.approx(3.0) and res.median_ms == pytest.approx(np.median(xs), rel=1e-9)
    assert res.iqr_ms == pytest.approx(np.quantile(xs, 0.75) - np.quantile(xs, 0.25), rel=1e-9)  # 4.5 - 1.75


def test_max_seconds_stops_early_keeping_at_least_three_repeats(clock):
    slow = bench.time_fn(lambda: clock.sleep(0.02), warmup=0, repeats=50, max_seconds=0.001)
    assert len(slow.times_ms) == 3
    calls = []
    res = bench.time_fn(lambda: (calls.append(1), clock.sleep(0.006)), warmup=1, repeats=1000, max_seconds=0.05)
    assert len(res.times_ms) == 9 and len(calls) == 1 + 9  # stops once more than 50 ms of 6 ms calls were spent
    assert len(bench.time_fn(lambda: None, warmup=0, repeats=20, max_seconds=10).times_ms) == 20


@pytest.mark.parametrize("caller_threads", [1, 2])
def test_time_fn_keeps_the_callers_thread_count(caller_threads):
    configure_threads(2)
    seen = []
    with torch_threads(caller_threads):
        bench.time_fn(lambda: seen.append(torch.get_num_threads()), warmup=1, repeats=5)
        assert torch.get_num_threads() == caller_threads
    assert seen == [caller_threads] * 6
    assert torch.get_num_threads() == 2


def test_time_fn_rejects_bad_repeats():
    with pytest.raises(ValueError):
        bench.time_fn(lambda: None, repeats=0)


def test_saved_bytes_exact_on_a_hand_counted_graph():
    B, n, m = 4, 8, 16
    x = torch.randn(B, n)
    w = torch.randn(n, m, requires_grad=True)

    # matmul saves x (an input) and w (a parameter): excluded. tanh saves its output: B·m·4 bytes.
    # sigmoid saves its output: B·m·4. mul saves both operands: tanh's output (already counted) and sigmoid's.
    def fn():
        h = torch.tanh(x @ w)
        return (h * torch.sigmoid(h)).sum()

    assert bench.saved_activation_bytes(fn, exclude=(x, w)) == 2 * B * m * 4


def test_saved_bytes_counts_each_storage_once_and_excludes_parameters():
    x = torch.randn(100, requires_grad=True)

    def fn():
        y = x.exp()  # saves its result y
        return (y * y).sum()  # saves y twice: the same storage

    assert bench.saved_activation_bytes(fn, exclude=(x,)) == 100 * 4
    assert bench.saved_activation_bytes(lambda: (x * 2).exp().sum(), exclude=(x,)) == 100 * 4


def test_cuda_peak_is_none_off_cuda():
    assert bench.cuda_peak_bytes(lambda: None, torch.device("cpu")) is None


def test_peak_flops_is_plausible_for_a_cpu():
    peak = bench.peak_flops("cpu", "float32", 256)
    assert 1e8 < peak < 1e13


def test_interleaved_timing_pairs_repeats_and_survives_a_failing_callable(clock):
    """Round-robin: every callable is called once per round (the order rotating), an out-of-memory one is dropped
    with its error while the others go on, and after_round runs between rounds, outside the timed calls."""
    order, rounds = [], []

    def make(name, seconds):
        def fn():
            order.append(name)
            clock.sleep(seconds)

        return fn

    def oom():
        raise RuntimeError("CUDA out of memory (simulated)")

    timings, errors = bench.time_interleaved(
        {"a": make("a", 0.002), "b": make("b", 0.004), "x": oom},
        warmup=1,
        repeats=4,
        is_fatal=lambda e: "out of memory" in str(e),
        after_round=lambda r: (rounds.append(r), clock.sleep(0.02)),
    )
    assert set(timings) == {"a", "b"} and set(errors) == {"x"}
    assert len(timings["a"].times_ms) == len(timings["b"].times_ms) == 4 and rounds == [1, 2, 3, 4]
    assert order[:2] == ["a", "b"] and order[2:4] in (["a", "b"], ["b", "a"])  # warm-up, then round 1
    assert {tuple(order[i : i + 2]) for i in range(2, 10, 2)} == {("a", "b"), ("b", "a")}  # the order rotates
    assert timings["a"].times_ms == pytest.approx((2.0,) * 4)  # each call's own time: not after_round's 20 ms
    assert timings["b"].times_ms == pytest.approx((4.0,) * 4)
    with pytest.raises(ValueError):  # any other error is not a result: it propagates
        bench.time_interleaved({"bad": lambda: int("x")}, warmup=0, repeats=1)
