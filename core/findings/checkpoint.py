"""What the checkpointed-BPTT rows say, computed from them: memory cut, its growth with n, the time it cost.

The home page and the verdicts read it. Rows come from core.experiments.checkpoint: one per (model,
bptt form, length), `layer_saved_bytes` the recurrent layers' share of what autograd keeps, `time_ratio` the
checkpointed step's time over the plain one's, paired round by round, with its quartiles.
"""

from __future__ import annotations

import math

import pandas as pd

from core.findings.notes import fresh_memory_text
from core.harness.fit import exponent_text, tail_fit
from core.harness.memory_formulas import format_bytes
from core.terms import status

PLAIN, CHECKPOINTED = "plain", "checkpointed"
EXPECTED_EXTRA = 1 / 3  # one more forward on top of forward + backward (backward ≈ 2 forwards)
FIT_POINTS = 3  # the exponent over the longest lengths, where fixed overheads no longer show


def measured(df: pd.DataFrame) -> pd.DataFrame:
    if df is None or not len(df) or "bptt" not in df:
        return pd.DataFrame()
    return df[(df["status"] == status.OK) & df["layer_saved_bytes"].notna()]


def growth(df: pd.DataFrame, model: str, form: str) -> tuple[float, float]:
    """(exponent, its standard error) of the layers' saved bytes against n, over the longest lengths."""
    sub = measured(df)
    sub = sub[(sub["model"] == model) & (sub["bptt"] == form)]
    return tail_fit(sub["seq_len"], sub["layer_saved_bytes"], FIT_POINTS)


def comparison(df: pd.DataFrame, model: str | None = None) -> dict | None:
    """The longest length at which `model` (default: the first measured) has both forms measured, and what they
    kept and cost there; None without such a length."""
    ok = measured(df)
    if not len(ok):
        return None
    model = model or str(ok["model"].iloc[0])
    sub = ok[ok["model"] == model]
    forms = sub.groupby("seq_len")["bptt"].agg(set).sort_index(ascending=False)
    both = [T for T, measured_forms in forms.items() if {PLAIN, CHECKPOINTED} <= measured_forms]
    if not both:
        return None
    T = int(both[0])
    at = sub[sub["seq_len"] == T].set_index("bptt")
    plain, ck = at.loc[PLAIN], at.loc[CHECKPOINTED]
    return {
        "model": model,
        "T": T,
        "plain": plain,
        "ck": ck,
        "cut": float(plain["layer_saved_bytes"]) / max(1.0, float(ck["layer_saved_bytes"])),
        "growth": growth(df, model, CHECKPOINTED),
        "growth_plain": growth(df, model, PLAIN),
    }


def _x(ratio: float) -> str:
    return f"{ratio:.2f}"


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    out = []
    ok = measured(df)
    for model in dict.fromkeys(ok["model"]) if len(ok) else ():
        c = comparison(df, model)
        if c is None:
            continue
        ck, plain = (format_bytes(c[k]["layer_saved_bytes"]) for k in ("ck", "plain"))
        b, bp = (exponent_text(*c[k]) for k in ("growth", "growth_plain"))
        said = {"model": tr(f"model.{model}"), "T": c["T"], "ck": ck, "plain": plain, "b": b, "bp": bp}
        out.append(tr("ckpt.take.memory", **said, cut=f"{c['cut']:,.0f}"))
        r, lo, hi = (float(c["ck"][k]) for k in ("time_ratio", "time_ratio_q25", "time_ratio_q75"))
        if math.isfinite(r):
            key = "slower" if lo > 1 else "faster" if hi < 1 else "same"
            out.append(
                tr(
                    f"ckpt.take.time_{key}",
                    T=c["T"],
                    p=_x(r),
                    lo=_x(lo),
                    hi=_x(hi),
                    expected=_x(1 + EXPECTED_EXTRA),
                    plain=format_bytes(c["plain"]["saved_bytes"]),
                    ck=format_bytes(c["ck"]["saved_bytes"]),
                )
            )
        out.append(tr("ckpt.take.steps", steps=f"{int(c['ck']['seq_steps']):,}", T=c["T"]))
        head, whole = float(c["ck"]["head_saved_bytes"]), float(c["ck"]["saved_bytes"])
        if whole > 0:
            out.append(tr("ckpt.take.head", head=format_bytes(head), share=f"{100 * head / whole:.0f}", T=c["T"]))
    if len(ok):
        what = [f"{tr(f'model.{m}')} · {tr(f'serial.ckpt.bptt.{b}')}" for m, b in zip(ok["model"], ok["bptt"])]
        out += fresh_memory_text(ok.assign(what=what), tr, "checkpoint", label="what")
    return out
