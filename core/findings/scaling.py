"""What the serial page concludes from thread-scaling rows: paired speed-ups, Amdahl's law fitted per model, and
what the fit predicts at a GPU's width — every sentence computed from the rows shown.

Amdahl (1967): if a share s of a step's work cannot be split, p workers make it 1 / (s + (1 − s)/p) times faster,
and no number of workers beyond 1/s. A Transformer step is a few large matrix products that split across cores
(small s); an LSTM step is n small dependent products (large s).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from core.findings import bracketed, sig3
from core.findings import model_name as name
from core.models import registry
from core.models.registry import ATTENTION, RECURRENT
from core.terms import status
from core.terms.i18n import translator
from core.terms.rules import GPU_SCHEDULERS_PER_SM, GPU_SMS

# the GPU width the fit extrapolates to: warp schedulers, each comparable to a CPU core with its SIMD lanes
GPU_WIDTH = GPU_SMS * GPU_SCHEDULERS_PER_SM
FIT_COLUMNS = ("model", "seq_len", "serial_fraction", "serial_fraction_se", "serial_fraction_lo",
               "serial_fraction_hi", "fit_points", "fit_flag", "gpu_width", "gpu_speedup_extrapolated",
               "gpu_speedup_lo", "gpu_speedup_hi")  # fmt: skip
SLOWER, CLAMPED = "slower", "clamped"  # fit_flag: more threads were slower; the raw fit left [0, 1]


def amdahl(s: float, p) -> np.ndarray:
    """Amdahl's speed-up with `p` workers when a share `s` of the work is serial."""
    p = np.asarray(p, dtype=float)
    return 1.0 / (s + (1.0 - s) / p)


@dataclasses.dataclass(frozen=True)
class AmdahlFit:
    s: float  # the serial fraction, clamped to [0, 1]
    raw: float  # the least-squares value before clamping (NaN: nothing to fit)
    se: float  # its standard error; NaN with a single thread count above 1 (the fit is then exact)
    points: int  # thread counts above 1 that went into the fit


def fit_serial_fraction(threads, speedups) -> AmdahlFit:
    """Least squares of log speed-up (timing noise is multiplicative) against log Amdahl(s, p) over the points with
    p > 1 (p = 1 is 1 by definition): a scan of s, refined by Gauss-Newton; the standard error from the Jacobian."""
    p, y = np.asarray(threads, dtype=float), np.asarray(speedups, dtype=float)
    ok = np.isfinite(p) & np.isfinite(y) & (p > 1) & (y > 0)
    p, y = p[ok], np.log(y[ok])
    if not len(p):
        return AmdahlFit(math.nan, math.nan, math.nan, 0)
    u, v = 1 - 1 / p, 1 / p  # s + (1 - s)/p = u·s + v, positive for s > -v/u

    def residuals(s):
        return y + np.log(u * s + v)

    lo = float(np.max(-v / u)) + 1e-9
    grid = np.concatenate([np.linspace(lo, 1.0, 401), np.linspace(1.0, 20.0, 400)[1:]])
    scan = y + np.log(np.outer(grid, u) + v)  # the residuals at every s of the grid, one row each
    s = float(grid[np.argmin(np.einsum("ij,ij->i", scan, scan))])
    for _ in range(20):
        jac = u / (u * s + v)
        s = max(lo, s - float(jac @ residuals(s)) / float(jac @ jac))
    jac = u / (u * s + v)
    r = residuals(s)
    se = math.sqrt(float(r @ r) / (len(p) - 1) / float(jac @ jac)) if len(set(p)) > 1 else math.nan
    return AmdahlFit(min(max(s, 0.0), 1.0), s, se, len(set(p)))


def measured(df: pd.DataFrame) -> pd.DataFrame:
    """The measured rows, one per (model, length, threads)."""
    if not {"status", "speedup", "threads"} <= set(df.columns):
        return pd.DataFrame(columns=["model", "seq_len", "threads", "speedup", "speedup_q25", "speedup_q75"])
    return df[(df["status"] == status.OK) & df["speedup"].notna()].drop_duplicates(
        ["model", "seq_len", "threads"], keep="last"
    )


