"""Ready for the GPU without one: what the CUDA paths do, checked on the CPU where it can be.

TF32 chosen and recorded in every row, the memory guard's formulas against measured peaks, an SDPA error in any
backend a row, a device that stops computing ending the sweep with what it has, housekeeping only when memory is
tight, and no float64 on a device that has none.
"""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from core.experiments import attention_cost as ac
from core.harness import bench, guard
from core.harness.device import ENV_COLUMNS, environment, tf32_mode, threads_used
from core.models import attention, layers
from core.terms import status
from core.workloads import reach

ROOT = Path(__file__).resolve().parent.parent


def cfg(**overrides):
    base = {"device": "cpu", "warmup": "0", "repeats": "1", "max_point_s": "0.1", "impls": "sdpa"}
    return ac.EXPERIMENT.config("quick", {**base, **overrides})


# ---- the environment of every row -----------------------------------------------------------------------------
def test_every_row_carries_tf32_and_the_cudnn_version():
    env = environment(torch.device("cpu"))
    assert tuple(env) == ENV_COLUMNS
    assert env["tf32"] == "off" and env["cudnn_version"] is None and env["threads"] == torch.get_num_threads()
    df = ac.run(cfg(seq_lens="16"))
    assert {"tf32", "cudnn_version"} <= set(df.columns) and (df["tf32"] == "off").all()


def test_threads_mean_something_only_on_the_cpu():
    assert threads_used(torch.device("cpu"), 1) == 1
    assert threads_used(torch.device("cuda")) is None and threads_used(torch.device("mps"), 1) is None


@pytest.mark.slow
def test_tf32_is_turned_off_for_matmuls_and_cudnn_and_the_flags_stay_consistent():
    """torch 2.13's defaults: full fp32 matmuls but TF32 cuDNN convolutions and RNNs. After configure_precision both
    are off, and the legacy getters (which raise when legacy and new settings disagree) still answer."""
    code = (
        "import torch; from core.harness.device import configure_precision, tf32_mode; d = torch.device('cuda'); "
        "print(tf32_mode(d)); configure_precision(); print(tf32_mode(d)); "
        "print(torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, "
        "torch.get_float32_matmul_precision())"
    )
    r = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["cudnn_conv+cudnn_rnn", "off", "False False highest"]


def test_measuring_sets_the_precision(monkeypatch):
    from core.harness import device

    seen = []
    monkeypatch.setattr(device, "configure_precision", lambda: seen.append(1))
    with device.measuring():
        pass
    assert seen == [1] and tf32_mode(torch.device("cpu")) == "off"


# ---- the guard's formulas against measured peaks ---------------------------------------------------------------
@pytest.mark.parametrize(
    "impl, backend, dtype",
    [
        ("naive", attention.NO_BACKEND, "float32"),
        ("naive", attention.NO_BACKEND, "bfloat16"),
        ("sdpa", "math", "float32"),
        ("sdpa", "math", "bfloat16"),  # upcast to fp32 inside: 195.5 MiB at n=2048, 1.42x the old prediction
    ],
)
def test_the_guard_predicts_the_measured_peak_within_a_quarter(impl, backend, dtype):
    """The peak of live tensors during forward + backward, plus the inputs (they exist before the call, and the
    guard decides before anything is allocated), at three lengths."""
    for n in (512, 1024, 2048):
        c = cfg(impls=impl, backends="auto" if impl == "naive" else backend, dtype=dtype, seq_lens=str(n))
        q, k, v, grad = ac._inputs(c, n, torch.device("cpu"))
        with bench.LivePeak(exclude=(q, k, v, grad)) as live:
            attention.get(impl).attend(q, k, v, c.causal, backend).backward(grad)
        measured = live.peak + sum(t.untyped_storage().nbytes() for t in (q, k, v, grad))
        predicted = ac.predicted_bytes(impl, backend, c, n, torch.device("cpu"))
        assert abs(predicted / measured - 1) <= 0.25, (impl, backend, dtype, n, predicted, measured)


