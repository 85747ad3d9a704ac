"""Which device to measure on, how many threads to use, and one lock so two sessions never time at once.

Two torch processes each using every core slow each other badly (docs/BENCHMARKS.md), so threads are set
deliberately and every measurement in this process takes `MEASURE_LOCK`.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import os
import platform
import subprocess
import sys
import threading
from importlib import metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported inside the functions: the home page starts without it
    import torch

DEVICES = ("auto", "cpu", "cuda", "mps")

# One process-wide lock: Streamlit runs each browser session in its own thread of one process.
MEASURE_LOCK = threading.Lock()


def physical_cores() -> int:
    """CPU cores this process may use (affinity-aware)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def page_threads() -> int:
    """Torch threads for a measurement started on a page: every usable core but one (at least one), or LAB_THREADS.
    A page's run shares the machine with its server and browser; the command line keeps them all."""
    return int(os.environ.get("LAB_THREADS", "0")) or max(1, physical_cores() - 1)


def configure_threads(n: int | None = None) -> int:
    """Give torch exactly one thread per usable core (or `n`, or LAB_THREADS); return the count in force."""
    import torch

    n = n or int(os.environ.get("LAB_THREADS", "0")) or physical_cores()
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return torch.get_num_threads()


@contextlib.contextmanager
def torch_threads(n: int):
    """Use `n` torch threads inside the block, restoring the count after (0 = leave it as it is).
    Tiny models are dominated by per-op overhead, so small experiments train on one thread and say so in each row."""
    import torch

    before = torch.get_num_threads()
    if n and n != before:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def one_thread():
    """One torch thread: decode steps are tiny, and a hand-off between threads costs more than the work."""
    return torch_threads(1)


def available(kind: str) -> bool:
    import torch

    if kind == "cpu":
        return True
    if kind == "cuda":
        return torch.cuda.is_available()
    if kind == "mps":
        return bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()
    return False


def resolve_device(name: str = "auto") -> torch.device:
    """'auto' picks CUDA, then MPS, then CPU; an explicit device that is absent raises ValueError."""
    import torch

    if name not in DEVICES:
        raise ValueError(f"device: {name!r} is not one of {', '.join(DEVICES)}")
    if name == "auto":
        for kind in ("cuda", "mps"):
            if available(kind):
                return torch.device(kind)
        return torch.device("cpu")
    if not available(name):
        present = ", ".join(d for d in DEVICES[1:] if available(d))
        raise ValueError(f"device: {name!r} is not available on this machine (available: {present})")
    return torch.device(name)


@functools.lru_cache(maxsize=1)
def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def _ram_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def total_memory_bytes(device: torch.device) -> int:
    import torch

    return torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else _ram_bytes()


def free_memory_bytes(device: torch.device) -> int:
    """Memory a new allocation could use now: on CUDA the driver's free memory plus the caching allocator's unused
    blocks (it frees them before an allocation would fail); elsewhere the OS's MemAvailable."""
    import torch

    if device.type == "cuda":
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return torch.cuda.mem_get_info(device)[0] + max(cached, 0)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return total_memory_bytes(device) // 2


def device_name(device: torch.device) -> str:
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return f"Apple MPS ({platform.machine()})"
    return _cpu_name()


def device_label(device: torch.device) -> str:
    """Short label for chart titles and result rows, e.g. 'cpu · AMD EPYC · 2 threads'."""
    import torch

    if device.type == "cpu":
        return f"cpu · {device_name(device)} · {torch.get_num_threads()} threads"
    return f"{device.type} · {device_name(device)}"


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], check=False, cwd=here, capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def threads_used(device: torch.device, n: int | None = None) -> int | None:
    """The `threads` a row records: torch's CPU threads (or `n`, where the work ran on fewer) on the CPU; None on an
    accelerator, where the CPU threads only launch kernels and say nothing about the measurement."""
    import torch

    if device.type != "cpu":
        return None
    return n if n is not None else torch.get_num_threads()


def configure_precision() -> None:
    """float32 as float32 everywhere: no TF32 in CUDA matmuls or cuDNN, so GPU rows agree with the CPU reference.
    Only the legacy flags: torch raises when code mixes them with the new `fp32_precision` settings."""
    import torch

    torch.set_float32_matmul_precision("highest")  # = backends.cuda.matmul.allow_tf32 = False (and oneDNN's matmul)
    torch.backends.cudnn.allow_tf32 = False  # cuDNN convolutions and RNNs


def tf32_mode(device: torch.device) -> str:
    """'off' when float32 runs as float32 on `device`, 'on' when matmuls and cuDNN all use TF32, else which do.
    Read from the resolved new-API settings, which never raise."""
    import torch

    if device.type != "cuda":
        return "off"  # TF32 is an NVIDIA tensor-core mode; CPU and MPS float32 math is float32
    try:
        used = {
            "matmul": torch.backends.cuda.matmul.fp32_precision == "tf32",
            "cudnn_conv": torch.backends.cudnn.conv.fp32_precision == "tf32",
            "cudnn_rnn": torch.backends.cudnn.rnn.fp32_precision == "tf32",
        }
    except AttributeError:  # torch < 2.9: the legacy flags only
        used = {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32}
    on = [k for k, v in used.items() if v]
    return "off" if not on else "on" if len(on) == len(used) else "+".join(on)


def cudnn_version(device: torch.device) -> int | None:
    """cuDNN's version (e.g. 91002) for CUDA rows; None elsewhere (the CPU and MPS do not use it)."""
    import torch

    if device.type != "cuda" or not torch.backends.cudnn.is_available():
        return None
    return torch.backends.cudnn.version()


ENV_COLUMNS = (
    "device",
    "device_type",
    "device_memory_bytes",
    "torch_version",
    "threads",
    "tf32",
    "cudnn_version",
    "date",
    "git_commit",
)
ENV_TEXT = ("device", "device_type", "torch_version", "tf32", "cudnn_version", "date", "git_commit")


def environment(device: torch.device) -> dict:
    """The columns every result row carries (ENV_COLUMNS), so a CSV says where and how it was measured."""
    import torch

    return {
        "device": device_label(device),
        "device_type": device.type,
        "device_memory_bytes": total_memory_bytes(device),
        "torch_version": torch.__version__,
        "threads": threads_used(device),
        "tf32": tf32_mode(device),
        "cudnn_version": cudnn_version(device),
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": git_commit(),
    }


def synchronize(device: torch.device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


@contextlib.contextmanager
def measuring(on_wait=None):
    """Hold the process-wide measurement lock, calling `on_wait()` every half second while another session has it.
    Short waits let a page's Stop interrupt; every measurement runs under `configure_precision`."""
    while not MEASURE_LOCK.acquire(timeout=0.5):
        if on_wait is not None:
            on_wait()
    try:
        configure_precision()
        yield
    finally:
        MEASURE_LOCK.release()


def light_facts() -> dict:
    """The device card's facts without importing torch, for the home page's cold start.
    The accelerator is inferred from the driver's presence, and labelled as detected rather than checked."""
    if "torch" in sys.modules:
        import torch

        dev = resolve_device("auto")
        return {
            "type": dev.type,
            "name": device_name(dev),
            "memory": total_memory_bytes(dev),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "checked": True,
        }
    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        version = "not installed"
    kind = "cuda" if os.path.exists("/proc/driver/nvidia/version") else "cpu"
    return {
        "type": kind,
        "name": _cpu_name() if kind == "cpu" else "NVIDIA GPU",
        "memory": _ram_bytes(),
        "torch": version,
        "threads": page_threads(),  # what a page's run will use
        "checked": False,
    }
