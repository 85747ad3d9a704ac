"""Reading real-text rows: a measure's measured rows, numbers over the seeds as the sentences say them, and the
chapter's pair among the models (core.findings.real_text and core.findings.text_training both read them so)."""

from __future__ import annotations

import pandas as pd

from core.models import registry
from core.models.registry import ATTENTION, RECURRENT
from core.terms import status

NGRAM = "ngram"  # the count baseline's rows (core.experiments.real_text)
NGRAM_COPY = "ngram_copy"  # the count baseline with a copy rule (core.training.ngram.CopyNGram)
BASELINES = (NGRAM, NGRAM_COPY)


def measured(df: pd.DataFrame, measure: str) -> pd.DataFrame:
    """The rows of `measure` that measured (status ok); an empty frame of the columns the findings read if none."""
    if df is None or not len(df) or "measure" not in df:
        return pd.DataFrame(columns=["model", "seed", "measure", "x", "bits_per_byte", "n_bytes", "split", "status"])
    return df[(df["measure"] == measure) & (df["status"] == status.OK)]


def pair(names) -> tuple[str | None, str | None]:
    """(the Transformer, the LSTM) among `names`: the chapter's representatives of attention and recurrence."""
    names = list(dict.fromkeys(names))
    return registry.representative(ATTENTION, names), registry.representative(RECURRENT, names)


def span(values, fmt: str = "{:.2f}") -> str:
    """One number, or 'lo–hi' over the seeds ('lo – hi', spaced, when a bound is negative)."""
    vs = sorted(float(v) for v in values)
    lo, hi = (fmt.format(v).replace("-", "−") for v in (vs[0], vs[-1]))
    return lo if len(vs) == 1 or lo == hi else f"{lo} – {hi}" if vs[0] < 0 else f"{lo}–{hi}"


def signed(values, fmt: str = "{:+.2f}") -> str:
    """Each seed's value with its sign, in seed order: '+0.47 / +0.54', '−0.01 / +0.02'."""
    return " / ".join(fmt.format(float(v)).replace("-", "−") for v in values)


def seeds_said(n: int, tr) -> str:
    """'2 seeds', '1 seed': a count, never read as a seed's number."""
    return tr("long_range.text.seeds", n=int(n))


def per_model(df: pd.DataFrame, key: str, tr, **values) -> list[str]:
    """One clause `long_range.text.take.<key>` per model, each value computed from that model's rows."""
    return [
        tr(f"long_range.text.take.{key}", model=tr(f"model.{m}"), **{k: f(g) for k, f in values.items()})
        for m, g in df.groupby("model", sort=False)
    ]
