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
from typing import NamedTuple

import pandas as pd

from core.harness.device import ENV_TEXT
from core.terms import status

MAX_BYTES = 5 * 2**20  # above the largest full-preset reference
MAX_ROWS = 100_000
# What one session keeps (ui.upload): room for every shipped reference twice over.
MAX_FILES = 24
MAX_SESSION_BYTES = 32 * 2**20
ENV = ("device", "device_type", "status")

_TRUE, _FALSE = ("true", "1", "1.0", "yes"), ("false", "0", "0.0", "no")
# Never blank: the device and status of every row, and in a measured row (status ok) what was measured.
KEYS = ("device", "status")
POINT_KEYS = ("model", "impl", "mixer", "task", "phase", "form", "scheme", "seq_len", "context_len")
NON_NEGATIVE_SUFFIXES = ("_ms", "_bytes", "_s", "_flops", "_per_s")
NON_NEGATIVE = ("seq_len", "threads", "step", "distance", "n_layers", "batch_size", "d_model", "params", "layer")
SHARES = ("utilization", "accuracy", "chance")  # fractions of a whole: 0..1
HUGE = 1e30  # no quantity the lab writes comes near (its largest: hypothetical KV caches of ~3e12 bytes)

# Physics: what no device measures. The fastest accelerators' published dense peaks are ~2.3 PFLOP/s in bf16 and
# ~9 PFLOP/s in fp4 (NVIDIA B200 datasheet: 2.25 PFLOPS dense BF16, 4.5 FP8, 9 FP4; the sparse figures are twice
# these); the lab times fp32 and bf16, so a row above 10 PFLOP/s is not a measurement.
MAX_FLOPS_PER_S = 1e16
# A step runs at least one kernel, and a launch costs a few microseconds (NVIDIA's CUDA C++ Best Practices Guide):
# a median step time below one microsecond is not a measurement.
MIN_STEP_MS = 1e-3
STEP_TIMES = ("train_ms", "time_ms", "ms_per_token", "compute_ms")
FLOPS_PER_S = ("achieved_flops_per_s", "peak_flops_per_s", "peak_before_flops_per_s", "peak_after_flops_per_s")


@dataclasses.dataclass(frozen=True)
class Rejected:
    # empty, too_large, unreadable, unknown_experiment, missing_columns, wrong_type, blank_key, bad_status, absurd,
    # implausible
    kind: str
    detail: str = ""  # English specifics: the column, the value


class Kinds(NamedTuple):
    """An experiment's result columns (what its `run` writes) and which of them hold words or yes/no, the rest
    numbers: its module's COLUMNS, TEXT and FLAGS, with every row's status, note and environment."""

    columns: tuple[str, ...]
    text: frozenset
    flags: frozenset


ROW_TEXT = ("status", "note", *ENV_TEXT)  # columns every row carries that hold words


def _schemas() -> dict[str, Kinds]:
    """Each experiment's Kinds, by its name."""
    import sys

    from core.experiments import EXPERIMENTS

    out = {}
    for name, exp in EXPERIMENTS.items():
        module = sys.modules.get(exp.run.__module__)
        if getattr(module, "COLUMNS", None):
            columns = tuple(dict.fromkeys((*module.COLUMNS, *ENV)))
            text = frozenset((*getattr(module, "TEXT", ()), *ROW_TEXT))
            out[name] = Kinds(columns, text, frozenset(getattr(module, "FLAGS", ())))
    return out


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
    kinds = _schemas()
    words = {c for k in kinds.values() for c in (*k.text, *k.flags)}
    try:  # text columns stay text: a commit hash such as '1e16545' would otherwise read as a number (inf)
        df = pd.read_csv(io.BytesIO(data), nrows=MAX_ROWS + 1, dtype=dict.fromkeys(words, str))
    except Exception as err:  # noqa: BLE001 - anything pandas cannot parse as a CSV is simply not one
        return Rejected("unreadable", type(err).__name__)
    if not len(df):
        return Rejected("empty")
    if len(df) > MAX_ROWS:
        return Rejected("too_large", f"more than {MAX_ROWS:,} rows")
    from core.store.results import load_reference

    schemas = {n: k.columns for n, k in kinds.items()}
    name = experiment or identify(file_name, df.columns, schemas)
    if name is None:  # not named after an experiment: the one whose (shipped) columns it holds
        musts = {n: required(n, cols, load_reference(n)[0]) for n, cols in schemas.items()}
        name = identify("", df.columns, musts)
    if name is None or name not in schemas:
        return Rejected("unknown_experiment", ", ".join(map(str, list(df.columns)[:6])))
    if reference is None:
        reference = load_reference(name)[0]
    missing = [c for c in required(name, schemas[name], reference) if c not in df.columns]
    if missing and not _measured_nothing(df):
        return Rejected("missing_columns", ", ".join(missing[:8]) + (" …" if len(missing) > 8 else ""))
    df = df.assign(**dict.fromkeys(missing, math.nan))  # a run stopped before its first point: its status row only
    problem = (
        _typed(df, kinds[name]) or _blank(df) or _unknown_status(df) or _absurd(df, kinds[name]) or _implausible(df)
    )
    if problem:
        return problem
    return name, status.normalize(df.assign(source="uploaded"))


