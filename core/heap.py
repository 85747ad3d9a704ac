"""The process's heap while measuring: freed memory kept for reuse while timing, and handed back afterwards."""

from __future__ import annotations

import contextlib

import torch


def return_freed_memory() -> None:
    """Give the memory a finished run freed back to the operating system, so a long-lived server levels off.

    torch frees its CPU tensors to glibc's malloc, which keeps large freed blocks in its heap for reuse (its mmap
    threshold rises after the first big free, so later n² tensors come from the heap too): the server's RSS then
    swung by ~150 MiB from run to run and drifted up on a shared host. `malloc_trim(0)` hands free heap pages back
    (glibc only; elsewhere this is a no-op). CUDA's caching allocator is emptied the same way.
    """
    import ctypes
    import gc

    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, Windows, musl)
        pass


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_STEADY = ((_M_MMAP_THRESHOLD, 32 << 20), (_M_TRIM_THRESHOLD, 64 << 20))  # where glibc's dynamic thresholds top out
_reusing = [0]  # how deep inside freed_memory_reused this process is: only the outermost one acts


@contextlib.contextmanager
def freed_memory_reused():
    """While timing, keep freed memory in the process for the next step, as PyTorch's CUDA caching allocator always
    does; on leaving the outermost one, hand it back (`return_freed_memory`). `time_interleaved` times inside one.

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
    import ctypes

    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (macOS, Windows, musl)
        yield
        return
    if _reusing[0] == 0:
        for param, _ in _STEADY:
            mallopt(param, ctypes.c_int(2**31 - 1))
    _reusing[0] += 1
    try:
        yield
    finally:
        _reusing[0] -= 1
        if _reusing[0] == 0:
            for param, value in _STEADY:
                mallopt(param, ctypes.c_int(value))
            return_freed_memory()
