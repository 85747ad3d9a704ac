"""The home page's scoreboard: Vaswani et al. (2017) Table 1 beside what this machine measured, and one finding per
page — all computed from result rows (a live run of this session, else the shipped reference).

Each number comes from the same function the page itself calls for its takeaways (core.findings), so a home card
and its page always state the same number. Torch-free on purpose (pandas and numpy only): the home page starts fast.
"""

from __future__ import annotations

import math

import pandas as pd

from core import fit, status
from core.findings import answers as answers_findings
from core.findings import attention_cost as attention_findings
from core.findings import depth as depth_findings
from core.findings import long_range as long_range_findings
from core.findings import serial as serial_findings
from core.fit import exponent_text
from core.models import registry
from core.models.registry import ATTENTION, RECURRENT

# Vaswani et al. 2017, Table 1: per layer, n = sequence length, d = width, k = kernel size, r = neighbourhood.
TABLE1 = (
    ("self_attention", "O(n²·d)", "O(1)", "O(1)"),
    ("recurrent", "O(n·d²)", "O(n)", "O(n)"),
    ("convolutional", "O(k·n·d²)", "O(1)", "O(log_k n)"),
    ("restricted", "O(r·n·d)", "O(1)", "O(n/r)"),
    ("scan", "O(n·d)", "O(log n)", "O(n)"),  # not in the paper: the page-5 answer, a linear recurrence as a scan
    # not in the paper's table: attention bolted onto a recurrence (Bahdanau/Luong), both rows' work, the
    # recurrence's n steps, attention's one-step path
    ("recurrent_attention", "O(n·d² + n²·d)", "O(n)", "O(1)"),
)
ANSWERS_PAGE = "answers"  # the page whose rows fill the last three rows (their cells link to it)


def _ok(df: pd.DataFrame | None) -> pd.DataFrame:
    if df is None or not len(df):
        return pd.DataFrame()
    return df[df["status"] == status.OK] if "status" in df else df


def serial_facts(df: pd.DataFrame | None) -> dict:
    """The chapter's pair (per family): step-time exponent, dependent steps and time at its longest length; the
    Transformer ÷ LSTM comparison as the serial page states it."""
    ok = _ok(df)
    out: dict = {}
    if not len(ok) or "model" not in ok:
        return out
    slopes = serial_findings.scaling_exponents(ok)
    pair = serial_findings.chapter_pair(ok["model"]) or ()
    for family, m in zip((RECURRENT, ATTENTION), pair):
        out[family] = _serial_fact(ok, slopes, m)
    if "peak_flops_per_s" in ok:
        out["peak_flops_per_s"] = float(ok["peak_flops_per_s"].median())
    return out


def _serial_fact(ok: pd.DataFrame, slopes: pd.DataFrame, m: str) -> dict:
    """One model's step-time exponent (with its error), dependent steps and time at its longest length."""
    g = ok[ok["model"] == m]
    at = g[g["seq_len"] == g["seq_len"].max()].iloc[0]
    fitted = slopes[slopes["model"] == m]
    text = exponent_text(fitted["time_slope"].iloc[0], fitted["time_slope_se"].iloc[0]) if len(fitted) else "–"
    return {"slope": text, "steps": int(at["seq_steps"]), "T": int(at["seq_len"]), "ms": float(at["train_ms"])}


def _reach_fact(ok: pd.DataFrame, m: str) -> dict:
    """One model's gradient reach: the distance where it fell REACH_FACTOR× (NaN: never, within T), far/near."""
    g = ok[ok["model"] == m].sort_values("distance")
    near = g[g["distance"] == 1]["grad_norm"]
    far = g.iloc[-1]
    ratio = float(far["grad_norm"] / near.iloc[0]) if len(near) and near.iloc[0] > 0 else math.nan
    return {"reach": float(g["reach"].iloc[0]) if "reach" in g else math.nan,
            "T": int(g["seq_len"].iloc[0]), "far": int(far["distance"]), "ratio": ratio}  # fmt: skip


def reach_facts(df: pd.DataFrame | None) -> dict:
    """Per family's model: the distance where the gradient fell REACH_FACTOR× (NaN: never, within T), far/near."""
    ok = _ok(df)
    out = {}
    if not len(ok) or "distance" not in ok:
        return out
    for family in (RECURRENT, ATTENTION):
        m = registry.representative(family, ok["model"])
        if m is not None:
            out[family] = _reach_fact(ok, m)
    return out


