"""What the serial page and the home page conclude from serial rows: one computation per finding.

Every sentence is computed from the rows shown (a live run, else the shipped reference), with the model kinds'
facts read from the registry, never from their names.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd

from core.findings import clear_of, model_name, sig3
from core.harness import fit, roofline
from core.models import registry
from core.models.registry import ATTENTION, RECURRENT
from core.terms import status
from core.terms.i18n import translator


def chapter_pair(models) -> tuple[str, str] | None:
    """(the recurrent model, the attention model) the chapter compares, if both are among `models`."""
    found = chapter_models(models)
    return (found[0], found[1]) if len(found) == 2 else None


def chapter_models(models) -> list[str]:
    """The chapter's models among `models` (the LSTM, the Transformer), whichever of them are there."""
    models = list(dict.fromkeys(models))
    found = [registry.representative(f, models) for f in (RECURRENT, ATTENTION)]
    return [m for m in found if m is not None and registry.get(m).representative]


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == status.OK].drop_duplicates(["model", "seq_len"], keep="last")


def comparison(df: pd.DataFrame) -> dict | None:
    """The chapter's pair at the longest length both ran: rows, Transformer ÷ LSTM time ratio with its paired
    spread, which was faster ('same' when the spread includes 1), and every length both ran."""
    ok = _ok(df) if len(df) else df
    pair = chapter_pair(ok["model"]) if len(ok) else None
    if pair is None:
        return None
    rec, att = pair
    common = set(ok[ok["model"] == rec]["seq_len"]) & set(ok[ok["model"] == att]["seq_len"])
    if not common:
        return None
    T = int(max(common))
    at = ok[ok["seq_len"] == T].set_index("model")
    ratio = float(at.loc[att, "train_ms"] / at.loc[rec, "train_ms"])
    lo, hi = ratio, ratio
    if "ratio_base" in at and at.loc[att, "ratio_base"] == rec and pd.notna(at.loc[att, "ratio_q25"]):
        lo, hi = float(at.loc[att, "ratio_q25"]), float(at.loc[att, "ratio_q75"])
    verdict = (
        "slower" if lo > 1 else "faster" if hi < 1 else "same" if lo != hi else ("slower" if ratio > 1 else "faster")
    )
    return {
        "T": T,
        "rec": rec,
        "att": att,
        "rec_row": at.loc[rec],
        "att_row": at.loc[att],
        "ratio": ratio,
        "lo": lo,
        "hi": hi,
        "verdict": verdict,
        "lengths": common,
    }


def spread_text(c: dict) -> tuple[str, str, str]:
    """(ratio, lo, hi) as the page and the home page write them: 'x× slower' reads the ratio, 'x× faster' its
    inverse, so the spread is inverted with it."""
    if c["verdict"] == "faster":
        return ratio_text(c["ratio"]), clear_of(1 / c["hi"], (1.0,)), clear_of(1 / c["lo"], (1.0,))
    return ratio_text(c["ratio"]), clear_of(c["lo"], (1.0,)), clear_of(c["hi"], (1.0,))


def explanation(c: dict, hw: roofline.Hardware | None, tr) -> list[str]:
    """Why, by the roofline of the measured device (`hw`): which limit bounds the LSTM's step, and whether the
    model predicts the order measured (saying so if not)."""
    lstm, tf = c["rec_row"], c["att_row"]
    if hw is None:
        return []
    peak, latency = hw.peak_flops_per_s, hw.step_latency_s
    steps = int(lstm["seq_steps"])
    compute_ms, latency_ms = lstm["flops"] / peak * 1e3, steps * latency * 1e3
    key = "serial.why.compute" if roofline.bound(lstm["flops"], steps, hw) == "compute" else "serial.why.latency"
    out = [
        tr(
            key,
            gflops=f"{peak / 1e9:,.0f}",
            us=sig3(latency * 1e6),
            compute_ms=sig3(compute_ms),
            latency_ms=sig3(latency_ms),
            steps=steps,
        )
    ]
    predicted_tf = roofline.predict_ms(tf["flops"], int(tf["seq_steps"]), hw)
    predicted_lstm = roofline.predict_ms(lstm["flops"], steps, hw)
    predicted = "faster" if predicted_tf < predicted_lstm else "slower"
    if c["verdict"] != "same" and predicted != c["verdict"]:
        faster = c["att"] if predicted == "faster" else c["rec"]
        out.append(tr("serial.why.disagree", faster=tr(f"model.{faster}")))
    return out