# ---- SDPA errors and a broken device ---------------------------------------------------------------------------
def test_an_sdpa_error_in_any_backend_is_a_row_with_its_message(monkeypatch):
    """A cuDNN error in 'auto' (H200, bf16: auto may pick cuDNN attention) used to be re-raised; now every backend's
    error is a row, and the sweep goes on."""
    real = layers.sdpa

    def failing(q, k, v, backend="auto", causal=False):
        if backend in ("auto", "efficient"):
            raise RuntimeError("cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph.")
        return real(q, k, v, backend, causal)

    monkeypatch.setattr(layers, "sdpa", failing)
    df = ac.run(cfg(backends="auto,efficient,math", seq_lens="32,64"))
    assert list(df.status) == ["unsupported", "unsupported", "ok"] * 2
    assert df[df.status == "unsupported"].note.str.contains("cuDNN Frontend").all()


def test_a_device_that_stops_computing_ends_the_sweep_with_what_it_has(monkeypatch):
    """After 'an illegal memory access' every later CUDA call fails: the sweep stops at once with a 'stopped' row
    instead of recording each later point as unsupported (or crashing on the next one)."""
    real = layers.sdpa
    broken = []

    def illegal(q, k, v, backend="auto", causal=False):
        if backend == "flash" and q.shape[-2] == 64:
            broken.append(1)
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return real(q, k, v, backend, causal)

    monkeypatch.setattr(layers, "sdpa", illegal)
    monkeypatch.setattr(guard, "device_ok", lambda device: not broken)
    seen = []
    df = ac.run(cfg(backends="auto,flash,math", seq_lens="32,64,128"), on_progress=lambda p: seen.extend(p.rows))
    assert list(df.status) == ["ok", "ok", "ok", "ok", "unsupported", "stopped"]
    assert "illegal memory access" in df.note.iloc[4] and "stopped computing" in df.note.iloc[5]
    assert len(seen) == len(df)  # the stop row went out through the progress callback too (the CLI writes it)


def test_a_working_device_answers_that_it_works():
    assert guard.device_ok(torch.device("cpu"))


def test_housekeeping_only_when_memory_is_tight(monkeypatch):
    freed = []
    monkeypatch.setattr(guard, "free", lambda device: freed.append(device))
    cpu = torch.device("cpu")
    monkeypatch.setattr(guard, "tight", lambda device: False)
    for _ in range(3):
        assert guard.guarded(lambda: {"x": 1}, 10, cpu)["status"] == status.OK
    assert not freed  # ~90 ms of gc.collect + empty_cache per point on CUDA, when nothing needed it
    monkeypatch.setattr(guard, "tight", lambda device: True)
    guard.guarded(lambda: {"x": 1}, 10, cpu)
    assert freed == [cpu]


def test_the_cpu_is_never_tight_for_the_guard():
    assert not guard.tight(torch.device("cpu"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_free_memory_counts_the_allocators_cache():
    from core.harness.device import free_memory_bytes

    x = torch.empty(2**28, dtype=torch.uint8, device="cuda")
    del x  # back to the caching allocator, not to the driver
    assert free_memory_bytes(torch.device("cuda")) >= torch.cuda.mem_get_info()[0] + 2**28 - 2**21


# ---- MPS: no float64 on the device ----------------------------------------------------------------------------
class NoFloat64(torch.Tensor):
    """Stands in for an MPS tensor: float64 is refused until the data has moved to the CPU."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        wants64 = func is torch.Tensor.double or (
            func is torch.Tensor.to and torch.float64 in (*args[1:], *(kwargs or {}).values())
        )
        if wants64:
            raise TypeError("Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64")
        out = super().__torch_function__(func, types, args, kwargs)
        return out.as_subclass(torch.Tensor) if func is torch.Tensor.cpu else out


def test_the_spectral_radius_moves_to_the_cpu_before_float64():
    w = torch.randn(8, 8)
    with pytest.raises(TypeError, match="float64"):
        w.as_subclass(NoFloat64).double()  # the stand-in refuses, as MPS does
    assert reach.spectral_radius(w.as_subclass(NoFloat64)) == pytest.approx(reach.spectral_radius(w))
