"""Where the command line writes: output paths checked before any work, rows written as they are measured.

A bad `--out` or `--out-dir` is a ValueError naming the option (exit 2) before anything is measured. `RowWriter`
rewrites the partial CSV atomically, throttled, so a time-out, crash or kill keeps what was measured; a run that
ends early adds a `stop_row`. A write that fails puts the rows elsewhere rather than losing them. Torch-free.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from core.harness.device import ENV_COLUMNS
from core.store.results import read_csv, save_csv_keeping
from core.terms import status

MIN_WRITE_INTERVAL_S = 2.0  # at most one rewrite of the partial CSV this often …
WRITE_SHARE = 0.05  # … and at most this share of the run's time spent rewriting it


def _shown(path) -> str:
    return repr(str(path))  # quoted, and a newline in a name cannot split the one-line error


def check_out_dir(option: str, value: str | os.PathLike) -> Path:
    """The folder `value`, created if absent and checked writable; ValueError naming `option` if it cannot be."""
    folder = Path(value).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{option}: {_shown(folder)} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"{option}: cannot create the folder {_shown(folder)} ({err.strerror or err})") from None
    try:  # a real write: os.access says yes to root and is wrong on some network file systems
        with tempfile.TemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as err:
        raise ValueError(f"{option}: cannot write in {_shown(folder)} ({err.strerror or err})") from None
    return folder


def check_out_file(option: str, value: str | os.PathLike) -> Path:
    """The CSV file `value`: a name ending in .csv, not a folder, in a folder that exists (or can be made) and can
    be written; ValueError naming `option` otherwise."""
    path = Path(value).expanduser()
    if path.is_dir():
        raise ValueError(f"{option}: {_shown(path)} is a folder; give a file name ending in .csv")
    if path.suffix.lower() != ".csv":
        raise ValueError(f"{option}: {_shown(path)} must be a file name ending in .csv")
    check_out_dir(option, path.parent)
    return path


def stop_row(rows: list[dict], note: str, env: dict | None = None) -> dict:
    """The last row of a run that ended early: status 'stopped', why in `note`, the run's environment columns."""
    last = rows[-1] if rows else (env or {})
    return {**{c: last[c] for c in ENV_COLUMNS if c in last}, "status": status.STOPPED, "note": note}


class RowWriter:
    """Rows of one run, written to `path` as they arrive (atomically, throttled) and once more at the end.
    `on_message(text)` hears once if they went elsewhere; only the last write may raise (OSError)."""

    def __init__(self, path: str | os.PathLike, on_message: Callable[[str], None] | None = None):
        self.path = self.target = Path(path)
        self.rows: list[dict] = []
        self.on_message = on_message
        self.started = time.monotonic()
        self.last_write = -math.inf  # the first rows are written at once: the file exists, under its name, early
        self.write_s = 0.0
        self.told = False

    def add(self, rows) -> None:
        self.rows.extend(rows)
        now = time.monotonic()
        due = now - self.last_write >= MIN_WRITE_INTERVAL_S and self.write_s <= WRITE_SHARE * (now - self.started)
        if rows and due:
            try:
                self.write()
            except OSError:
                pass  # nowhere writable just now: the rows stay in memory, the next chunk or the end tries again

    def write(self, df: pd.DataFrame | None = None) -> Path | None:
        """Write `df` (or the rows so far) now; where they went, or None when there is nothing to write yet."""
        df = pd.DataFrame(self.rows) if df is None else df
        if not len(df):
            return None
        t0 = time.monotonic()
        where, problem = save_csv_keeping(df, self.target)
        self.write_s += time.monotonic() - t0
        self.last_write = time.monotonic()
        if problem is not None:
            self.target = where  # keep writing where it worked
            if not self.told and self.on_message is not None:
                self.on_message(problem)
            self.told = True
        return where

    def stop(self, note: str, env: dict | None = None) -> Path | None:
        """Write the rows so far and a last row saying why the run ended early."""
        self.rows.append(stop_row(self.rows, note, env))
        return self.write()


def summary(path: str | os.PathLike) -> tuple[int, dict, dict]:
    """(rows, count per status, last row without its empty cells) of a result CSV; (0, {}, {}) if unreadable."""
    try:
        df = read_csv(path)
    except Exception:  # noqa: BLE001 - a missing, empty or cut file is a result to report
        return 0, {}, {}
    if not len(df):
        return 0, {}, {}
    counts = df["status"].value_counts().to_dict() if "status" in df else {}
    last = {k: v for k, v in df.iloc[-1].to_dict().items() if not (isinstance(v, float) and math.isnan(v))}
    return len(df), counts, last


def add_stop_row(path: str | os.PathLike, note: str, env: dict | None = None) -> Path:
    """Append a stop row to the result CSV at `path` (or start one with it); where it was written."""
    try:
        df = read_csv(path)
    except Exception:  # noqa: BLE001 - absent or unreadable: the stop row starts a new file
        df = pd.DataFrame()
    row = stop_row(df.tail(1).to_dict("records"), note, env)
    return save_csv_keeping(pd.concat([df, pd.DataFrame([row])], ignore_index=True), path)[0]
