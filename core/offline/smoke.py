"""`python -m core smoke` and `python -m core env`: the environment, then a short test of the risky paths.

Run first in a GPU session (scripts/gpu_reference.sh): every SDPA backend in bf16 and the naive path, the fused
recurrent kernels, the peak-memory counter, one out-of-memory error on purpose, the FLOP/s ceiling and the step
latency. One row per check with whether it passed; attention rows put the guard's predicted peak beside the
measured one. A device that stops computing ends the test there; on the CPU it only tests the script.
"""

from __future__ import annotations

import math
import platform
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import torch

from core.harness import bench, guard
from core.harness.device import (
    configure_precision,
    cudnn_version,
    device_label,
    environment,
    free_memory_bytes,
    git_commit,
    measuring,
    resolve_device,
    tf32_mode,
    total_memory_bytes,
)
from core.harness.memory_formulas import format_bytes
from core.models import attention, registry
from core.store.outputs import RowWriter
from core.store.results import reference_path
from core.terms import status

KNOWN_BYTES = 64 * 2**20  # the allocation the peak counter must see
BRIEF = {"warmup": 1, "repeats": 2, "max_point_s": 0.5}  # the experiments' points, timed just enough to run


def describe_environment(device_str: str = "auto") -> str:
    """Python, torch, CUDA, cuDNN, numpy, pandas, the device and its free memory, TF32 as measurements run it."""
    import numpy

    device = resolve_device(device_str)
    configure_precision()
    free = free_memory_bytes(device)
    lines = [
        f"python {platform.python_version()} ({sys.executable})",
        f"torch {torch.__version__}, CUDA {torch.version.cuda or '-'}, cuDNN {torch.backends.cudnn.version() or '-'}",
        f"numpy {numpy.__version__}, pandas {pd.__version__}, git commit {git_commit() or '-'}",
        f"device {device_label(device)}: {format_bytes(total_memory_bytes(device))}, {format_bytes(free)} free",
        f"TF32 in measurements: {tf32_mode(device)}; cuDNN for this device: {cudnn_version(device) or '-'}",
    ]
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        lines.append(f"compute capability {p.major}.{p.minor}, {p.multi_processor_count} SMs")
    return "\n".join(lines)


def _attention_rows(device: torch.device, lengths) -> Iterator[dict]:
    from core.experiments import attention_cost as ac

    fused = attention.find(attention.IMPLS, uses_backends=True)
    explicit = attention.find(attention.IMPLS, computes="softmax", memory_exponent=2)
    overrides = {**BRIEF, "device": device.type, "dtype": "bfloat16", "time_limit_s": 30, "seq_lens": lengths}
    cfg = ac.EXPERIMENT.config("quick", overrides)
    for n in lengths:
        for impl, backend in [(explicit, attention.NO_BACKEND)] + [(fused, b) for b in attention.BACKENDS]:
            t0 = time.perf_counter()
            row = ac.measure_point(impl, backend, cfg, n, device)
            yield {
                "check": "attention bf16",
                "detail": attention.get(impl).label(row["backend"], backend),
                "seq_len": n,
                "status": row["status"],
                "ms": row.get("time_ms", math.nan),
                "value": row.get("peak_bytes", math.nan),
                "predicted": row.get("predicted_bytes", math.nan),
                "inputs": 4 * cfg.batch_size * cfg.n_heads * n * cfg.head_dim * 2,  # q, k, v, grad in bf16
                "note": row.get("note", ""),
                "passed": row["status"] == status.OK
                or (row["status"] == status.UNSUPPORTED and attention.forced(backend)),
                "seconds": time.perf_counter() - t0,
            }


def _recurrent_rows(device: torch.device, lengths) -> Iterator[dict]:
    from core.experiments import serial

    names = [n for n in registry.names("serial") if registry.get(n).recurrent and registry.get(n).fused]
    small = {} if device.type != "cpu" else {"d_model": 32, "batch_size": 2}  # the CPU only tests the script
    cfg = serial.EXPERIMENT.config(
        "quick", {**BRIEF, "device": device.type, "models": names, "seq_lens": lengths, **small}
    )
    for T in lengths:
        for name, f in serial.measure_length(cfg, T, names, device).items():
            yield {
                "check": "fused recurrent fp32",
                "detail": name,
                "seq_len": T,
                "status": f["status"],
                "ms": f.get("train_ms", math.nan),
                "value": f.get("saved_bytes", math.nan),
                "note": f.get("note", ""),
                "passed": f["status"] == status.OK,
            }


