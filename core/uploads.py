"""Results from another machine: a CSV written by `python -m core run … --out` or `python -m core reference` on
any device, checked before a page draws a single row of it.

A CPU-only host (Streamlit Community Cloud) cannot measure the GPU side of the chapter's claims, but a learner who
ran the CLI on a GPU somewhere can bring the file here. Nothing in it is executed or unpickled: it is parsed as
text by pandas, and accepted only if it is the experiment's own shape — its columns, numbers where the lab writes
numbers, statuses from the lab's vocabulary, values that can physically be — and small. One problem, named in the
learner's language (`upload.<kind>` in the catalogues), rejects the whole file; nothing of it is drawn.
"""

from __future__ import annotations

import dataclasses
import io
import math

import pandas as pd

from core import status

MAX_BYTES = 5 * 2**20  # a full-preset reference is ~3 MiB at most (depth); more is not one of ours
MAX_ROWS = 100_000
ENV = ("device", "device_type", "status")
TEXT = ("device", "device_type", "status", "git_commit", "date", "torch_version", "note", "cudnn_version")
NON_NEGATIVE_SUFFIXES = ("_ms", "_bytes", "_s", "_flops", "_per_s")
NON_NEGATIVE = ("seq_len", "threads", "step", "distance", "n_layers", "batch_size", "d_model", "params", "layer")
SHARES = ("utilization", "accuracy", "chance")  # fractions of a whole: 0..1


@dataclasses.dataclass(frozen=True)
class Rejected:
    kind: str  # empty, too_large, unreadable, unknown_experiment, missing_columns, wrong_type, absurd, bad_status
    detail: str = ""  # English specifics: the column, the value


def _schemas() -> dict[str, tuple[str, ...]]:
    """Each experiment's result columns (what its `run` writes), from the experiment modules themselves."""
    from core.experiments import EXPERIMENTS, attention_cost, gradient_reach, kv_cache, long_range, serial
    from core.findings import depth

    known = {
        "serial": serial.COLUMNS,
        "gradient_reach": gradient_reach.COLUMNS,
        "long_range": long_range.COLUMNS,
        "depth": depth.COLUMNS,
        "attention_cost": attention_cost.COLUMNS,
        "kv_cache": kv_cache.COLUMNS,
    }
    for name, exp in EXPERIMENTS.items():  # experiments added later declare theirs on the module that runs them
        if name not in known:
            import sys

            columns = getattr(sys.modules.get(exp.run.__module__), "COLUMNS", None)
            if columns:
                known[name] = tuple(columns)
    return {name: tuple(dict.fromkeys((*cols, *ENV))) for name, cols in known.items()}


def required(name: str, schema: tuple[str, ...], reference: pd.DataFrame | None) -> tuple[str, ...]:
    """What a file of experiment `name` must hold: its columns, less those the shipped reference lacks too (an
    older lab wrote them; the pages read such files already)."""
    if reference is None or not len(reference):
        return schema
    return tuple(c for c in schema if c in reference.columns or c in ENV)


def identify(file_name: str, columns, schemas: dict) -> str | None:
    """The experiment a file holds: named by its file name's prefix (as the CLI writes them), else the only one
    whose columns it has."""
    stem = file_name.rsplit("/", 1)[-1].lower()
    for name in sorted(schemas, key=len, reverse=True):  # 'kv_cache' before a shorter name it starts with
        if stem == f"{name}.csv" or stem.startswith(f"{name}-"):  # as `reference` names its files
            return name
    having = [name for name, cols in schemas.items() if set(cols) <= set(columns)]
    return having[0] if len(having) == 1 else None


def check(data: bytes, file_name: str, reference: pd.DataFrame | None = None, experiment: str | None = None):
    """(experiment, frame) for an acceptable file, else Rejected. `reference`: rows of that experiment (by default
    the shipped ones), whose numeric columns the file's must match (their types are what the pages compute with)."""
    if not data:
        return Rejected("empty")
    if len(data) > MAX_BYTES:
        return Rejected("too_large", f"{len(data) / 2**20:.1f} MiB; at most {MAX_BYTES // 2**20} MiB")
    try:  # text columns stay text: a commit hash such as '1e16545' would otherwise read as a number (inf)
        df = pd.read_csv(io.BytesIO(data), nrows=MAX_ROWS + 1, dtype=dict.fromkeys(TEXT, str))
    except Exception as err:  # noqa: BLE001 - anything pandas cannot parse as a CSV is simply not one
        return Rejected("unreadable", type(err).__name__)
    if not len(df):
        return Rejected("empty")
    if len(df) > MAX_ROWS:
        return Rejected("too_large", f"more than {MAX_ROWS:,} rows")
    from core.results import load_reference

    schemas = _schemas()
    name = experiment or identify(file_name, df.columns, schemas)
    if name is None:  # not named after an experiment: the one whose (shipped) columns it holds
        musts = {n: required(n, cols, load_reference(n)[0]) for n, cols in schemas.items()}
        name = identify("", df.columns, musts)
    if name is None or name not in schemas:
        return Rejected("unknown_experiment", ", ".join(map(str, list(df.columns)[:6])))
    if reference is None:
        reference = load_reference(name)[0]
    missing = [c for c in required(name, schemas[name], reference) if c not in df.columns]
    if missing:
        return Rejected("missing_columns", ", ".join(missing[:8]) + (" …" if len(missing) > 8 else ""))
    for column in schemas[name]:
        if reference is None or column not in reference or reference[column].dtype.kind not in "fi":
            continue
        numbers = pd.to_numeric(df[column], errors="coerce")
        bad = numbers.isna() & df[column].notna()
        if bad.any():
            return Rejected("wrong_type", f"{column} = {str(df[column][bad].iloc[0])[:30]!r}")
        df[column] = numbers
    for column in df.columns:
        if df[column].dtype.kind not in "fi" or column in TEXT:
            continue
        values = df[column].dropna()
        if column in SHARES:
            wrong = values[(values < 0) | (values > 1)]
        elif column in NON_NEGATIVE or column.endswith(NON_NEGATIVE_SUFFIXES):
            wrong = values[(values < 0) | ~values.map(math.isfinite)]
        else:
            wrong = values[values.map(lambda v: math.isinf(v))]
        if len(wrong):
            return Rejected("absurd", f"{column} = {wrong.iloc[0]:g}")
    unknown = [s for s in status.unknown(df["status"]) if s != "skipped"]  # an older file's word is read as today's
    if unknown:
        return Rejected("bad_status", ", ".join(unknown[:3]))
    return name, status.normalize(df.assign(source="uploaded"))
