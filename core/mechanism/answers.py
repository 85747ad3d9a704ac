"""Page 5's instant view: the dependent levels of a recurrence over n tokens, by the way it is computed: the loop's
n steps, a work-efficient scan's up- and down-sweep of 2⌈log₂ n⌉ levels (Blelloch 1990), and a chunked form's
⌈n / CHUNK⌉ steps between chunks (each chunk computed at once). Exact counts, not times."""

from __future__ import annotations

import math

import pandas as pd

from core.models.mixers.base import scan_depth

CHUNK = 64  # tokens per chunk of the chunked form
TREE_MAX = 16  # the scan's tree is drawn for at most this many positions


def levels(n: int, chunk: int = CHUNK) -> pd.DataFrame:
    """form, dependent levels at n tokens."""
    if n < 1:
        raise ValueError(f"n: {n} must be at least 1")
    return pd.DataFrame({"form": ["loop", "scan", "chunked"], "levels": [n, scan_depth(n), math.ceil(n / chunk)]})


def tree(n: int) -> pd.DataFrame:
    """The work-efficient scan over n positions (n ≤ TREE_MAX, rounded up to a power of two): one row per
    combine, with its level (1 up to 2·log₂ n), sweep ("up" or "down"), the position it updates and the one it reads.
    The loop would be n − 1 such levels of one combine each."""
    size = 1 << max(0, math.ceil(math.log2(max(n, 1))))
    depth = int(math.log2(size))
    out = []
    for lvl in range(depth):  # up-sweep: partial sums at strides 2, 4, …
        stride = 2 ** (lvl + 1)
        for i in range(stride - 1, size, stride):
            out.append((lvl + 1, "up", i, i - stride // 2))
    for k, lvl in enumerate(reversed(range(depth))):  # down-sweep: prefixes pushed back down
        stride = 2 ** (lvl + 1)
        for i in range(stride - 1, size, stride):
            out.append((depth + k + 1, "down", i - stride // 2, i))
    return pd.DataFrame(out, columns=["level", "sweep", "to", "from"])


def lines(frame: pd.DataFrame, n: int, tr) -> list[str]:
    lv = frame.set_index("form")["levels"]
    return [
        tr(
            "answers.instant.levels",
            n=f"{n:,}",
            loop=f"{lv['loop']:,}",
            scan=f"{lv['scan']:,}",
            chunked=f"{lv['chunked']:,}",
            chunk=CHUNK,
        ),
        tr("answers.instant.not_time"),
    ]
