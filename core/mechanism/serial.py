"""Page 1's instant view: a recurrence's n dependent steps against attention's one, each as long as measured."""

from __future__ import annotations

import pandas as pd

from core.findings import serial as findings
from core.harness import roofline
from core.terms import status

DRAWN = 32  # at most this many segments drawn in a chain; each then stands for n / DRAWN steps


def lengths(rows: pd.DataFrame) -> list[int]:
    """The lengths at which both of the chapter's models were measured."""
    ok = rows[rows["status"] == status.OK]
    pair = findings.chapter_models(ok["model"])
    sets = [set(ok.loc[ok["model"] == m, "seq_len"].astype(int)) for m in pair]
    return sorted(set.intersection(*sets)) if len(pair) == 2 else []


def chain(rows: pd.DataFrame, n: int) -> pd.DataFrame:
    """One row per drawn segment: model, its dependent steps at n, the segment's start and end in ms, and the
    whole step's measured ms. The recurrence's step is split into n equal dependent steps (drawn as at most DRAWN
    segments); attention's is one."""
    ok = rows[(rows["status"] == status.OK) & (rows["seq_len"] == n)].drop_duplicates("model", keep="last")
    out = []
    for model in findings.chapter_models(ok["model"]):
        r = ok[ok["model"] == model].iloc[0]
        steps = int(r["seq_steps"])
        drawn = min(steps, DRAWN)
        ms = float(r["train_ms"])
        for i in range(drawn):
            out.append((model, steps, drawn, ms * i / drawn, ms * (i + 1) / drawn, ms))
    return pd.DataFrame(out, columns=["model", "steps", "drawn", "start_ms", "end_ms", "total_ms"])


def gpu_busy(rows: pd.DataFrame, n: int) -> pd.DataFrame:
    """The roofline model's share of a data-centre GPU's time spent computing (not waiting between dependent
    steps), per model at n: FLOPs ÷ peak over the predicted time. A model, not a measurement."""
    ok = rows[(rows["status"] == status.OK) & (rows["seq_len"] == n)].drop_duplicates("model", keep="last")
    hw = roofline.DATACENTRE_GPU
    out = []
    for model in findings.chapter_models(ok["model"]):
        r = ok[ok["model"] == model].iloc[0]
        flops, steps = float(r["flops"]), int(r["seq_steps"])
        compute, waiting = flops / hw.peak_flops_per_s, steps * hw.step_latency_s
        out.append((model, steps, roofline.predict_ms(flops, steps, hw), compute / max(compute, waiting)))
    return pd.DataFrame(out, columns=["model", "steps", "predicted_ms", "busy"])


def lines(frame: pd.DataFrame, busy: pd.DataFrame, n: int, tr) -> list[str]:
    """What the chain shows at n, in words: each model's dependent steps and its measured step, then the model's
    GPU share."""
    out = []
    for model, g in frame.groupby("model", sort=False):
        r = g.iloc[0]
        key = "serial.instant.chain" if r["steps"] > 1 else "serial.instant.single"
        per = r["total_ms"] / r["steps"]
        out.append(tr(key, model=tr(f"model.{model}"), n=f"{n:,}", steps=f"{int(r['steps']):,}",
                      per=duration(per, tr), total=duration(r["total_ms"], tr)))  # fmt: skip
    if len(busy):
        share = {r.model: f"{100 * r.busy:.0f}" if r.busy >= 0.01 else f"{100 * r.busy:.1g}" for r in busy.itertuples()}
        names = list(share)
        if len(names) == 2:
            out.append(tr("serial.instant.gpu", rec=tr(f"model.{names[0]}"), att=tr(f"model.{names[1]}"),
                          rec_share=share[names[0]], att_share=share[names[1]]))  # fmt: skip
    return out


def duration(ms: float, tr) -> str:
    """'2.4 µs', '3.3 ms' or '1.2 s' in the page's language."""
    if ms < 1:
        return tr("instant.unit.us", v=f"{ms * 1e3:.3g}")
    if ms < 1e3:
        return tr("instant.unit.ms", v=f"{ms:.3g}")
    return tr("instant.unit.s", v=f"{ms / 1e3:.3g}")
