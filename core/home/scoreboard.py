"""The home page's scoreboard: what each record of core.home.records computes from result rows (a live run of this session,
else the shipped reference) — its finding for its page's card, its cells of Vaswani et al.'s (2017) Table 1 beside
what this machine measured — and the paper's table itself.

Each number comes from the same function the page itself calls for its takeaways (core.findings), so a home card
and its page always state the same number. It reads the model records, whose mixers are torch modules, so the home
page's cold start reads the shipped summary (core.home.summary) instead, with neither torch nor pandas.
"""

from __future__ import annotations

import math

import pandas as pd

from core.findings import answers as answers_findings
from core.findings import answers_reach as reach_findings
from core.findings import attention_cost as attention_findings
from core.findings import depth as depth_findings
from core.findings import long_range as long_range_findings
from core.findings import real_text as real_text_findings
from core.findings import serial as serial_findings
from core.findings.long_range import pct
from core.harness import fit
from core.harness.fit import exponent_text
from core.models import registry
from core.models.registry import ATTENTION, RECURRENT
from core.terms import status

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
    """The chapter's pair (per family): step-time exponent, dependent steps and time at its longest length; and the
    device's peak FLOP/s (the median measured)."""
    ok = _ok(df)
    if not len(ok) or "model" not in ok:
        return {}
    slopes = serial_findings.scaling_exponents(ok)
    pair = serial_findings.chapter_pair(ok["model"]) or ()
    out = {family: _serial_fact(ok, slopes, m) for family, m in zip((RECURRENT, ATTENTION), pair)}
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
    return {
        "reach": float(g["reach"].iloc[0]) if "reach" in g else math.nan,
        "T": int(g["seq_len"].iloc[0]),
        "far": int(far["distance"]),
        "ratio": ratio,
    }


def reach_facts(df: pd.DataFrame | None) -> dict:
    """Per family's model: the distance where the gradient fell REACH_FACTOR× (NaN: never, within T), far/near."""
    ok = _ok(df)
    if not len(ok) or "distance" not in ok:
        return {}
    return {f: _reach_fact(ok, m) for f, m in _representatives(ok["model"]).items()}


def _representatives(models) -> dict:
    """{family: its representative model among `models`} for the chapter's two families, where there is one."""
    found = {f: registry.representative(f, models) for f in (RECURRENT, ATTENTION)}
    return {f: m for f, m in found.items() if m is not None}


def _num(x: float, digits: int = 2) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.{digits}g}"


# Table 1's measured cells, one function per record of core.home.records: {row: (cost, steps, path)}, None where a cell is
# another record's (core.home.records.cells fills it, or writes "no result yet").
def serial_cells(frames: dict, tr) -> dict:
    """The serial page's cells: the LSTM's time exponent, each family's dependent steps at its longest length, and
    the time exponent and steps of the recurrent-plus-attention row's model (the kind whose record names that row)."""
    ok = _ok(frames.get("serial"))
    s = serial_facts(ok)
    cost = tr("home.t1.cost", b=s[RECURRENT]["slope"], what="LSTM") if RECURRENT in s else None
    steps = {
        f: tr("home.t1.steps", steps=s[f]["steps"], T=s[f]["T"]) if f in s else None for f in (RECURRENT, ATTENTION)
    }
    out = {"self_attention": (None, steps[ATTENTION], None), "recurrent": (cost, steps[RECURRENT], None)}
    m = registry.find(ok.get("model", []), table1="recurrent_attention")
    if m is not None:
        f = _serial_fact(ok, serial_findings.scaling_exponents(ok[ok["model"] == m]), m)
        out["recurrent_attention"] = (
            tr("home.t1.cost", b=f["slope"], what=tr(f"long_range.model.{m}")),
            tr("home.t1.steps", steps=f["steps"], T=f["T"]),
            None,
        )
    return out


def attention_cells(frames: dict, tr) -> dict:
    """The attention page's cell: materialised attention's time exponent."""
    naive, _ = attention_findings.materialised_and_fused(frames.get("attention_cost"))
    return {
        "self_attention": (
            tr("home.t1.cost", b=naive["time_text"], what=tr("home.t1.naive")) if naive else None,
            None,
            None,
        )
    }


def reach_cells(frames: dict, tr) -> dict:
    """The gradient-reach cells: how flat attention's gradient stays, where the LSTM's falls REACH_FACTOR×, and the
    recurrent-plus-attention model's path (it should be flat, like attention's)."""
    ok = _ok(frames.get("gradient_reach"))
    r = reach_facts(ok)
    att = tr("home.t1.flat", ratio=_num(r[ATTENTION]["ratio"]), far=r[ATTENTION]["far"]) if ATTENTION in r else None
    out = {"self_attention": (None, None, att), "recurrent": (None, None, _path(r.get(RECURRENT), tr))}
    m = registry.find(ok.get("model", []), table1="recurrent_attention")
    if m is not None:
        out["recurrent_attention"] = (None, None, _path(_reach_fact(ok, m), tr, flat=True))
    return out