def recall_facts(df: pd.DataFrame | None) -> dict:
    """Final accuracy per family's model at the longest distance of the first task, with chance (the rows the
    long-range page's takeaways read: `core.findings.long_range.final`)."""
    ok = _ok(df)
    if not len(ok) or "accuracy" not in ok:
        return {}
    stats = long_range_findings.by_distance(ok)
    task = ok["task"].iloc[0]  # the first task the run trained
    g = stats[(stats["task"] == task) & stats["accuracy"].notna()]
    if not len(g):
        return {}
    d = g["distance"].max()
    g = g[g["distance"] == d].set_index("model")
    out = {"task": task, "distance": int(d), "chance": float(g["chance"].iloc[0]) if "chance" in g else math.nan}
    for family in (RECURRENT, ATTENTION):
        m = registry.representative(family, g.index)
        if m is not None:
            out[family] = {"accuracy": float(g.loc[m, "accuracy"]), "step": int(g.loc[m, "step"])}
    return out


def _pct(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{100 * x:.0f}%"


def _num(x: float, digits: int = 2) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.{digits}g}"


def measured_cells(frames: dict, tr) -> dict:
    """Measured-here cells for Table 1's rows: {'self_attention': (cost, steps, path), 'recurrent': (...)}."""
    s = serial_facts(frames.get("serial"))
    naive, _ = attention_findings.materialised_and_fused(frames.get("attention_cost"))
    r = reach_facts(frames.get("gradient_reach"))
    none = tr("home.t1.none")
    att_cost = tr("home.t1.cost", b=naive["time_text"], what=tr("home.t1.naive")) if naive else none
    rec_cost = tr("home.t1.cost", b=s[RECURRENT]["slope"], what="LSTM") if RECURRENT in s else none
    steps = {
        f: tr("home.t1.steps", steps=s[f]["steps"], T=s[f]["T"]) if f in s else none for f in (RECURRENT, ATTENTION)
    }
    att_path = (
        tr("home.t1.flat", ratio=_num(r[ATTENTION]["ratio"]), far=r[ATTENTION]["far"]) if ATTENTION in r else none
    )
    if RECURRENT in r:
        lstm = r[RECURRENT]
        rec_path = (
            tr("home.t1.reach", reach=int(lstm["reach"]))
            if math.isfinite(lstm["reach"])
            else tr("home.t1.no_reach", T=lstm["T"])
        )
    else:
        rec_path = none
    return {
        "self_attention": (att_cost, steps[ATTENTION], att_path),
        "recurrent": (rec_cost, steps[RECURRENT], rec_path),
        **answers_cells(frames, tr),
        **hybrid_cells(frames, tr),
    }


def hybrid_cells(frames: dict, tr) -> dict:
    """The recurrent-plus-attention row: the serial page's time exponent and dependent steps of the kind whose
    record names this row, and its gradient reach (it should be flat, like attention's)."""
    none = tr("home.t1.none")
    ok, reach = _ok(frames.get("serial")), _ok(frames.get("gradient_reach"))
    models = list(dict.fromkeys([*ok.get("model", []), *reach.get("model", [])]))
    m = registry.find(models, table1="recurrent_attention")
    if m is None:
        return {}
    cost = steps = path = none
    if len(ok) and m in set(ok["model"]):
        f = _serial_fact(ok, serial_findings.scaling_exponents(ok[ok["model"] == m]), m)
        cost = tr("home.t1.cost", b=f["slope"], what=tr(f"long_range.model.{m}"))
        steps = tr("home.t1.steps", steps=f["steps"], T=f["T"])
    if len(reach) and m in set(reach["model"]):
        r = _reach_fact(reach, m)
        if math.isfinite(r["reach"]):
            path = tr("home.t1.reach", reach=int(r["reach"]))
        elif math.isfinite(r["ratio"]):
            path = tr("home.t1.flat", ratio=_num(r["ratio"]), far=r["far"])
    return {"recurrent_attention": (cost, steps, path)}


def answers_cells(frames: dict, tr) -> dict:
    """Table 1's convolutional, restricted-attention and scan rows from page 5's rows: the time exponent and the
    dependent steps of the row's mixer at its longest length, and where its gradient ends (or how fast it falls);
    each cell a link to the page."""
    speed, reach = _ok(frames.get("answers_speed")), answers_findings.reach_profiles(frames.get("answers_reach"))
    none = tr("home.t1.none")
    out = {}
    for row in ("convolutional", "restricted", "scan"):
        cost = steps = path = none
        rows = speed[[answers_findings.row_of(m, row) for m in speed["mixer"]]] if len(speed) else speed
        if len(rows) and len(rows[rows["form"] == registry.get(rows["mixer"].iloc[0]).forms[-1]]):
            m = rows["mixer"].iloc[0]
            form = registry.get(m).forms[-1]  # its parallel form: the one this row of the table is about
            g = rows[(rows["mixer"] == m) & (rows["form"] == form)]
            slope, se = fit.tail_fit(g["seq_len"], g["train_ms"])
            what = tr("answers.named_form", mixer=tr(f"model.{m}"), form=tr(f"answers.form.{form}"))
            cost = _link(tr("home.t1.cost", b=fit.exponent_text(slope, se), what=what))
            at = g[g["seq_len"] == g["seq_len"].max()].iloc[0]
            steps = _link(tr("home.t1.steps", steps=int(at["seq_steps"]), T=int(at["seq_len"])))
        hit = reach[[answers_findings.row_of(m, row) for m in reach["model"]]] if len(reach) else reach
        if len(hit):
            r = hit.iloc[0]
            if math.isfinite(r["end"]):
                path = _link(tr("home.t1.ends", end=int(r["end"]) - 1))
            elif math.isfinite(r["reach"]):
                path = _link(tr("home.t1.reach", reach=int(r["reach"])))
            else:
                path = _link(tr("home.t1.no_reach", T=int(r["T"]) - 1))
        out[row] = (cost, steps, path)
    return out


