"""The process's heap while measuring: freed memory kept for reuse while timing, and handed back afterwards."""

from __future__ import annotations

import contextlib
import functools
import mmap

try:
    import resource
except ImportError:  # Windows
    resource = None

import torch


@functools.cache
def _libc():
    """glibc, for malloc_trim and mallopt; None elsewhere (macOS, Windows, musl)."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim, libc.mallopt  # noqa: B018 - both exist, or this is not glibc
    except (OSError, AttributeError):
        return None
    return libc


def return_freed_memory() -> None:
    """Give the memory a finished run freed back to the OS, so a long-lived server levels off.
    glibc keeps large freed blocks once its mmap threshold rises; malloc_trim(0) returns them (CUDA's cache too)."""
    import gc

    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    if _libc() is not None:
        _libc().malloc_trim(0)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
# while timing both are raised to 2 GiB, not switched off: switched off, the heap fragmented past the machine's
# memory at the attention wall check; a block above 2 GiB is still mapped on its own and freed whole
_TIMING = ((_M_MMAP_THRESHOLD, 2**31 - 1), (_M_TRIM_THRESHOLD, 2**31 - 1))
_STEADY = ((_M_MMAP_THRESHOLD, 32 << 20), (_M_TRIM_THRESHOLD, 64 << 20))  # where glibc's dynamic thresholds top out
_reusing = [0]  # how deep inside freed_memory_reused this process is: only the outermost one acts


@contextlib.contextmanager
def freed_memory_reused():
    """While timing, keep freed memory for the next step, as CUDA's caching allocator does; leaving the outermost
    one restores glibc's steady thresholds and hands free pages back (malloc_trim). glibc only; else a no-op.

    Above the mmap threshold every big step pays for fresh zero-filled pages, which once made checkpointing look
    faster (docs/BENCHMARKS.md). Off the main thread arenas cap heaps at 64 MiB, so larger blocks stay fresh.
    """
    libc = _libc()
    if libc is None:
        yield
        return
    if _reusing[0] == 0:
        for param, value in _TIMING:
            libc.mallopt(param, value)
    _reusing[0] += 1
    try:
        yield
    finally:
        _reusing[0] -= 1
        if _reusing[0] == 0:
            for param, value in _STEADY:
                libc.mallopt(param, value)
            libc.malloc_trim(0)


def minor_faults() -> int | None:
    """Minor page faults so far (memory touched for the first time), or None where uncounted (Windows).
    Called around every timed call, so the module is looked up once, at import."""
    return None if resource is None else resource.getrusage(resource.RUSAGE_SELF).ru_minflt


PAGE_BYTES = mmap.PAGESIZE  # what one minor fault maps (4 KiB on x86-64 Linux, 16 KiB on Apple silicon)
FRESH_PAGES = 256  # a warm-up call that faulted in at least this many pages (1 MiB of 4 KiB pages) was not warm
EXTRA_WARMUPS = 8  # at most this many warm-up calls more while they keep faulting