def fit_group(g: pd.DataFrame) -> dict:
    """One model at one length: its serial fraction with standard error, the range from fitting the paired quartile
    speed-ups instead, a flag when more threads were slower or the raw fit left [0, 1], and the extrapolation."""
    f = fit_serial_fraction(g["threads"], g["speedup"])
    q25 = fit_serial_fraction(g["threads"], g["speedup_q25"].fillna(g["speedup"]))
    q75 = fit_serial_fraction(g["threads"], g["speedup_q75"].fillna(g["speedup"]))
    above = g[g["threads"] > 1]
    flag = ""
    if len(above) and (above["speedup_q75"].fillna(above["speedup"]) < 1).any():
        flag = SLOWER
    elif math.isfinite(f.raw) and not 0 <= f.raw <= 1:
        flag = CLAMPED
    s_lo, s_hi = (min(max(x.raw, 0.0), 1.0) if math.isfinite(x.raw) else math.nan for x in (q75, q25))
    usable = math.isfinite(f.raw) and flag != SLOWER
    gpu_lo, gpu_hi = (float(amdahl(x, GPU_WIDTH)) if usable and math.isfinite(x) else math.nan for x in (s_hi, s_lo))
    return {
        "serial_fraction": f.s,
        "serial_fraction_se": f.se,
        "serial_fraction_lo": s_lo,
        "serial_fraction_hi": s_hi,
        "fit_points": f.points,
        "fit_flag": flag,
        "gpu_width": GPU_WIDTH,
        "gpu_speedup_extrapolated": float(amdahl(f.s, GPU_WIDTH)) if usable else math.nan,
        "gpu_speedup_lo": gpu_lo,
        "gpu_speedup_hi": gpu_hi,
    }


def fits(df: pd.DataFrame) -> pd.DataFrame:
    """Amdahl's fit per model and length (and per run, when rows from several are shown)."""
    ok = measured(df)
    keys = ["model", "seq_len"] + (["run"] if "run" in ok.columns else [])
    rows = [{**dict(zip(keys, k)), **fit_group(g)} for k, g in ok.groupby(keys, sort=False)] if len(ok) else []
    return pd.DataFrame(rows, columns=list(FIT_COLUMNS) + keys[2:])


def curves(df: pd.DataFrame, up_to: float | None = None) -> pd.DataFrame:
    """Each fit as a curve over thread counts from 1 to `up_to` (default: 4× the most measured, at least 16), for a
    chart: beyond the points measured it is an extrapolation, and the chart says so."""
    f = fits(df)
    f = f[(f["fit_points"] > 0) & (f["fit_flag"] != SLOWER)]
    top = (up_to or max(16.0, 4.0 * float(measured(df)["threads"].max()))) if len(f) else 1.0
    ps = np.geomspace(1, top, 25)
    extra = [c for c in f.columns if c not in FIT_COLUMNS]
    rows = [
        {
            "model": r["model"],
            "seq_len": r["seq_len"],
            **{c: r[c] for c in extra},
            "threads": float(p),
            "speedup": float(amdahl(r["serial_fraction"], p)),
        }
        for _, r in f.iterrows()
        for p in ps
    ]
    return pd.DataFrame(rows, columns=["model", "seq_len", *extra, "threads", "speedup"])


def verdict(row) -> str:
    """'faster', 'slower' or 'same': whether the paired quartiles of a speed-up lie above 1, below it, or span it."""
    lo = row["speedup_q25"] if pd.notna(row["speedup_q25"]) else row["speedup"]
    hi = row["speedup_q75"] if pd.notna(row["speedup_q75"]) else row["speedup"]
    return "faster" if lo > 1 else "slower" if hi < 1 else "same"


def at_longest(df: pd.DataFrame) -> tuple[int, int, pd.DataFrame] | None:
    """(n, p, rows): the longest length measured and, there, the most threads any model reached, with its rows."""
    ok = measured(df)
    ok = ok[ok["threads"] > 1] if len(ok) else ok
    if not len(ok):
        return None
    T = int(ok["seq_len"].max())
    at = ok[ok["seq_len"] == T]
    p = int(at["threads"].max())
    return T, p, at[at["threads"] == p].set_index("model")


def _x(v: float) -> str:
    """A speed-up and its quartiles to the same two decimals below 10 ('1.40–1.43', not '1.4–1.43'), as the verdict
    writes them; three significant figures above."""
    return f"{v:.2f}" if abs(v) < 10 else sig3(v)


def _spread(row, x: str = "x") -> dict:
    """A speed-up and its paired quartiles as a sentence's placeholders: x, lo, hi (a, a_lo, a_hi for x = 'a')."""
    lo, hi = ("lo", "hi") if x == "x" else (f"{x}_lo", f"{x}_hi")
    return {x: _x(row["speedup"]), lo: _x(row["speedup_q25"]), hi: _x(row["speedup_q75"])}


def comparison(df: pd.DataFrame) -> dict | None:
    """The chapter's pair at the longest length and most threads both reached: whose speed-up is higher, said only
    when their paired quartile ranges do not overlap ('overlap' otherwise)."""
    found = at_longest(df)
    if found is None:
        return None
    T, p, at = found
    rec, att = registry.representative(RECURRENT, at.index), registry.representative(ATTENTION, at.index)
    if rec is None or att is None:
        return None
    r, a = at.loc[rec], at.loc[att]
    a_lo, a_hi = a["speedup_q25"], a["speedup_q75"]
    r_lo, r_hi = r["speedup_q25"], r["speedup_q75"]
    order = "above" if a_lo > r_hi else "below" if a_hi < r_lo else "overlap"
    return {"T": T, "p": p, "rec": rec, "att": att, "rec_row": r, "att_row": a, "order": order}


