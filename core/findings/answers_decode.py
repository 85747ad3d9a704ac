"""What page 5 concludes about decoding: a fixed state against a growing KV cache, in bytes kept and time per
token, fitted against the context length."""

from __future__ import annotations

import math

import pandas as pd

from core.findings import model_name, sig3
from core.findings.answers import names_text, ok_rows, row_of, times_text
from core.harness import fit
from core.harness.memory_formulas import format_bytes, tokens_held
from core.models import registry
from core.models.registry import ANSWERS


def decode_fits(df: pd.DataFrame | None) -> pd.DataFrame:
    """Per mixer: log-log exponents (± SE) of kept bytes and time per token, and both at the longest context."""
    ok = ok_rows(df)
    rows = []
    for m, g in ok.groupby("mixer", sort=False) if len(ok) else ():
        if not registry.has(m, ANSWERS):
            continue
        g = g.sort_values("context_len")
        x = g["context_len"].astype(float)
        mem = fit.tail_fit(x, g["state_bytes"], points=len(g))
        ms = fit.tail_fit(x, g["ms_per_token"], points=len(g))
        last = g.iloc[-1]
        rows.append(
            {
                "mixer": m,
                "family": registry.get(m).family,
                "mem_slope": mem[0],
                "mem_se": mem[1],
                "time_slope": ms[0],
                "time_se": ms[1],
                "n": int(last["context_len"]),
                "bytes": float(last["state_bytes"]),
                "ms": float(last["ms_per_token"]),
                "predicted": float(last.get("predicted_bytes", math.nan)),
                "points": len(g),
            }
        )
    return pd.DataFrame(rows)


def flat(row) -> bool:
    """A state that does not grow: fitted exponent below 0.1."""
    return math.isfinite(row["mem_slope"]) and row["mem_slope"] < 0.1


def decode_takeaways(df: pd.DataFrame, tr) -> list[str]:
    fits = decode_fits(df)
    fits = fits[fits["points"] >= 2] if len(fits) else fits
    if not len(fits):
        return []
    out = []
    cache = fits[[row_of(m, "self_attention") for m in fits["mixer"]]]
    fixed = fits[[flat(r) for _, r in fits.iterrows()]]
    if len(fixed):
        biggest = fixed.loc[fixed["bytes"].idxmax()]
        out.append(
            tr(
                "answers.take.flat",
                k=len(fixed),
                names=names_text(fixed["mixer"], tr),
                n=f"{int(fixed['n'].max()):,}",
                slope=fit.exponent_text(fixed["mem_slope"].abs().max(), 0.0),
                big=model_name(biggest["mixer"], tr),
                bytes=format_bytes(biggest["bytes"]),
            )
        )
    if len(cache):
        c = cache.iloc[0]
        # the record's count is whole pages (core.harness.memory_formulas.tokens_held); 2·n·d·4 is that at a page's end
        per_token = c["predicted"] / tokens_held(int(c["n"]))
        said = (
            "answers.take.exact"
            if c["bytes"] == per_token * c["n"]
            else "answers.take.paged"
            if c["bytes"] == c["predicted"]
            else "answers.take.off"
        )
        out.append(
            tr(
                "answers.take.cache",
                slope=fit.exponent_text(c["mem_slope"], c["mem_se"]),
                n=f"{int(c['n']):,}",
                bytes=format_bytes(c["bytes"]),
                formula=tr(said),
            )
        )
        if len(fixed):
            ratio = c["bytes"] / fixed["bytes"].max()
            quick = fixed.loc[fixed["ms"].idxmin()]
            out.append(
                tr(
                    "answers.take.decode_time",
                    n=f"{int(c['n']):,}",
                    ms=sig3(c["ms"]),
                    t_slope=fit.exponent_text(c["time_slope"], c["time_se"]),
                    fast=model_name(quick["mixer"], tr),
                    fast_ms=sig3(quick["ms"]),
                    ratio=times_text(ratio),
                )
            )
    return out
