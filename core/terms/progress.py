"""A live run's progress in the page's words: the point it measured last (its model and its place on the page's
axes), how far the run is and about how long it has left. Every part is a catalogue sentence, so no registry name,
`T=` or seed reaches the page. Torch-free: the server's page thread calls it on every poll.
"""

from __future__ import annotations

import math

NAMES = {  # a column holding a name → the catalogue prefix of its words
    "model": "model.",
    "mixer": "model.",
    "impl": "attention_cost.impl.",
    "form": "answers.form.",
    "measure": "long_range.measure.",
    "scheme": "attention_cost.kv.scheme.",
}
AXES = ("seq_len", "context_len", "distance", "n_layers", "d_model", "n_pairs", "threads")  # 'progress.<column>'


def point_words(row: dict, columns: tuple[str, ...], tr) -> str:
    """The point `row` measured, in words: 'LSTM (fused), n = 1,024'; '' when its columns say nothing."""
    parts = []
    for column in columns:
        value = row.get(column)
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            continue
        if column in NAMES:
            parts.append(tr(NAMES[column] + str(value)))
        elif column in AXES:
            parts.append(tr(f"progress.{column}", v=int(value)))
    return tr("progress.join").join(parts)


def left_words(seconds: float | None, tr) -> str:
    """'about 12 s left' / 'about 2 min left'; 'almost done' once the estimate has run out; '' while there is
    nothing to estimate from."""
    if seconds is None or not math.isfinite(seconds):
        return ""
    if seconds < 1:
        return tr("progress.almost")
    if seconds >= 90:
        return tr("progress.left_min", m=round(seconds / 60))
    return tr("progress.left_s", s=max(1, 5 * round(seconds / 5)) if seconds >= 10 else max(1, round(seconds)))


def progress_words(done: int, total: int, last_row: dict | None, columns: tuple[str, ...], left, tr) -> str:
    """'LSTM + attention, distance 16: 6 of 24 done · about 12 s left', in the page's language."""
    what = point_words(last_row, columns, tr) if last_row else ""
    counted = tr("progress.counted", done=done, total=total)
    text = tr("progress.what", what=what, counted=counted) if what else counted
    rest = left_words(left, tr)
    return tr("progress.left", text=text, left=rest) if rest else text