def ratio_text(ratio: float) -> str:
    """How the pair's ratio is written, on the page and on the home page alike."""
    return clear_of(max(ratio, 1 / ratio), (1.0,))


def scaling_exponents(df: pd.DataFrame) -> pd.DataFrame:
    """Per model and run (or device): fitted log-log slope of step time and of saved bytes against seq_len."""
    ok = df[df["status"] == status.OK]
    by = "run" if "run" in ok.columns else "device"
    if by not in ok.columns:  # rows from somewhere that did not say where: one run
        ok = ok.assign(device="")
    rows = []
    for (model, run), g in ok.groupby(["model", by], sort=False):
        time = (fit.tail_slope(g["seq_len"], g["train_ms"]), fit.tail_fit(g["seq_len"], g["train_ms"])[1])
        memory = fit.tail_slope(g["seq_len"], g["saved_bytes"]) if "saved_bytes" in g else math.nan
        rows.append((model, run, *time, memory, len(g)))
    return pd.DataFrame(rows, columns=["model", by, "time_slope", "time_slope_se", "memory_slope", "points"])


def measured_hardware(df: pd.DataFrame, tr=None) -> roofline.Hardware | None:
    """This device as the run measured it: the median of its ceilings (peak matmul FLOP/s, measured beside every
    length) and of its tiny-recurrence step latency; None without a usable measurement."""
    tr = tr or translator("en")
    ok = df[df["status"] == status.OK]
    if not len(ok):
        return None
    peak, lat = float(ok["peak_flops_per_s"].median()), float(ok["step_latency_s"].median())
    if not (peak > 0 and lat > 0):
        return None
    return roofline.Hardware(tr("serial.hw.measured", gflops=f"{peak / 1e9:,.0f}", us=sig3(lat * 1e6)), peak, lat, True)


def hardware_for(df: pd.DataFrame, tr=None) -> list[roofline.Hardware]:
    """This device as measured (`measured_hardware`), then the assumed GPU."""
    tr = tr or translator("en")
    measured = measured_hardware(df, tr)
    hw = [] if measured is None else [measured]
    gpu = roofline.DATACENTRE_GPU
    label = tr("serial.hw.assumed", tflops=f"{gpu.peak_flops_per_s / 1e12:.0f}", us=f"{gpu.step_latency_s * 1e6:.0f}")
    hw.append(dataclasses.replace(gpu, name=label))
    return hw


