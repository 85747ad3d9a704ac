"""The memory guard: predict a point's peak bytes before running it, refuse what cannot fit, survive an OOM.

A refused point becomes a row with status='skipped_memory' and the predicted size; a CUDA out-of-memory error becomes
status='oom' after freeing the cache. Either way the sweep goes on and nothing measured before is lost.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable

import torch

from core import status
from core.device import free_memory_bytes
from core.memory_formulas import format_bytes
from core.rules import BUDGET_FRACTION  # of the memory free now: room for the app, the allocator, other sessions


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


def free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


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
        return {"status": status.OOM, "predicted_bytes": predicted_bytes, "note": str(err).splitlines()[0][:200]}
    if device.type == "cuda":
        free(device)
    return {"status": status.OK, "predicted_bytes": predicted_bytes, **row}
