"""Scaling exponents: least-squares slope of log(y) against log(x), the number a log-log chart shows by eye."""

from __future__ import annotations

import math

import numpy as np


def loglog_fit(x, y) -> tuple[float, float]:
    """(a, b) with y ≈ exp(a)·x^b, the least-squares line log y = a + b·log x over the finite positive points; NaNs
    when the fit is impossible (fewer than two points, or a single x)."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    ok = np.isfinite(xs) & np.isfinite(ys) & (xs > 0) & (ys > 0)
    if ok.sum() < 2 or len(set(xs[ok])) < 2:
        return math.nan, math.nan
    b, a = np.polyfit(np.log(xs[ok]), np.log(ys[ok]), 1)
    return float(a), float(b)


def tail_slope(x, y, points: int = 3) -> float:
    """Slope over the largest `points` x values: where asymptotic scaling shows, not fixed overheads."""
    pairs = sorted((float(a), float(b)) for a, b in zip(x, y))[-points:]
    return loglog_fit([p[0] for p in pairs], [p[1] for p in pairs])[1]


def tail_fit(x, y, points: int = 3) -> tuple[float, float]:
    """(slope, its standard error) of log y against log x over the largest `points` x values; the error is NaN when
    two points or fewer leave nothing to estimate it from."""
    pairs = sorted((float(a), float(b)) for a, b in zip(x, y) if a > 0 and b > 0 and math.isfinite(b))[-points:]
    if len(pairs) < 2 or len({p[0] for p in pairs}) < 2:
        return math.nan, math.nan
    lx, ly = np.log([p[0] for p in pairs]), np.log([p[1] for p in pairs])
    slope, intercept = np.polyfit(lx, ly, 1)
    if len(pairs) < 3:
        return float(slope), math.nan
    residuals = ly - (intercept + slope * lx)
    se = math.sqrt(float(residuals @ residuals) / (len(pairs) - 2) / float(((lx - lx.mean()) ** 2).sum()))
    return float(slope), se


def exponent_text(slope: float, se: float = math.nan) -> str:
    """'2.00 ± 0.03' (the fit's standard error), '2.00' when there is none, '–' when there is no fit. A flat curve
    reads 0.00, never '-0.00' (a slope of -0.001 rounds to a zero a learner would take for a sign)."""
    if not math.isfinite(slope):
        return "–"
    text = f"{slope:.2f}".replace("-0.00", "0.00")
    return f"{text} ± {se:.2f}" if math.isfinite(se) else text