def fraction_text(r, tr=None) -> str:
    """'0.08 ± 0.02' with a standard error; '0.08 (0.05–0.11)' from the quartile fits when there is none (in the
    page's brackets: '0.08（0.05–0.11）' in 中文)."""
    if not math.isfinite(r["serial_fraction"]):
        return "–"
    if math.isfinite(r["serial_fraction_se"]):
        return f"{r['serial_fraction']:.2f} ± {r['serial_fraction_se']:.2f}"
    spread = f"{r['serial_fraction_lo']:.2f}–{r['serial_fraction_hi']:.2f}"
    return f"{r['serial_fraction']:.2f}" + bracketed(spread, tr or translator("en"))


def takeaways(df: pd.DataFrame, tr=None) -> list[str]:
    """Sentences computed from the rows of one run: speed-ups at the longest length, the chapter's pair compared,
    each model's serial fraction and its extrapolation to a GPU's width, and what the data flags."""
    tr = tr or translator("en")
    ok = measured(df)
    if not len(ok):
        return [tr("serial.scaling.take.none")]
    found = at_longest(ok)
    if found is None:
        return [tr("serial.scaling.take.one_count", threads=int(ok["threads"].max()))]
    T, p, at = found
    sep = tr("serial.scaling.take.sep")
    items = [tr(f"serial.scaling.take.item_{verdict(r)}", model=name(m, tr), **_spread(r)) for m, r in at.iterrows()]
    out = [tr("serial.scaling.take.speedups", T=T, p=p, items=sep.join(items))]
    c = comparison(ok)
    if c is not None and {verdict(c["att_row"]), verdict(c["rec_row"])} != {"slower"}:  # both slower: the flag speaks
        a, r = c["att_row"], c["rec_row"]
        pair = {"att": name(c["att"], tr), "rec": name(c["rec"], tr), **_spread(a, "a"), **_spread(r, "r")}
        out.append(tr(f"serial.scaling.take.pair_{c['order']}", T=T, p=p, **pair))
    f = fits(ok)
    f = f[f["seq_len"] == T].set_index("model")
    fitted = f[(f["fit_points"] > 0) & (f["fit_flag"] != SLOWER)]
    if len(fitted):
        parts = [
            tr("serial.scaling.take.fit_item", model=name(m, tr), s=fraction_text(r, tr)) for m, r in fitted.iterrows()
        ]
        out.append(tr("serial.scaling.take.fits", T=T, items=sep.join(parts)))
        gpu = [
            tr(
                "serial.scaling.take.gpu_item",
                model=name(m, tr),
                gpu=_x(r["gpu_speedup_extrapolated"]),
                lo=_x(r["gpu_speedup_lo"]),
                hi=_x(r["gpu_speedup_hi"]),
            )
            for m, r in fitted.iterrows()
        ]
        out.append(tr("serial.scaling.take.gpu", items=sep.join(gpu)))
        if int(fitted["fit_points"].max()) < 2:
            out.append(tr("serial.scaling.take.weak", p=p))
    names = lambda models: tr("serial.scaling.take.list_sep").join(name(m, tr) for m in models)
    for flag, among in ((SLOWER, f), (CLAMPED, fitted)):  # more threads slower: of every fit; clamped: of those used
        flagged = [m for m in among.index if among.loc[m, "fit_flag"] == flag]
        if flagged:
            out.append(tr(f"serial.scaling.take.{flag}", models=names(flagged), T=T))
    if "threads_requested" in ok:
        capped = ok[ok["threads_requested"].notna() & (ok["threads"] != ok["threads_requested"])]
        if len(capped):
            got = capped.iloc[0]
            out.append(tr("serial.scaling.take.capped", asked=int(got["threads_requested"]), got=int(got["threads"])))
    noisy = int(ok["noisy"].fillna(False).astype(bool).sum()) if "noisy" in ok else 0
    if noisy:
        out.append(tr("serial.take.noisy", n=noisy))
    return out


def why(df: pd.DataFrame, tr=None) -> list[str]:
    """The verdict's reason: the chapter's pair's fitted serial fractions and what they say, one sentence."""
    tr = tr or translator("en")
    ok = measured(df)
    c = comparison(ok) if len(ok) else None
    if c is None:
        return []
    f = fits(ok)
    f = f[f["seq_len"] == c["T"]].set_index("model")

    def s_of(m) -> str:
        return fraction_text(f.loc[m], tr) if m in f.index else "–"

    return [
        tr(
            f"serial.scaling.why.{c['order']}",
            T=c["T"],
            p=c["p"],
            att=name(c["att"], tr),
            rec=name(c["rec"], tr),
            att_s=s_of(c["att"]),
            rec_s=s_of(c["rec"]),
        )
    ]
