"""The home page's scoreboard: Vaswani et al. (2017) Table 1 beside what this machine measured, and one finding per
page — all computed from result rows (a live run of this session, else the shipped reference).

Torch-free on purpose (pandas and numpy only), so the home page starts fast.
"""

from __future__ import annotations

import math

import pandas as pd

from core.fit import tail_slope

# Vaswani et al. 2017, Table 1: per layer, n = sequence length, d = width, k = kernel size, r = neighbourhood.
TABLE1 = (
    ("self_attention", "O(n²·d)", "O(1)", "O(1)"),
    ("recurrent", "O(n·d²)", "O(n)", "O(n)"),
    ("convolutional", "O(k·n·d²)", "O(1)", "O(log_k n)"),
    ("restricted", "O(r·n·d)", "O(1)", "O(n/r)"),
)


def _ok(df: pd.DataFrame | None) -> pd.DataFrame:
    if df is None or not len(df):
        return pd.DataFrame()
    return df[df["status"] == "ok"] if "status" in df else df


def serial_facts(df: pd.DataFrame | None) -> dict:
    """LSTM and Transformer: step-time exponent, dependent steps and time at the longest length."""
    ok = _ok(df)
    out: dict = {}
    if not len(ok) or "model" not in ok:
        return out
    T = int(ok["seq_len"].max())
    for m in ("lstm", "transformer"):
        g = ok[ok["model"] == m]
        if len(g):
            at = g[g["seq_len"] == g["seq_len"].max()].iloc[0]
            out[m] = {
                "slope": tail_slope(g["seq_len"], g["train_ms"]),
                "steps": int(at["seq_steps"]),
                "T": int(at["seq_len"]),
                "ms": float(at["train_ms"]),
            }
    if len(ok) and "peak_flops_per_s" in ok:
        out["peak_flops_per_s"] = float(ok["peak_flops_per_s"].median())
    out["T"] = T
    return out


def attention_facts(df: pd.DataFrame | None) -> dict:
    """Naive vs SDPA: memory and time exponents over the sweep's longest lengths."""
    ok = _ok(df)
    if "point" in ok:
        ok = ok[ok["point"].fillna("sweep") == "sweep"]
    out = {}
    for impl in ("naive", "sdpa"):
        g = ok[ok["impl"] == impl] if "impl" in ok else ok.iloc[0:0]
        if "backend" in g and impl == "sdpa" and "requested_backend" in g:
            auto = g[g["requested_backend"] == "auto"]
            g = auto if len(auto) else g
        if len(g) >= 2:
            mem = g["peak_bytes"] if g["peak_bytes"].notna().sum() >= 2 else g["saved_bytes"]
            out[impl] = {
                "time_slope": tail_slope(g["seq_len"], g["time_ms"]),
                "mem_slope": tail_slope(g["seq_len"], mem),
                "n": int(g["seq_len"].max()),
            }
    return out


def reach_facts(df: pd.DataFrame | None) -> dict:
    """Per model: the distance where the gradient fell 1000× (NaN: never, within T) and the far/near ratio."""
    ok = _ok(df)
    out = {}
    if not len(ok) or "distance" not in ok:
        return out
    for m, g in ok.groupby("model"):
        g = g.sort_values("distance")
        near = g[g["distance"] == 1]["grad_norm"]
        far = g.iloc[-1]
        ratio = float(far["grad_norm"] / near.iloc[0]) if len(near) and near.iloc[0] > 0 else math.nan
        out[m] = {
            "reach": float(g["reach"].iloc[0]) if "reach" in g else math.nan,
            "T": int(g["seq_len"].iloc[0]),
            "far": int(far["distance"]),
            "ratio": ratio,
        }
    return out


UNDERFLOW = 1e-30  # below this a float32 gradient has met its floor somewhere: a ratio through it means nothing


def depth_facts(df: pd.DataFrame | None) -> dict:
    """At initialisation: first-layer gradient as a fraction of the last layer's, per model, at the deepest stack
    where the LSTM's first-layer gradient has not underflowed."""
    ok = _ok(df)
    if not len(ok) or "phase" not in ok:
        return {}
    init = ok[(ok["phase"] == "init") & ok["layer"].notna()]
    ratios: dict = {}
    for (m, L), g in init.groupby(["model", "n_layers"]):
        g = g.groupby("layer")["grad_norm"].median()
        if len(g) >= 2 and g.iloc[-1] > 0 and g.iloc[0] > UNDERFLOW:
            ratios.setdefault(m, {})[int(L)] = float(g.iloc[0] / g.iloc[-1])
    if not ratios:
        return {}
    depths = set.intersection(*(set(r) for r in ratios.values())) if "lstm" not in ratios else set(ratios["lstm"])
    if not depths:
        return {}
    L = max(depths)
    return {m: {"layers": L, "ratio": r[L]} for m, r in ratios.items() if L in r}