def roofline_frame(df: pd.DataFrame, tr=None, models=None) -> pd.DataFrame:
    """The model's predicted step time for each hardware preset, at the lengths and shapes measured in `df`
    (for `models`, by default the chapter's pair: the LSTM and the Transformer)."""
    models = chapter_models(df["model"]) if models is None else models
    ok = df[(df["status"] == status.OK) & df["model"].isin(models)]
    rows = []
    for hw in hardware_for(df, tr):
        for _, r in ok.drop_duplicates(["model", "seq_len"]).iterrows():
            flops, steps = r["flops"], int(r["seq_steps"])
            ms, bound = roofline.predict_ms(flops, steps, hw), roofline.bound(flops, steps, hw)
            rows.append((hw.name, r["model"], int(r["seq_len"]), ms, bound, hw.measured))
    return pd.DataFrame(rows, columns=["hardware", "model", "seq_len", "predicted_ms", "bound", "measured"])


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Sentences computed from the rows of one run (one device)."""
    ok = _ok(df)
    if not len(ok):
        return [tr("serial.take.none")]
    out = []
    T = int(ok["seq_len"].max())
    at = ok[ok["seq_len"] == T].set_index("model")
    fastest = at["train_ms"].idxmin()
    out.append(tr("serial.take.fastest", T=T, model=model_name(fastest, tr), ms=sig3(at.loc[fastest, "train_ms"])))
    c = comparison(ok)
    if c is not None:
        lstm, tf, Tc = c["rec_row"], c["att_row"], c["T"]
        ratio, lo, hi = spread_text(c)
        steps = {"lstm_steps": int(lstm["seq_steps"]), "tf_steps": int(tf["seq_steps"])}
        said = {"T": Tc, "ratio": ratio, "lo": lo, "hi": hi, "flop_ratio": f"{tf['flops'] / lstm['flops']:.2g}"}
        out.append(tr(f"serial.take.tf_{c['verdict']}", **said, **steps))
        out += explanation(c, measured_hardware(ok, tr), tr)
        util = {"tf": f"{100 * tf['utilization']:.0f}", "lstm": f"{100 * lstm['utilization']:.0f}"}
        out.append(tr("serial.take.utilization", **util))
        at_c = ok[ok["seq_len"] == Tc].set_index("model")
        for loop in at_c.index:
            if registry.find([loop], twin=c["rec"]):  # the same function as an explicit step loop
                row = at_c.loc[loop]
                slower, util = f"{row['train_ms'] / lstm['train_ms']:.2g}", f"{100 * row['utilization']:.0f}"
                out.append(tr("serial.take.loop", ratio=slower, util=util))
        hybrid = registry.find(at_c.index, table1="recurrent_attention")  # attention over a recurrence
        if hybrid is not None:
            h = at_c.loc[hybrid]
            times = lambda x: (
                f"{x:.2g}" if x < 1 else f"{x:.1f}" if x < 10 else f"{x:.0f}"
            )  # one decimal below 10: '1.0', not '1'
            out.append(
                tr(
                    "serial.take.hybrid",
                    model=model_name(hybrid, tr),
                    T=Tc,
                    tf=times(h["train_ms"] / tf["train_ms"]),
                    lstm=times(h["train_ms"] / lstm["train_ms"]),
                    steps=f"{int(h['seq_steps']):,}",
                    lstm_steps=f"{int(lstm['seq_steps']):,}",
                )
            )
        gpu = next(h for h in hardware_for(ok, tr) if not h.measured)
        pl = roofline.predict_ms(lstm["flops"], int(lstm["seq_steps"]), gpu)
        pt = roofline.predict_ms(tf["flops"], int(tf["seq_steps"]), gpu)
        bound = tr(f"serial.bound.{roofline.bound(lstm['flops'], int(lstm['seq_steps']), gpu)}")
        out.append(tr("serial.take.model_gpu", T=Tc, lstm=f"{pl:.2g}", tf=f"{pt:.2g}", bound=bound))
    slopes = scaling_exponents(ok).set_index("model")
    fitted = [m for m in slopes.index if slopes.loc[m, "points"] >= 2]
    rec = registry.representative(RECURRENT, [m for m in fitted if registry.find([m], fused=True)])
    if rec is not None:
        g = ok[ok["model"] == rec]  # its own longest length: a stopped run may not have reached T with every model
        longest = g[g["seq_len"] == g["seq_len"].max()].iloc[0]
        slope, mib = f"{slopes.loc[rec, 'memory_slope']:.2f}", sig3(longest["saved_bytes"] / 2**20)
        out.append(tr("serial.take.memory", model=model_name(rec, tr), slope=slope, T=int(longest["seq_len"]), mib=mib))
    pair = chapter_pair(fitted)
    if pair is not None:
        lstm, tf = (fit.exponent_text(slopes.loc[m, "time_slope"], slopes.loc[m, "time_slope_se"]) for m in pair)
        out.append(tr("serial.take.slopes", lstm=lstm, tf=tf))
    above = int(ok["above_ceiling"].fillna(False).astype(bool).sum()) if "above_ceiling" in ok else 0
    if above:
        out.append(tr("serial.take.above_ceiling", n=above))
    noisy = int(ok["noisy"].astype(bool).sum()) if "noisy" in ok else 0
    if noisy:
        out.append(tr("serial.take.noisy", n=noisy))
    return out
