"""The memory guard: predict a point's peak bytes before running it, refuse what cannot fit, survive an OOM.

A refused point becomes a row with status='skipped_memory' and the predicted size; a CUDA out-of-memory error becomes
status='oom' after freeing the cache. Either way the sweep goes on and nothing measured before is lost. An error that
breaks the CUDA context itself (an illegal memory access, a device-side assert) poisons every later call in the
process: `device_ok` tells, so an experiment can stop with what it has instead of failing point after point.
"""

from __future__ import annotations

import contextlib
import gc
import math
from collections.abc import Callable

import torch

from core.harness.device import free_memory_bytes, synchronize, total_memory_bytes
from core.harness.memory_formulas import format_bytes
from core.terms import status
from core.terms.rules import BUDGET_FRACTION  # of the memory free now: room for the app, the allocator, other sessions

# housekeeping (gc.collect + empty_cache) after a point only below this free share: each round is slow
TIGHT_FRACTION = 0.25


def budget_bytes(device: torch.device, fraction: float = BUDGET_FRACTION) -> int:
    return int(free_memory_bytes(device) * fraction)


def fits(predicted_bytes: float, device: torch.device, budget: int | None = None) -> bool:
    budget = budget_bytes(device) if budget is None else budget
    return math.isfinite(predicted_bytes) and predicted_bytes <= budget


def is_oom(err: BaseException) -> bool:
    if isinstance(err, torch.cuda.OutOfMemoryError):
        return True
    text = str(err).lower()
    return isinstance(err, (RuntimeError, MemoryError)) and (
        "out of memory" in text or "can't allocate" in text or isinstance(err, MemoryError)
    )


def oom_fields(err: BaseException) -> dict:
    """A point that ran out of memory: its status and the error's first line."""
    return {"status": status.OOM, "note": str(err).splitlines()[0][:200]}


def prepare_each(keys, prepare: Callable, device: torch.device) -> tuple[dict, dict]:
    """({key: prepare(key)}, {key: oom fields}) over `keys`: one that runs out of memory while being built is freed
    and becomes a row with status oom, the others go on; any other error propagates."""
    prepared, fields = {}, {}
    for key in keys:
        try:
            prepared[key] = prepare(key)
        except (RuntimeError, MemoryError) as err:
            if not is_oom(err):
                raise
            free(device)
            fields[key] = oom_fields(err)
    return prepared, fields


def failed_fields(errors: dict, device: torch.device) -> dict:
    """The oom fields of the points `bench.time_interleaved` dropped (its `errors`), their memory freed."""
    if errors:
        free(device)
    return {key: oom_fields(err) for key, err in errors.items()}


def free(device: torch.device) -> None:
    """Collect garbage and return CUDA's cached blocks; never raises (on a broken context it cannot help)."""
    gc.collect()
    if device.type == "cuda":
        with contextlib.suppress(RuntimeError):
            torch.cuda.empty_cache()


def tight(device: torch.device) -> bool:
    """Whether memory is tight on an accelerator now (the CPU's memory is the OS's to manage)."""
    if device.type == "cpu":
        return False
    try:
        return free_memory_bytes(device) < TIGHT_FRACTION * total_memory_bytes(device)
    except RuntimeError:
        return True


def device_ok(device: torch.device) -> bool:
    """Whether `device` still computes: a tiny op and a synchronisation. False after an error that left the CUDA
    context broken (every later call raises the same error), True after an ordinary one (an unsupported kernel)."""
    try:
        x = torch.arange(8, dtype=torch.float32, device=device)
        ok = float((x * 2).sum()) == 56.0
        synchronize(device)
        return ok
    except RuntimeError:
        return False


def guarded(
    measure: Callable[[], dict], predicted_bytes: float, device: torch.device, budget: int | None = None
) -> dict:
    """Run `measure()` if `predicted_bytes` fits the budget; return its row fields plus a status."""
    budget = budget_bytes(device) if budget is None else budget
    if not fits(predicted_bytes, device, budget):
        return {
            "status": status.SKIPPED_MEMORY,
            "predicted_bytes": predicted_bytes,
            "note": f"would need {format_bytes(predicted_bytes)}; budget {format_bytes(budget)}",
        }
    try:
        row = measure()
    except (RuntimeError, MemoryError) as err:
        if not is_oom(err):
            raise
        free(device)
        return {**oom_fields(err), "predicted_bytes": predicted_bytes}
    if tight(device):
        free(device)
    return {"status": status.OK, "predicted_bytes": predicted_bytes, **row}