def recall_facts(df: pd.DataFrame | None) -> dict:
    """Final accuracy per model at the longest distance of the first task, with chance."""
    ok = _ok(df)
    if not len(ok) or "accuracy" not in ok:
        return {}
    task = ok["task"].iloc[0]
    g = ok[(ok["task"] == task) & ok["accuracy"].notna()]
    if not len(g):
        return {}
    d = g["distance"].max()
    g = g[g["distance"] == d]
    last = g.sort_values("step").groupby("model").tail(1).set_index("model")
    out = {"task": task, "distance": int(d), "chance": float(last["chance"].iloc[0]) if "chance" in last else math.nan}
    for m, r in last.iterrows():
        out[m] = {"accuracy": float(r["accuracy"]), "step": int(r["step"])}
    return out


def _pct(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{100 * x:.0f}%"


def _num(x: float, digits: int = 2) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.{digits}g}"


def _slope(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.2f}"


def measured_cells(frames: dict, tr) -> dict:
    """Measured-here cells for Table 1's rows: {'self_attention': (cost, steps, path), 'recurrent': (...)}."""
    s = serial_facts(frames.get("serial"))
    a = attention_facts(frames.get("attention_cost"))
    r = reach_facts(frames.get("gradient_reach"))
    none = tr("home.t1.none")
    att_cost = (
        tr("home.t1.cost", b=_slope(a["naive"]["time_slope"]), what=tr("home.t1.naive")) if "naive" in a else none
    )
    rec_cost = tr("home.t1.cost", b=_slope(s["lstm"]["slope"]), what="LSTM") if "lstm" in s else none
    att_steps = (
        tr("home.t1.steps", steps=s["transformer"]["steps"], T=s["transformer"]["T"]) if "transformer" in s else none
    )
    rec_steps = tr("home.t1.steps", steps=s["lstm"]["steps"], T=s["lstm"]["T"]) if "lstm" in s else none
    att_path = (
        tr("home.t1.flat", ratio=_num(r["attention"]["ratio"]), far=r["attention"]["far"]) if "attention" in r else none
    )
    if "lstm" in r:
        lstm = r["lstm"]
        rec_path = (
            tr("home.t1.reach", reach=int(lstm["reach"]))
            if math.isfinite(lstm["reach"])
            else tr("home.t1.no_reach", T=lstm["T"])
        )
    else:
        rec_path = none
    return {"self_attention": (att_cost, att_steps, att_path), "recurrent": (rec_cost, rec_steps, rec_path)}


def table1(frames: dict, tr) -> pd.DataFrame:
    cells = measured_cells(frames, tr)
    rows = []
    for key, cost, seq, path in TABLE1:
        m = cells.get(key, (tr("home.t1.not_here"),) * 3)
        rows.append(
            {
                tr("home.t1.layer"): tr(f"home.t1.{key}"),
                tr("home.t1.complexity"): cost,
                tr("home.t1.sequential"): seq,
                tr("home.t1.path"): path,
                tr("home.t1.m_cost"): m[0],
                tr("home.t1.m_steps"): m[1],
                tr("home.t1.m_path"): m[2],
            }
        )
    return pd.DataFrame(rows)


def findings(frames: dict, tr) -> dict:
    """One sentence per page, computed from its rows; pages without data get a pointer to their Run button."""
    out = {}
    s = serial_facts(frames.get("serial"))
    if "lstm" in s and "transformer" in s:
        ratio = s["transformer"]["ms"] / s["lstm"]["ms"]
        key = "home.find.serial_tf_slower" if ratio > 1 else "home.find.serial_tf_faster"
        out["serial"] = tr(key, T=s["T"], ratio=_num(max(ratio, 1 / ratio)), steps=s["lstm"]["steps"])
    r = reach_facts(frames.get("gradient_reach"))
    rc = recall_facts(frames.get("long_range"))
    if "lstm" in rc and "transformer" in rc:
        out["long_range"] = tr(
            "home.find.long_range",
            d=rc["distance"],
            task=tr(f"long_range.task.{rc['task']}"),
            tf=_pct(rc["transformer"]["accuracy"]),
            lstm=_pct(rc["lstm"]["accuracy"]),
            chance=_pct(rc["chance"]),
        )
    elif "lstm" in r and "attention" in r:
        out["long_range"] = tr(
            "home.find.reach",
            reach=_num(r["lstm"]["reach"], 3),
            ratio=_num(r["attention"]["ratio"]),
            far=r["attention"]["far"],
        )
    d = depth_facts(frames.get("depth"))
    if "lstm" in d:
        other = next((m for m in ("lstm_residual", "pre_ln", *d) if m in d and m != "lstm"), None)
        if other:
            out["depth"] = tr(
                "home.find.depth",
                L=d["lstm"]["layers"],
                lstm=_num(d["lstm"]["ratio"]),
                other=tr(f"model.{other}"),
                ratio=_num(d[other]["ratio"]),
            )
    a = attention_facts(frames.get("attention_cost"))
    if "naive" in a and "sdpa" in a:
        out["attention_cost"] = tr(
            "home.find.attention",
            naive=_slope(a["naive"]["mem_slope"]),
            sdpa=_slope(a["sdpa"]["mem_slope"]),
            n=a["naive"]["n"],
        )
    return out
