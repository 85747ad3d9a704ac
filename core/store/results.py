"""Results as tidy CSV files: atomic writes, tolerant reads, and the shipped reference data under data/reference/.

One row per measured point (zoology's records → DataFrame). A corrupt or foreign file is reported and skipped,
never raised into a page.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import secrets
import tempfile
import time
from pathlib import Path

import pandas as pd

from core.store import files
from core.terms import status

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "data"
REFERENCE_DIR = DATA_DIR / "reference"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")[:60] or "device"


def tidy(rows, columns: tuple[str, ...]) -> pd.DataFrame:
    """Row dicts (or a frame) as a frame whose `columns` come first, each present (NaN where no row had it)."""
    df = pd.DataFrame(rows)
    for c in columns:
        if c not in df.columns:
            df[c] = float("nan")
    return df[list(columns) + [c for c in df.columns if c not in columns]]


def _tmp_name(path: Path) -> str:
    """A temp file's name beside `path`: it names its writer's process, so a later write can tell an orphan."""
    return f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def _orphans(path: Path) -> list[Path]:
    """Temp files of `path` whose writer is gone (killed mid-write): older ones name no process (mkstemp's names)
    and count as orphans after a minute."""
    out = []
    for tmp in path.parent.glob(f"{glob.escape(path.name)}.*.tmp"):
        parts = tmp.name[len(path.name) + 1 : -len(".tmp")].split(".")
        try:
            if len(parts) == 2 and parts[0].isdigit():
                pid = int(parts[0])
                if pid == os.getpid() or _alive(pid):
                    continue
            elif time.time() - tmp.stat().st_mtime < 60:  # wall clock on purpose: file times are wall-clock
                continue
        except OSError:
            continue
        out.append(tmp)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, someone else's
        return True
    return True


def save_csv(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write `df` to `path` atomically: a temp file in the same folder, then rename. Temp files a killed earlier
    write left beside `path` are removed first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for orphan in _orphans(path):
        with contextlib.suppress(OSError):
            orphan.unlink()
    tmp = path.parent / _tmp_name(path)
    try:
        with open(tmp, "x", newline="") as f:
            df.to_csv(f, index=False)
        os.chmod(tmp, 0o644)  # a result file is for everyone who reads the folder
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path


def save_csv_keeping(df: pd.DataFrame, path: str | os.PathLike) -> tuple[Path, str | None]:
    """`save_csv`, and if that fails, the rows kept elsewhere rather than lost: beside `path` under another name,
    else in the system's temp folder. Returns (where they are, None) or (where they are, what went wrong)."""
    path = Path(path)
    try:
        return save_csv(df, path), None
    except OSError as err:
        why = f"could not write {path} ({type(err).__name__}: {err.strerror or err})"
    stem = f"{path.stem}.recovered-{os.getpid()}"
    for fallback in (path.with_name(stem + ".csv"), Path(tempfile.gettempdir()) / (stem + ".csv")):
        try:
            return save_csv(df, fallback), f"{why}; the rows are in {fallback} instead"
        except OSError:
            continue
    raise OSError(f"{why}, nor beside it, nor in {tempfile.gettempdir()}: the rows were only printed")


# columns read as text whatever they hold: a short commit hash such as 59e6225 reads as a number otherwise (59 ×
# 10^6225, inf), and a file read and written again (a stop row appended) would keep the number
TEXT_COLUMNS = {"git_commit": str}


def read_csv(path: str | os.PathLike) -> pd.DataFrame:
    """A result CSV as pandas reads it, its TEXT_COLUMNS as text."""
    return pd.read_csv(path, dtype=TEXT_COLUMNS)


def load_csv(
    path: str | os.PathLike, required: tuple[str, ...] = ()
) -> tuple[pd.DataFrame | None, files.FileProblem | None]:
    """(frame, None) for a readable file holding the `required` columns; (None, problem) for one that cannot be
    used; (frame, problem of kind 'cut_row') for a file cut off mid-row, whose incomplete last row is dropped."""
    path = Path(path)
    try:
        files.check_present(path)
        df = read_csv(path)
    except files.DamagedFile as err:
        return None, err.problem
    except pd.errors.EmptyDataError:
        return None, files.FileProblem(path.name, "empty")
    except Exception as e:  # noqa: BLE001 - any unreadable file is a result to report, not a crash
        return None, files.FileProblem(path.name, "unreadable", type(e).__name__)
    missing = [c for c in required if c not in df.columns]
    if missing:
        return None, files.FileProblem(path.name, "wrong_kind", f"missing {', '.join(missing)}")
    problem = None
    if len(df) and files.ends_mid_line(path):  # every row save_csv writes ends with a newline
        df = df.iloc[:-1].reset_index(drop=True)
        problem = files.FileProblem(path.name, "cut_row")
    return status.normalize(df), problem


def reference_path(experiment: str, device_label: str, device_type: str) -> Path:
    return (
        REFERENCE_DIR
        / f"{experiment}-{device_type}-{slug(device_label.split('·')[1] if '·' in device_label else device_label)}.csv"
    )


def reference_device(ref: pd.DataFrame, kind: str, strict: bool = False) -> str | None:
    """The reference device a page's takeaways speak of: of those of `kind` (cpu, cuda…) the one with the most rows, its
    fullest run (a run of one distance beside it is drawn, not concluded from); without one of that kind the fullest
    of any kind, unless `strict`. None when there is none."""
    if not len(ref) or "device" not in ref:
        return None
    counts = ref["device"].astype(str).value_counts(sort=False)
    same = [d for d in counts.index if d.startswith(kind)]
    pool = same or ([] if strict else list(counts.index))
    return max(pool, key=lambda d: counts[d]) if pool else None


def load_reference(
    experiment: str, required: tuple[str, ...] = ("device",), folder: Path | None = None
) -> tuple[pd.DataFrame, list[files.FileProblem]]:
    """Every reference file of `experiment`, concatenated with a `source` column; plus the problems found."""
    folder = Path(folder or REFERENCE_DIR)
    frames, problems = [], []
    for path in sorted(folder.glob(f"{experiment}-*.csv")):
        df, problem = load_csv(path, required)
        if problem is not None:
            problems.append(problem)
        if df is not None and len(df):
            frames.append(df.assign(source="reference"))
    if not frames:
        return pd.DataFrame(columns=list(required)), problems
    return pd.concat(frames, ignore_index=True), problems
