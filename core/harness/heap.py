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
    """Give the memory a finished run freed back to the operating system, so a long-lived server levels off.

    torch frees its CPU tensors to glibc's malloc, which keeps large freed blocks in its heap for reuse (its mmap
    threshold rises after the first big free, so later n² tensors come from the heap too): the server's RSS then
    swung by ~150 MiB from run to run and drifted up on a shared host. `malloc_trim(0)` hands free heap pages back
    (glibc only; elsewhere this is a no-op). CUDA's caching allocator is emptied the same way.
    """
    import gc

    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    if _libc() is not None:
        _libc().malloc_trim(0)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
# While timing both are raised to 2 GiB, not switched off: with mapping off (M_MMAP_MAX 0) and trimming off (-1)
# the heap fragmented past the machine's memory at the attention page's wall check (naive attention at n ≈ 14,000,
# 3 GiB per score matrix; the run was killed at 24 GiB), where a block above 2 GiB mapped on its own is freed whole.
_TIMING = ((_M_MMAP_THRESHOLD, 2**31 - 1), (_M_TRIM_THRESHOLD, 2**31 - 1))
_STEADY = ((_M_MMAP_THRESHOLD, 32 << 20), (_M_TRIM_THRESHOLD, 64 << 20))  # where glibc's dynamic thresholds top out
_reusing = [0]  # how deep inside freed_memory_reused this process is: only the outermost one acts


@contextlib.contextmanager
def freed_memory_reused():
    """While timing, keep freed memory in the process for the next step, as PyTorch's CUDA caching allocator always
    does; on leaving the outermost one, hand the heap's free pages back (malloc_trim: the tensors are already freed,
    and the CUDA cache is left alone, it was never glibc's). `time_interleaved` times inside one.

    glibc's malloc serves blocks above its mmap threshold (at most 32 MiB) with fresh mappings and unmaps them on
    free, so each step that allocates gigabytes pays the kernel for zero-filled pages again. A plain BPTT step at
    n = 16384 on the checkpoint page's LSTM keeps 1.1 GiB for backward: on a 2-core Xeon it took 1,275 ms as glibc
    left it and 786 ms with freed memory reused, while the checkpointed step (1 MiB kept) took ~1,200 ms either
    way: the page-zeroing, not the arithmetic, had made checkpointing look faster (0.98×, then 1.53×). Leaving sets
    both thresholds to where glibc's dynamic ones end after a big free (32 MiB, 64 MiB). glibc only; else a no-op.
    A thread other than the main one allocates from an arena whose heaps hold at most 64 MiB, so there (a page's
    script thread) blocks above 64 MiB are still mapped afresh; the command line and the reference runs measure in
    the main thread.
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
    """Page faults the process has taken that the kernel served without disk I/O (zero-filled or already cached
    pages: the cost of memory touched for the first time), or None where the OS does not count them (Windows).
    Called around every timed call, so the module is looked up once, at import."""
    return None if resource is None else resource.getrusage(resource.RUSAGE_SELF).ru_minflt


PAGE_BYTES = mmap.PAGESIZE  # what one minor fault maps (4 KiB on x86-64 Linux, 16 KiB on Apple silicon)
FRESH_PAGES = 256  # a warm-up call that faulted in at least this many pages (1 MiB of 4 KiB pages) was not warm
EXTRA_WARMUPS = 8  # at most this many warm-up calls more while they keep faulting
