"""What the attention-cost page and the home page conclude from its rows: the wall, the long-context
extrapolation and the takeaways. Implementations are told apart by their records' facts.

`wall` and `extrapolate` turn the fitted curves into where each implementation stops fitting, labelled as
extrapolation, never as measurement.
"""

from __future__ import annotations

import math
import re

import pandas as pd

from core.findings import bracketed, sig3
from core.findings.notes import fresh_memory_text, note_text
from core.harness.fit import exponent_text, loglog_fit, tail_fit, tail_slope
from core.harness.memory_formulas import DTYPE_BYTES, ModelShape, format_bytes, kv_cache_bytes
from core.models import attention
from core.models.attention import Shape
from core.terms import status
from core.terms.rules import EXPONENT_SPREAD

WALL_LENGTHS = (8192, 32768, 131072, 524288, 1048576)


WALL_COLUMNS = ("impl", "requested_backend", "backend", "slope", "slope_text", "n_max", "budget_bytes", "metric")


def _sweep(df: pd.DataFrame) -> pd.DataFrame:
    """The sweep's measured rows (not the checks run beside a predicted wall)."""
    return df[(df.status == status.OK) & (df.point == "sweep")] if len(df) else df


def wall(df: pd.DataFrame, budget_bytes: float, metric: str = "peak_bytes", points: int = 3) -> pd.DataFrame:
    """Per implementation: fit bytes ≈ a·n^b over the largest `points` measured n, then solve a·n^b = budget; the
    predicted largest n is an extrapolation of the fitted curve, not a measurement."""
    out = []
    for (impl, req), g in _sweep(df).groupby(["impl", "requested_backend"], sort=False):
        g = g.dropna(subset=[metric]).sort_values("seq_len").tail(points)
        a, b = loglog_fit(g.seq_len, g[metric])
        n_max = math.nan
        if math.isfinite(a) and b > 0.2:  # a flat curve (the LSTM's state) has no wall in n
            n_max = (budget_bytes / math.exp(a)) ** (1 / b)
        backend = g.backend.iloc[-1] if len(g) else ""
        slope_text = exponent_text(*tail_fit(g.seq_len, g[metric], points))
        fitted_on = f"n = {_fmt_n(g.seq_len.min())}…{_fmt_n(g.seq_len.max())}" if len(g) else ""
        row = (impl, req, backend, b, slope_text, n_max, budget_bytes, metric)
        out.append({**dict(zip(WALL_COLUMNS, row)), "fitted_on": fitted_on, "kind": "extrapolation"})
    return pd.DataFrame(out, columns=[*WALL_COLUMNS, "fitted_on", "kind"])


EXTRAPOLATION = ("model", "what", "seq_len", "bytes", "fits_budget", "time_s", "memory_kind", "time_kind")


def extrapolate(
    df: pd.DataFrame,
    shape: ModelShape,
    dtype: str = "bfloat16",
    batch_size: int = 1,
    lengths=WALL_LENGTHS,
    budget_bytes: float = math.nan,
) -> pd.DataFrame:
    """A whole model at 8K … 1M tokens: attention memory by formula, time extrapolated from this device.
    Memory per layer: naive B·H·n² scores, fused B·H·n·(d·e + 4) (output, float32 log-sum-exp), inference the KV
    cache. Time: the longest measured point scaled by (n / n_measured)² and by layers · heads · head size · batch."""
    e = DTYPE_BYTES[dtype]
    L, H, d, B = shape.n_layers, shape.n_heads, shape.head_dim, batch_size
    anchors = {}
    ok = _sweep(df)
    whole = {name: r for name, r in attention.IMPLS.items() if r.model_bytes is not None}
    for impl, record in whole.items():
        g = ok[ok.impl == impl]
        if record.uses_backends:
            g = g[g.requested_backend == attention.AUTO]
        if len(g):
            top = g.sort_values("seq_len").iloc[-1]
            scale = (L * H * d * B) / float(top.n_heads * top.head_dim * top.batch_size)
            anchors[impl] = (float(top.time_ms), int(top.seq_len), scale)
    rows = []
    for n in lengths:
        memory = {impl: r.model_bytes(L, Shape(B, H, n, d, e)) for impl, r in whole.items()}
        memory["kv_cache"] = kv_cache_bytes(L, shape.n_kv_heads, d, n, B, e)
        for what, nbytes in memory.items():
            t_s, time_kind = math.nan, ""
            if what in anchors:
                t_ms, n0, scale = anchors[what]
                t_s = t_ms / 1e3 * (n / n0) ** 2 * scale
                time_kind = f"extrapolation from n={n0} as n²"
            fits = bool(nbytes <= budget_bytes) if math.isfinite(budget_bytes) else math.nan
            rows.append((shape.name, what, n, nbytes, fits, t_s, "formula", time_kind))
    return pd.DataFrame(rows, columns=list(EXTRAPOLATION))


