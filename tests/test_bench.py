"""The harness: timing agrees with torch.utils.benchmark; saved bytes are exact on hand-countable graphs."""

import pytest
import torch
import torch.utils.benchmark as tub

from core import bench
from core.device import configure_threads


def test_time_fn_agrees_with_torch_benchmark_timer():
    configure_threads()
    a = torch.randn(384, 384)
    fn = lambda: a @ a
    ours, theirs = [], []
    for _ in range(3):  # interleave, so drift in machine load hits both alike
        ours.append(bench.time_fn(fn, warmup=3, repeats=30).median_ms)
        timer = tub.Timer("fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
        theirs.append(timer.timeit(30).median * 1e3)
    assert min(ours) == pytest.approx(min(theirs), rel=0.10)


def test_timing_reports_median_iqr_and_noise():
    t = bench.Timing(10.0, 0.5, (9.8, 10.0, 10.3))
    assert not t.noisy
    assert bench.Timing(10.0, 2.0, ()).noisy
    calls = []
    res = bench.time_fn(lambda: calls.append(1), warmup=2, repeats=5)
    assert len(calls) == 7 and len(res.times_ms) == 5 and res.iqr_ms >= 0


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