def _link(text: str) -> str:
    """A measured cell as a Markdown link to the page that measured it (st.table renders Markdown)."""
    return f"[{text}]({ANSWERS_PAGE})"


def table1(frames: dict, tr, gpu: dict | None = None) -> pd.DataFrame:
    """The paper's Table 1 with the measured columns; `gpu`: the same experiments' rows from a GPU (a shipped
    reference) when `frames` are not from one, for one more column, the GPU's measured cost (the dependent steps
    and the gradient's path are the same on any device)."""
    cells = measured_cells(frames, tr)
    devices = [str(df["device"].iloc[0]) for df in (gpu or {}).values() if df is not None and len(df)]
    gpu_cells = measured_cells(gpu, tr) if devices else {}
    rows = []
    for key, cost, seq, path in TABLE1:
        m = cells.get(key, (tr("home.t1.not_here"),) * 3)
        row = {
            tr("home.t1.layer"): tr(f"home.t1.{key}"),
            tr("home.t1.complexity"): cost,
            tr("home.t1.sequential"): seq,
            tr("home.t1.path"): path,
            tr("home.t1.m_cost"): m[0],
            tr("home.t1.m_steps"): m[1],
            tr("home.t1.m_path"): m[2],
        }
        if devices:
            row[tr("home.t1.m_cost_gpu", device=devices[0])] = gpu_cells.get(key, (tr("home.t1.not_here"),))[0]
        rows.append(row)
    return pd.DataFrame(rows)


def findings(frames: dict, tr) -> dict:
    """One sentence per page, computed from its rows; pages without data get a pointer to their Run button."""
    out = {}
    c = serial_findings.comparison(_ok(frames.get("serial")))
    if c is not None:
        out["serial"] = tr(f"home.find.serial_tf_{c['verdict']}", T=c["T"], ratio=serial_findings.spread_text(c)[0],
                           steps=int(c["rec_row"]["seq_steps"]))  # fmt: skip
    r = reach_facts(frames.get("gradient_reach"))
    rc = recall_facts(frames.get("long_range"))
    if RECURRENT in rc and ATTENTION in rc:
        out["long_range"] = tr(
            "home.find.long_range",
            d=rc["distance"],
            task=tr(f"long_range.task.{rc['task']}"),
            tf=_pct(rc[ATTENTION]["accuracy"]),
            lstm=_pct(rc[RECURRENT]["accuracy"]),
            chance=_pct(rc["chance"]),
        )
    elif RECURRENT in r and ATTENTION in r:
        out["long_range"] = tr(
            "home.find.reach",
            reach=_num(r[RECURRENT]["reach"], 3),
            ratio=_num(r[ATTENTION]["ratio"]),
            far=r[ATTENTION]["far"],
        )
    d = depth_findings.lstm_contrast(_ok(frames.get("depth")))
    if d is not None:
        key = "home.find.depth" if math.isfinite(d["res_g"]) else "home.find.depth_plain"
        g1 = depth_findings.number(d["g1"])
        g1 = tr("home.find.underflow") if g1 == "0" else g1  # an exact 0 is float32 underflow, not "no gradient"
        out["depth"] = tr(key, L=d["d1"], g1=g1, top=depth_findings.number(d["top"]),
                          res=depth_findings.number(d["res_g"]))  # fmt: skip
    head = answers_findings.headline(frames.get("answers_speed"))
    if head is not None:
        out["answers"] = answers_findings.headline_text(head, tr)
    naive, fused = attention_findings.materialised_and_fused(frames.get("attention_cost"))
    if naive and fused:
        out["attention_cost"] = tr(
            "home.find.attention",
            naive=naive["mem_text"],
            sdpa=fused["mem_text"],
            n=int(naive["n_hi"]),
        )
    return out
