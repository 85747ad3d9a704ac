"""The one status vocabulary: what became of a measured point or a training run, defined once.

Every result row carries one of these in its `status` column; each has a short name (`status.<name>`) and, all
but ok, a banner (`status.<name>.banner`) in every catalogue; a test fails on a status that is not here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

OK = "ok"  # measured (or trained) normally
SKIPPED_MEMORY = "skipped_memory"  # the guard predicted it would not fit in memory; nothing was allocated
SKIPPED_TIME = "skipped_time"  # it would take longer than the run's time limit (extrapolated from smaller points)
OOM = "oom"  # it ran out of memory anyway; the memory was freed and the sweep went on
DIVERGED = "diverged"  # training met a NaN/inf loss or gradient, or a loss above the stated bound
STALLED = "stalled"  # training ended without learning what it could (an outcome of a finished run)
UNSUPPORTED = "unsupported"  # this device, dtype or shape cannot run that kernel (e.g. a forced SDPA backend)
STOPPED = "stopped"  # the learner pressed Stop before it finished

STATUSES = (OK, SKIPPED_MEMORY, SKIPPED_TIME, OOM, DIVERGED, STALLED, UNSUPPORTED, STOPPED)
BANNERED = tuple(s for s in STATUSES if s != OK)  # a page shows a banner for each of these it draws
NOT_MEASURED = (SKIPPED_MEMORY, SKIPPED_TIME, OOM, UNSUPPORTED)  # refused or failed points: rows without metrics

_LEGACY = "skipped"  # files written before the two kinds of refusal were told apart


def normalize(df: pd.DataFrame) -> pd.DataFrame:
    """A result frame whose `status` column uses this vocabulary: an older file's 'skipped' becomes
    skipped_time when its note says it would take too long, else skipped_memory."""
    if df is None or "status" not in df or not (df["status"] == _LEGACY).any():
        return df
    df = df.copy()
    legacy = df["status"] == _LEGACY
    by_time = df["note"].astype(str).str.startswith("would take") if "note" in df else False
    df.loc[legacy & by_time, "status"] = SKIPPED_TIME
    df.loc[legacy & ~by_time, "status"] = SKIPPED_MEMORY
    return df


def unknown(values) -> list[str]:
    """The values among `values` that are not in the vocabulary."""
    return sorted({str(v) for v in values} - set(STATUSES))
