"""What each section adds to the home page, one record per section (`Home`), under the section's key
(`ui.section.Section.key`): the experiments whose rows it reads, its finding for its page's card, its cells of Table 1.

The home page and its precomputed summary (core.home.summary) iterate these records: `experiments()` says which rows
to read (a live run of this session, else the shipped reference), `findings` and `table1` what to draw. Importing
this module imports neither pandas nor the scoreboard (the home page's cold start reads the records without them);
the chapter's finding and cell functions live in core.home.scoreboard and are imported on their first call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class Home:
    key: str  # the section's key: its page's name for the page's main section, else "<page>:<section>"
    experiments: tuple[str, ...]  # the experiments whose rows it reads (live rows are kept under these names)
    finding: Callable | None = None  # (frames, tr) → a sentence for its page's card, or None (no rows to say it from)
    cells: Callable | None = None  # (frames, tr) → {Table 1 row: (cost, steps, path)}, None for a cell not its own
    # the question its finding answers, shown only once answered; None: the key's ('long_range:text' → 'long_range.text')
    question: str | None = None

    @property
    def page(self) -> str:
        return self.key.split(":")[0]

    @property
    def asks(self) -> str:
        return self.question or self.key.replace(":", ".")


RECORDS: dict[str, Home] = {}  # by key, in the order the home page draws their findings


def register(*records: Home) -> None:
    for r in records:
        RECORDS[r.key] = r


def experiments() -> tuple[str, ...]:
    """Every experiment a record reads, once each."""
    return tuple(dict.fromkeys(name for r in RECORDS.values() for name in r.experiments))


def findings(frames: dict, tr) -> dict[str, str]:
    """Each record's finding, by its key (a page's main section: the page's name); none for a record without rows."""
    said = {r.key: r.finding(frames, tr) for r in RECORDS.values() if r.finding}
    return {key: text for key, text in said.items() if text is not None}


def cells(frames: dict, tr) -> dict[str, tuple]:
    """Table 1's measured cells by row, each from the record that measures it; "no result yet" where it has no rows."""
    none, out = tr("home.t1.none"), {}
    for r in RECORDS.values():
        for row, mine in (r.cells(frames, tr) if r.cells else {}).items():
            out[row] = [old if new is None else new for old, new in zip(out.get(row, [None] * 3), mine)]
    return {row: tuple(none if c is None else c for c in cs) for row, cs in out.items()}


def table1(frames: dict, tr, gpu: dict | None = None):
    """The paper's Table 1 with the measured columns (a pandas DataFrame); `gpu`: the same experiments' rows from a
    GPU (a shipped reference) when `frames` are not from one, for one more column, the GPU's measured cost (the
    dependent steps and the gradient's path are the same on any device). A row no record fills: "not measured here"."""
    import pandas as pd

    from core.home.scoreboard import TABLE1

    measured = cells(frames, tr)
    devices = [str(df["device"].iloc[0]) for df in (gpu or {}).values() if df is not None and len(df)]
    gpu_cells = cells(gpu, tr) if devices else {}
    header = [tr(f"home.t1.{c}") for c in ("layer", "complexity", "sequential", "path", "m_cost", "m_steps", "m_path")]
    rows = []
    for key, *paper in TABLE1:
        row = dict(zip(header, (tr(f"home.t1.{key}"), *paper, *measured.get(key, (tr("home.t1.not_here"),) * 3))))
        if devices:
            row[tr("home.t1.m_cost_gpu", device=devices[0])] = gpu_cells.get(key, (tr("home.t1.not_here"),))[0]
        rows.append(row)
    return pd.DataFrame(rows)


def _scoreboard(name: str) -> Callable:
    """core.home.scoreboard's function `name`, imported on its first call."""

    def call(frames: dict, tr):
        from core.home import scoreboard

        return getattr(scoreboard, name)(frames, tr)

    return call


register(  # the chapter's pages: their main sections' findings and cells
    Home("serial", ("serial",), _scoreboard("serial_finding"), _scoreboard("serial_cells")),
    Home("long_range", ("long_range", "gradient_reach"), _scoreboard("long_range_finding"), _scoreboard("reach_cells")),
    Home("long_range:text", ("real_text",), _scoreboard("real_text_finding")),
    Home("depth", ("depth",), _scoreboard("depth_finding")),
    Home("attention_cost", ("attention_cost",), _scoreboard("attention_finding"), _scoreboard("attention_cells")),
    Home("answers", ("answers_speed", "answers_reach"), _scoreboard("answers_finding"), _scoreboard("answers_cells")),
)
