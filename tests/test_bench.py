"""The harness: timing agrees with torch.utils.benchmark; saved bytes are exact on hand-countable graphs."""

import time

import numpy as np
import pytest
import torch

from core import bench, heap
from core.device import configure_threads, torch_threads


def test_timing_reports_median_iqr_and_noise():
    t = bench.Timing(10.0, 0.5, (9.8, 10.0, 10.3))
    assert not t.noisy
    assert bench.Timing(10.0, 2.0, ()).noisy
    calls = []
    res = bench.time_fn(lambda: calls.append(1), warmup=2, repeats=5)
    assert len(calls) == 7 and len(res.times_ms) == 5 and res.iqr_ms >= 0


def test_time_fn_times_a_known_sleep():
    res = bench.time_fn(lambda: time.sleep(0.002), warmup=1, repeats=5)
    assert 2.0 <= res.median_ms <= 6.0
    assert min(res.times_ms) >= 2.0


def test_time_fn_does_not_time_warmup_calls():
    calls = []

    def fn():  # the warm-up calls are slow, the timed ones fast: a timed warm-up call would show as >= 30 ms
        calls.append(1)
        if len(calls) <= 3:
            time.sleep(0.03)

    res = bench.time_fn(fn, warmup=3, repeats=5)
    assert len(calls) == 3 + 5 and len(res.times_ms) == 5
    assert max(res.times_ms) < 15.0


@pytest.mark.skipif(heap.minor_faults() is None, reason="this OS does not count page faults")
def test_warm_up_goes_on_while_a_call_still_faults_in_fresh_memory():
    kept = []

    def grows_then_settles():  # touches 2 MiB of new memory on each of its first 3 calls, then none
        if len(kept) < 3:
            kept.append(torch.ones(1 << 19))
        calls.append(1)

    calls = []
    bench.time_fn(grows_then_settles, warmup=1, repeats=2)
    assert len(calls) == 5 + 2  # 3 faulting warm-ups, two quiet ones in a row that show it settled, 2 timed

    def always_grows():  # kept, never freed: each call needs memory the heap never had
        kept.append(torch.ones(1 << 19))
        calls.append(1)

    calls = []
    bench.time_fn(always_grows, warmup=2, repeats=1)
    assert len(calls) == 2 + heap.EXTRA_WARMUPS + 1  # the extra warm-ups are capped
    calls = []
    bench.time_fn(always_grows, warmup=0, repeats=1)
    assert len(calls) == 1  # no warm-up asked for, none added
    kept.clear()


def test_time_fn_times_each_repeat_in_call_order():
    calls = []

    def fn():  # call k sleeps k ms
        calls.append(1)
        time.sleep(len(calls) * 1e-3)

    res = bench.time_fn(fn, warmup=0, repeats=4)
    assert len(res.times_ms) == 4
    assert list(res.times_ms) == sorted(res.times_ms)
    for k, t in enumerate(res.times_ms, start=1):
        assert k <= t < k + 4


def test_a_short_call_is_timed_in_back_to_back_runs_of_at_least_min_sample_s():
    """A 2 ms call with min_sample_s = 20 ms: k = ⌈20 / its warm-up time⌉ calls per round, their mean reported; a
    20 ms call stays at one call per round."""
    calls = {"short": 0, "long": 0}

    def short():
        calls["short"] += 1
        time.sleep(0.002)

    def long():
        calls["long"] += 1
        time.sleep(0.02)

    timings, _ = bench.time_interleaved({"short": short, "long": long}, warmup=1, repeats=3, min_sample_s=0.02)
    assert calls["long"] == 1 + 3
    assert 1 + 3 * 4 <= calls["short"] <= 1 + 3 * 10  # k between 4 (a slow warm-up, 5 ms) and 10
    assert 2.0 <= timings["short"].median_ms < 4.0 and len(timings["short"].times_ms) == 3  # the mean of one call


def test_time_fn_median_and_iqr_are_numpys_linear_quantiles():
    calls = []

    def fn():  # four repeats of different lengths: a lower median or nearest-rank quartiles would differ
        calls.append(1)
        time.sleep((1, 4, 2, 8)[len(calls) - 1] * 1e-3)

    res = bench.time_fn(fn, warmup=0, repeats=4)
    xs = np.array(res.times_ms)
    assert res.median_ms == pytest.approx(np.median(xs), rel=1e-9)
    assert res.iqr_ms == pytest.approx(np.quantile(xs, 0.75) - np.quantile(xs, 0.25), rel=1e-9)
    assert sorted(xs)[1] < res.median_ms < sorted(xs)[2]


def test_max_seconds_stops_early_keeping_at_least_three_repeats():
    slow = bench.time_fn(lambda: time.sleep(0.02), warmup=0, repeats=50, max_seconds=0.001)
    assert len(slow.times_ms) == 3
    calls = []
    res = bench.time_fn(lambda: (calls.append(1), time.sleep(0.005)), warmup=1, repeats=1000, max_seconds=0.05)
    assert 3 <= len(res.times_ms) < 30 and len(calls) == 1 + len(res.times_ms)
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


def test_interleaved_timing_pairs_repeats_and_survives_a_failing_callable():
    """Round-robin: every callable is called once per round (the order rotating), an out-of-memory one is dropped
    with its error while the others go on, and after_round runs between rounds, outside the timed calls."""
    order, rounds = [], []

    def make(name, seconds):
        def fn():
            order.append(name)
            time.sleep(seconds)

        return fn

    def oom():
        raise RuntimeError("CUDA out of memory (simulated)")

    timings, errors = bench.time_interleaved(
        {"a": make("a", 0.002), "b": make("b", 0.004), "x": oom},
        warmup=1,
        repeats=4,
        is_fatal=lambda e: "out of memory" in str(e),
        after_round=lambda r: (rounds.append(r), time.sleep(0.02)),
    )
    assert set(timings) == {"a", "b"} and set(errors) == {"x"}
    assert len(timings["a"].times_ms) == len(timings["b"].times_ms) == 4 and rounds == [1, 2, 3, 4]
    assert order[:2] == ["a", "b"] and order[2:4] in (["a", "b"], ["b", "a"])  # warm-up, then round 1
    assert {tuple(order[i : i + 2]) for i in range(2, 10, 2)} == {("a", "b"), ("b", "a")}  # the order rotates
    assert 2.0 <= timings["a"].median_ms < 10 and 4.0 <= timings["b"].median_ms < 12  # the sleeps, not after_round
    with pytest.raises(ValueError):  # any other error is not a result: it propagates
        bench.time_interleaved({"bad": lambda: int("x")}, warmup=0, repeats=1)