def _memory_rows(device: torch.device) -> Iterator[dict]:
    def allocate():
        torch.ones(KNOWN_BYTES // 4, device=device).add_(1)

    peak = bench.cuda_peak_bytes(allocate, device)
    if peak is None:
        with bench.LivePeak() as live:
            allocate()
        peak = live.peak
    yield _measured(
        "peak memory", f"a {format_bytes(KNOWN_BYTES)} tensor", peak, abs(peak - KNOWN_BYTES) <= 0.02 * KNOWN_BYTES
    )
    # more than the device has (on the CPU more than an address space holds): the guard must make it a row
    too_much = total_memory_bytes(device) + 2**30 if device.type == "cuda" else 2**50
    fields = guard.guarded(
        lambda: {"value": torch.empty(too_much, dtype=torch.uint8, device=device).numel()}, 0, device, budget=2**62
    )
    after = guard.device_ok(device) and torch.empty(2**28, dtype=torch.uint8, device=device).fill_(1).numel() > 0
    yield {
        "check": "out of memory on purpose",
        "detail": f"{format_bytes(too_much)}, then 256 MiB",
        "status": fields["status"],
        "note": fields.get("note", ""),
        "passed": fields["status"] == status.OOM and after,
    }


def _device_rows(device: torch.device) -> Iterator[dict]:
    n = 4096 if device.type == "cuda" else 512
    for dtype in ("float32", "bfloat16"):
        flops = bench.peak_flops(str(device), dtype, n=n, repeats=3)
        yield _measured("matmul ceiling", f"{dtype} {n}×{n}, TF32 {tf32_mode(device)}", flops)
    yield _measured("dependent-step latency", "fused LSTM, width 8", bench.step_latency_s(str(device)))


def _measured(check: str, detail: str, value: float, passed: bool | None = None) -> dict:
    """A check's row that measured `value`; it passed when `passed` says so (by default: a positive number)."""
    passed = math.isfinite(value) and value > 0 if passed is None else passed
    return {"check": check, "detail": detail, "status": status.OK, "value": value, "passed": passed}


def _failed(env: dict, check: str, state: str, note: str) -> dict:
    """A row saying a check failed, or why the checks after it did not run."""
    return {**env, "check": check, "status": state, "passed": False, "note": note}


def _run_check(check, rows: list[dict], env: dict, writer: RowWriter | None) -> None:
    """One check's rows, each printed and written as it comes; a check that raises is a failed row, not the end."""
    try:
        for row in check():
            rows.append({**env, **row})
            print(
                f"{'pass' if row['passed'] else 'FAIL'}  {row['check']}: {row['detail']} "
                f"{row.get('seq_len', '')} {row['status']} {row.get('note', '')}"[:160],
                flush=True,
            )
            if writer is not None:
                writer.add([rows[-1]])
    except Exception as err:  # noqa: BLE001 - the next check runs (if the device still works)
        rows.append(
            _failed(env, "error", status.UNSUPPORTED, f"{type(err).__name__}: {' '.join(str(err).split())[:200]}")
        )
        print(f"FAIL  {rows[-1]['note']}", flush=True)


def run_smoke(device_str: str = "auto", out_dir: Path | None = None) -> int:
    """Every check in turn, each row written as it comes; exit status 0 if all passed, 1 otherwise."""
    device = resolve_device(device_str)
    print(describe_environment(device_str), flush=True)
    lengths = (256, 2048) if device.type != "cpu" else (32, 64)
    env = environment(device)
    writer = RowWriter(out_dir / reference_path("smoke", device_label(device), device.type).name) if out_dir else None
    rows: list[dict] = []
    checks = (
        lambda: _attention_rows(device, lengths),
        lambda: _recurrent_rows(device, lengths),
        lambda: _memory_rows(device),
        lambda: _device_rows(device),
    )
    try:
        with measuring():
            for check in checks:
                _run_check(check, rows, env, writer)
                if not guard.device_ok(device):
                    note = "the device stopped computing: the remaining checks were not run"
                    rows.append(_failed(env, "device", status.STOPPED, note))
                    break
    except BaseException as err:  # a time limit (SIGTERM), Ctrl-C: the rows so far are written, with why
        rows.append(
            _failed(env, "interrupted", status.STOPPED, f"{type(err).__name__}: the remaining checks were not run")
        )
        if writer is not None:
            writer.write(pd.DataFrame(rows))
        raise
    df = pd.DataFrame(rows)
    failed = int((~df["passed"].astype(bool)).sum())
    print(f"smoke: {len(df) - failed} of {len(df)} checks passed", flush=True)
    if writer is not None:
        print(f"wrote {writer.write(df)}", file=sys.stderr)
    return 0 if failed == 0 else 1