def _measured_nothing(df: pd.DataFrame) -> bool:
    """Only status rows (a run that stopped, or was refused, before measuring a point): no row is ok."""
    return "status" in df and not (df["status"].astype(str).str.strip() == status.OK).any()


def _first(values) -> str:
    return str(values.iloc[0])[:30]


def _typed(df: pd.DataFrame, kinds: Kinds) -> Rejected | None:
    """Each of the experiment's columns as what it holds (words, yes/no, else numbers), converted in place."""
    for column in kinds.columns:
        if column not in df or column in kinds.text:
            continue
        given = df[column]
        if column in kinds.flags:
            words = given.map(lambda v: str(v).strip().lower(), na_action="ignore")
            bad = given.notna() & ~words.isin(_TRUE + _FALSE)
            if bad.any():
                return Rejected("wrong_type", f"{column} = {_first(given[bad])!r}")
            df[column] = words.map(lambda w: w in _TRUE, na_action="ignore").astype(object)
            continue
        numbers = pd.to_numeric(given, errors="coerce")
        bad = numbers.isna() & given.notna()
        if bad.any():
            return Rejected("wrong_type", f"{column} = {_first(given[bad])!r}")
        df[column] = numbers
    return None


def _blank(df: pd.DataFrame) -> Rejected | None:
    """A row without its device or status, or a measured row without what it measured, cannot be drawn."""
    measured = df["status"].astype(str).str.strip() == status.OK
    for column in (*KEYS, *POINT_KEYS):
        if column not in df:
            continue
        value = df[column]
        blank = value.isna() | (value.astype(str).str.strip() == "")
        if column in POINT_KEYS:
            blank &= measured
        if blank.any():
            return Rejected("blank_key", f"{column}, row {int(blank.to_numpy().argmax()) + 2}")
    return None


def _unknown_status(df: pd.DataFrame) -> Rejected | None:
    unknown = [s for s in status.unknown(df["status"]) if s != "skipped"]  # an older file's word is read as today's
    return Rejected("bad_status", ", ".join(unknown[:3])) if unknown else None


def _absurd(df: pd.DataFrame, kinds: Kinds) -> Rejected | None:
    """Values that cannot be at all: negative sizes and times, shares outside 0–1, infinities, numbers beyond HUGE."""
    for column in df.columns:
        if df[column].dtype.kind not in "fi" or column in kinds.text:
            continue
        values = df[column].dropna()
        wrong = values[(values.abs() > HUGE) | ~values.map(math.isfinite)]
        if column in SHARES:
            wrong = values[(values < 0) | (values > 1)]
        elif column in NON_NEGATIVE or column.endswith(NON_NEGATIVE_SUFFIXES):
            wrong = pd.concat([wrong, values[values < 0]])
        if len(wrong):
            return Rejected("absurd", f"{column} = {wrong.iloc[0]:g}")
    return None


def _implausible(df: pd.DataFrame) -> Rejected | None:
    """Values no device measures: a throughput above MAX_FLOPS_PER_S, a measured step below MIN_STEP_MS."""
    measured = df["status"] == status.OK
    rates = {c: df[c] for c in FLOPS_PER_S if c in df}
    if "flops" in df and "train_ms" in df:  # what the row's own FLOP count and time imply
        rates["flops / train_ms"] = df["flops"] / (df["train_ms"] / 1e3)
    for column in STEP_TIMES:  # first: a step too short also implies a throughput too high
        if column in df:
            under = df.loc[measured & (df[column] < MIN_STEP_MS), column]
            if len(under):
                return Rejected("implausible", f"{column} = {under.iloc[0]:.3g} ms < {MIN_STEP_MS:g} ms")
    for column, values in rates.items():
        over = values[values > MAX_FLOPS_PER_S]
        if len(over):
            return Rejected("implausible", f"{column} = {over.iloc[0]:.3g} FLOP/s > {MAX_FLOPS_PER_S:.0e}")
    return None