def _path(r: dict | None, tr, flat: bool = False) -> str | None:
    """Where a model's gradient ends (a window's or a kernel's), else where it falls REACH_FACTOR×, else (never,
    within T) how far it goes, or how flat it stays."""
    if r is None:
        return None
    if math.isfinite(r.get("end", math.nan)):
        return tr("home.t1.ends", end=int(r["end"]))
    if math.isfinite(r["reach"]):
        return tr("home.t1.reach", reach=int(r["reach"]))
    if not flat:
        return tr("home.t1.no_reach", T=r["T"])
    return tr("home.t1.flat", ratio=_num(r["ratio"]), far=r["far"]) if math.isfinite(r["ratio"]) else None


def answers_cells(frames: dict, tr) -> dict:
    """Table 1's convolutional, restricted-attention and scan rows from page 5's rows: the time exponent and the
    dependent steps of the row's mixer at its longest length, and where its gradient ends (or how fast it falls);
    each cell a link to the page."""
    speed, reach = _ok(frames.get("answers_speed")), reach_findings.reach_profiles(frames.get("answers_reach"))
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
        if len(hit):  # the profile counts distances from 0: its last one is T - 1, and its gradient's end - 1
            r = hit.iloc[0]
            path = _link(_path({"end": r["end"] - 1, "reach": r["reach"], "T": int(r["T"]) - 1}, tr))
        out[row] = (cost, steps, path)
    return out


def _link(text: str) -> str:
    """A measured cell as a Markdown link to the page that measured it (st.table renders Markdown)."""
    return f"[{text}]({ANSWERS_PAGE})"


# One finding per record of core.home.records: (frames, tr) → the home card's sentence, or None without the rows to say it.
def serial_finding(frames: dict, tr) -> str | None:
    c = serial_findings.comparison(_ok(frames.get("serial")))
    if c is None:
        return None
    return tr(
        f"home.find.serial_tf_{c['verdict']}",
        T=c["T"],
        ratio=serial_findings.spread_text(c)[0],
        steps=int(c["rec_row"]["seq_steps"]),
    )


def long_range_finding(frames: dict, tr) -> str | None:
    """Recall at the longest distance trained, else (no training rows) the gradient's reach."""
    rc = long_range_findings.chapter_pair(frames.get("long_range"))  # the numbers the page's verdict states
    if rc is not None:
        return tr(
            "home.find.long_range",
            d=rc["distance"],
            task=tr(f"long_range.task.{rc['task']}"),
            tf=pct(rc[ATTENTION]["accuracy"]),
            lstm=pct(rc[RECURRENT]["accuracy"]),
            chance=pct(rc["chance"]),
        )
    r = reach_facts(frames.get("gradient_reach"))
    if RECURRENT in r and ATTENTION in r:
        return tr(
            "home.find.reach",
            reach=_num(r[RECURRENT]["reach"], 3),
            ratio=_num(r[ATTENTION]["ratio"]),
            far=r[ATTENTION]["far"],
        )
    return None


def real_text_finding(frames: dict, tr) -> str | None:
    """Real text: what reading a span before saved the chapter's pair on its repeat, against the control (the
    verdict's numbers)."""
    said = real_text_findings.pair_copy(frames.get("real_text"))
    if said is None:
        return None
    return tr("home.find.real_text", att=said["att"], rec=said["rec"], n=said["seeds"], d=said["distance"])


def depth_finding(frames: dict, tr) -> str | None:
    d = depth_findings.lstm_contrast(_ok(frames.get("depth")))
    if d is None:
        return None
    key = "home.find.depth" if math.isfinite(d["res_g"]) else "home.find.depth_plain"
    g1 = depth_findings.number(d["g1"])
    g1 = tr("home.find.underflow") if g1 == "0" else g1  # an exact 0 is float32 underflow, not "no gradient"
    return tr(key, L=d["d1"], g1=g1, top=depth_findings.number(d["top"]), res=depth_findings.number(d["res_g"]))


def attention_finding(frames: dict, tr) -> str | None:
    naive, fused = attention_findings.materialised_and_fused(frames.get("attention_cost"))
    if not (naive and fused):
        return None
    return tr("home.find.attention", naive=naive["mem_text"], sdpa=fused["mem_text"], n=int(naive["n_hi"]))


def answers_finding(frames: dict, tr) -> str | None:
    head = answers_findings.headline(frames.get("answers_speed"))
    return None if head is None else answers_findings.headline_text(head, tr)