def format_seconds(s: float, tr=None) -> str:
    """Seconds in the largest unit that fits (ms, s, min, h, days, years); unit names from the catalogue via `tr`."""

    def unit(u):
        return tr(f"attention_cost.unit.{u}") if tr is not None else u

    if not math.isfinite(s):
        return "–"
    for u, size in (("years", 365 * 86400), ("days", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if s >= size:
            return f"{sig3(s / size)} {unit(u)}"
    return f"{s * 1e3:.3g} {unit('ms')}"


# ---- takeaways -----------------------------------------------------------------------------------------------


def _label_text(label: str, tr) -> str:
    """'sdpa (auto → flash)' with the page's brackets and implementation names, as the chart's legend says them."""
    m = re.fullmatch(r"(\S+) \((.+)\)", str(label))
    name, aside = (m.group(1), m.group(2)) if m else (str(label), None)
    name = tr(f"attention_cost.name.{name}") if name in attention.IMPLS else name
    return name + bracketed(aside, tr) if aside else name


def _fmt_n(n: float) -> str:
    return f"{n:,.0f}" if math.isfinite(n) else "?"


def growth(df: pd.DataFrame) -> list[dict]:
    """Per implementation (and requested backend): log-log slopes of memory and time over the three longest n.
    Memory is the exact bytes kept for backward, or for a fixed state its peak."""
    if df is None or not len(df):
        return []
    defaults = {
        "point": "sweep",
        "requested_backend": attention.NO_BACKEND,
        "backend": attention.NO_BACKEND,
        "state_bytes": math.nan,
        "status": status.OK,
    }
    df = df.assign(**{c: v for c, v in defaults.items() if c not in df})
    ok = df[(df.status == status.OK) & (df.point == "sweep")]
    out = []
    for (impl, req), g in ok.groupby(["impl", "requested_backend"], sort=False):
        record = attention.IMPLS.get(impl)
        state = record is not None and record.memory_exponent == 0  # a fixed state: its peak is what it holds
        mem = g.peak_bytes if state else g.saved_bytes
        out.append(
            {
                "impl": impl,
                "requested_backend": req,
                "state": state,
                "lengths": g.seq_len.nunique(),
                "label": record.label(g.backend.iloc[-1], req) if record is not None else str(impl),
                "mem_slope": tail_slope(g.seq_len, mem),
                "time_slope": tail_slope(g.seq_len, g.time_ms),
                "mem_text": exponent_text(*tail_fit(g.seq_len, mem)),
                "time_text": exponent_text(*tail_fit(g.seq_len, g.time_ms)),
                "mem_se": tail_fit(g.seq_len, mem)[1],
                "time_se": tail_fit(g.seq_len, g.time_ms)[1],
                "n_lo": g.seq_len.min(),
                "n_hi": g.seq_len.max(),
                "state_bytes": g.state_bytes.max(),
            }
        )
    return out


def materialised_and_fused(df: pd.DataFrame) -> tuple[dict | None, dict | None]:
    """The growth entries of exact softmax attention with the n×n matrix kept (naive) and fused (SDPA, auto)."""
    entries = growth(df)

    def pick(exponent):
        for f in entries:
            r = attention.IMPLS.get(f["impl"])
            exact = r is not None and r.computes == "softmax" and r.memory_exponent == exponent
            if exact and (not r.uses_backends or f["requested_backend"] == attention.AUTO):
                return f
        return None

    return pick(2), pick(1)


def _span(values, fmt) -> str:
    """'1,024' for one value, '1,024 … 4,096' from the first to the last of several."""
    return fmt(values.iloc[0]) + (f" … {fmt(values.iloc[-1])}" if len(values) > 1 else "")


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Sentences computed from the rows shown: slopes, the ratio at the largest common n, the wall, refusals."""
    out = []
    if df is None or len(df) == 0:
        return out
    ok = _sweep(df)
    label = {}
    for f in growth(df):
        label[(f["impl"], f["requested_backend"])] = f["label"]
        if f["lengths"] >= 3:
            key = "attention_cost.take.lstm_flat" if f["state"] else "attention_cost.take.slopes"
            n_lo, n_hi, state = _fmt_n(f["n_lo"]), _fmt_n(f["n_hi"]), format_bytes(f["state_bytes"])
            slopes = {"mem_slope": f["mem_text"], "time_slope": f["time_text"]}
            line = tr(key, impl=_label_text(f["label"], tr), **slopes, n_lo=n_lo, n_hi=n_hi, state=state)
            for what in ("mem", "time"):  # a wide spread said beside the exponent it belongs to
                if f[f"{what}_se"] > EXPONENT_SPREAD:
                    said = {"what": tr(f"attention_cost.spread.{what}"), "se": f"{f[f'{what}_se']:.2f}"}
                    line += tr("attention_cost.take.spread", **said)
            out.append(line)
    noisy = ok.noisy.astype(bool).sum() if "noisy" in ok else 0
    if noisy:
        out.append(tr("attention_cost.take.noisy", k=int(noisy), total=len(ok)))
    named = ok.assign(what=[tr(f"attention_cost.impl.{i}") for i in ok["impl"]]) if len(ok) else ok
    out += fresh_memory_text(named, tr, "attention_cost", label="what", time="time_ms")
    naive = ok[ok.impl == attention.find(ok.impl, computes="softmax", memory_exponent=2)]
    fused = ok[
        (ok.impl == attention.find(ok.impl, computes="softmax", memory_exponent=1))
        & (ok.requested_backend == attention.AUTO)
    ]
    common = sorted(set(naive.seq_len) & set(fused.seq_len))
    if common:
        n = common[-1]
        a, b = naive[naive.seq_len == n].iloc[0], fused[fused.seq_len == n].iloc[0]
        mem = {"mem_ratio": a.saved_bytes / b.saved_bytes, "naive_mem": format_bytes(a.saved_bytes)}
        time = {"time_ratio": a.time_ms / b.time_ms, "naive_ms": a.time_ms, "sdpa_ms": b.time_ms}
        sdpa_mem = format_bytes(b.saved_bytes)
        out.append(tr("attention_cost.take.ratio", n=_fmt_n(n), backend=b.backend, **mem, sdpa_mem=sdpa_mem, **time))
    if len(ok):
        budget = float(df.budget_bytes.dropna().iloc[0]) if df.budget_bytes.notna().any() else math.nan
        for _, w in wall(df, budget).iterrows():
            if math.isfinite(w.n_max):
                impl = _label_text(label.get((w.impl, w.requested_backend), w.impl), tr)
                n_max, fit = _fmt_n(w.n_max), {"slope": w.slope_text, "fitted_on": w.fitted_on}
                out.append(tr("attention_cost.take.wall", impl=impl, n_max=n_max, budget=format_bytes(budget), **fit))
    for _, r in df[(df.point != "sweep") & (df.status == status.OK)].iterrows():
        as_predicted = bool(r.fits_budget) == (r.point == "wall_below")
        verdict = tr("attention_cost.take.check." + ("ok" if as_predicted else "miss"))
        impl, n = _label_text(r.impl, tr), _fmt_n(r.seq_len)
        sizes = {"peak": format_bytes(r.peak_bytes), "budget": format_bytes(r.budget_bytes)}
        out.append(tr("attention_cost.take.check", impl=impl, n=n, **sizes, verdict=verdict))
    # one sentence per (kind of refusal, implementation), over the lengths it covers
    df = status.normalize(df)
    refused = df[df.status.isin(status.NOT_MEASURED)].copy()
    if len(refused):
        refused["name"] = [
            _label_text(i, tr) + (bracketed(b, tr) if b != attention.NO_BACKEND else "")
            for i, b in zip(refused.impl, refused.requested_backend)
        ]
        for (key, name), g in refused.groupby(["status", "name"], sort=False):
            g = g.sort_values("seq_len")
            n, need = _span(g.seq_len, _fmt_n), _span(g.predicted_bytes, format_bytes)
            said = {"impl": name, "backend": g.requested_backend.iloc[0], "n": n, "need": need}
            out.append(tr(f"attention_cost.take.{key}", **said, note=note_text(g.note.iloc[0], tr)))
    return out
