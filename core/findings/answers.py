"""What page 5 and the home page conclude: training speed (parallel forms against their loops), decoding (a fixed
state against a growing cache) and gradient reach (Table 1's path lengths); facts from the records."""

from __future__ import annotations

import math

import pandas as pd

from core.findings import model_name, sig3
from core.harness import fit
from core.harness.memory_formulas import format_bytes, tokens_held
from core.models import registry
from core.models.registry import ANSWERS, ATTENTION, CHAPTER, CONVOLUTION, LOOP, RECURRENT, Spec, family_of
from core.terms import status

FENG_N = 512  # Feng et al. 2024 (T4 GPU, vs the sequential versions): the published speed-ups at this length
FENG = {"min_gru": 175.0, "min_lstm": 235.0}


def _ok(df: pd.DataFrame | None) -> pd.DataFrame:
    if df is None or not len(df) or "status" not in df:
        return pd.DataFrame()
    return df[df["status"] == status.OK]


def row_of(m: str, table1: str) -> bool:
    """Whether `m` is a mixer of that Table 1 row (False for a name from another version of the lab)."""
    return registry.has(m, ANSWERS) and registry.get(m).table1 == table1


def _names(mixers, tr) -> str:
    return tr("answers.sep").join(model_name(m, tr) for m in mixers)


def times_text(x: float) -> str:
    return f"{x:.2g}" if x < 10 else f"{x:,.0f}"


# ---- training speed --------------------------------------------------------------------------------------------


def speedups(df: pd.DataFrame | None) -> pd.DataFrame:
    """Every parallel form's paired speed-up over its own loop: mixer, form, seq_len, speedup, q25, q75."""
    ok = _ok(df)
    if not len(ok) or "speedup_vs_loop" not in ok:
        return pd.DataFrame(columns=["mixer", "form", "seq_len", "speedup", "q25", "q75"])
    ok = ok[ok["speedup_vs_loop"].notna()]
    out = ok[["mixer", "form", "seq_len", "speedup_vs_loop", "speedup_q25", "speedup_q75"]]
    return out.rename(columns={"speedup_vs_loop": "speedup", "speedup_q25": "q25", "speedup_q75": "q75"})


def headline(df: pd.DataFrame | None) -> dict | None:
    """The headline: minGRU's scan against its loop at the longest length both ran, with spread, rows and steps."""
    s = speedups(df)
    if not len(s):
        return None
    scans = [m for m in dict.fromkeys(s["mixer"]) if row_of(m, "scan")]
    if not scans:
        return None
    m = scans[0]
    mine = s[s["mixer"] == m].sort_values("seq_len")
    top, low = mine.iloc[-1], mine.iloc[0]
    ok = _ok(df)
    at = ok[(ok["mixer"] == m) & (ok["seq_len"] == top["seq_len"])].set_index("form")
    return {"mixer": m, "form": top["form"], "n": int(top["seq_len"]), "speedup": float(top["speedup"]),
            "q25": float(top["q25"]), "q75": float(top["q75"]), "n0": int(low["seq_len"]),
            "speedup0": float(low["speedup"]), "loop": at.loc[LOOP], "fast": at.loc[top["form"]]}  # fmt: skip


def how(h: dict) -> tuple[str, dict]:
    """'faster' and the speed-up with its paired spread ({x, lo, hi}), or 'slower' and the inverses."""
    x, lo, hi = h["speedup"], h["q25"], h["q75"]
    if x >= 1:
        return "faster", {"x": times_text(x), "lo": times_text(lo), "hi": times_text(hi)}
    return "slower", {"x": times_text(1 / x), "lo": times_text(1 / hi), "hi": times_text(1 / lo)}


def headline_text(h: dict, tr) -> str:
    """The headline as the page and the home page both say it."""
    way, said = how(h)
    text = tr("answers.take.headline", mixer=model_name(h["mixer"], tr), n=h["n"], how=tr(f"answers.how.{way}", **said))
    if h["n0"] != h["n"]:
        text += tr("ui.sentence_sep") + tr("answers.take.headline_at", n0=h["n0"], x0=times_text(h["speedup0"]))
    return text


AMDAHL = ["mixer", "form", "seq_len", "whole", "whole_q25", "whole_q75", "rec", "rec_q25", "rec_q75", "loop_ms",
          "loop_rec_ms", "shared_ms", "fast_ms", "fast_rec_ms", "fast_shared_ms", "share", "ceiling", "predicted"]  # fmt: skip


def amdahl(df: pd.DataFrame | None) -> pd.DataFrame:
    """Amdahl's law per (mixer, form, length) with the recurrence timed alone: paired speed-ups of step and
    recurrence, shared work (step − recurrence), its share of the loop's step, ceiling 1 ÷ share (NaN unless
    share > 0), and the law's prediction 1 ÷ (share + (1 − share) ÷ rec)."""
    ok = _ok(df)
    if not len(ok) or "rec_speedup_vs_loop" not in ok:
        return pd.DataFrame(columns=AMDAHL)
    loops = ok[ok["form"] == LOOP].drop_duplicates(["mixer", "seq_len"], keep="last").set_index(["mixer", "seq_len"])
    rows = []
    for r in ok[ok["rec_speedup_vs_loop"].notna() & ok["speedup_vs_loop"].notna()].itertuples():
        if (r.mixer, r.seq_len) not in loops.index:
            continue
        loop = loops.loc[(r.mixer, r.seq_len)]
        shared = float(loop["train_ms"] - loop["rec_ms"])
        share = shared / float(loop["train_ms"])
        whole, rec = float(r.speedup_vs_loop), float(r.rec_speedup_vs_loop)
        rows.append({"mixer": r.mixer, "form": r.form, "seq_len": int(r.seq_len), "whole": whole,
                     "whole_q25": float(r.speedup_q25), "whole_q75": float(r.speedup_q75), "rec": rec,
                     "rec_q25": float(r.rec_speedup_q25), "rec_q75": float(r.rec_speedup_q75),
                     "loop_ms": float(loop["train_ms"]), "loop_rec_ms": float(loop["rec_ms"]), "shared_ms": shared,
                     "fast_ms": float(r.train_ms), "fast_rec_ms": float(r.rec_ms),
                     "fast_shared_ms": float(r.train_ms - r.rec_ms), "share": share if share > 0 else math.nan,
                     "ceiling": 1 / share if share > 0 else math.nan,
                     "predicted": 1 / (share + (1 - share) / rec) if share > 0 and rec > 0 else math.nan})  # fmt: skip
    return pd.DataFrame(rows, columns=AMDAHL)


def pct_text(x: float) -> str:
    """A share as a sentence writes it after its placeholder's %: 33, 4.2, 0.51."""
    return f"{100 * x:.0f}" if x >= 0.1 else f"{100 * x:.2g}"


def amdahl_text(df: pd.DataFrame | None, tr) -> list[str]:
    """The headline mixer's recurrence-alone and whole-step speed-ups, the shared work's share and its ceiling.
    Then whether the recurrence beat the step at every length, and why a step that beat the ceiling did."""
    h, a = headline(df), amdahl(df)
    if h is None or not len(a):
        return []
    mine = a[(a["mixer"] == h["mixer"]) & (a["form"] == h["form"])].sort_values("seq_len")
    at = mine[mine["seq_len"] == h["n"]]
    if not len(at) or not math.isfinite(at["share"].iloc[0]):
        return []
    r = at.iloc[0]
    out = [tr("answers.take.amdahl", n=h["n"], mixer=model_name(h["mixer"], tr), form=tr(f"answers.form.{r['form']}"),
              rec=times_text(r["rec"]), rec_lo=times_text(r["rec_q25"]), rec_hi=times_text(r["rec_q75"]),
              whole=times_text(r["whole"]), shared_ms=sig3(r["shared_ms"]), loop_ms=sig3(r["loop_ms"]),
              share=pct_text(r["share"]), fast_shared_ms=sig3(r["fast_shared_ms"]),
              ceiling=times_text(r["ceiling"]), predicted=times_text(r["predicted"]))]  # fmt: skip
    if r["whole"] > r["ceiling"]:  # Amdahl's law takes the shared work to cost the same in both forms
        out.append(
            tr(
                "answers.take.amdahl_beyond",
                whole=times_text(r["whole"]),
                ceiling=times_text(r["ceiling"]),
                shared_ms=sig3(r["shared_ms"]),
                fast_shared_ms=sig3(r["fast_shared_ms"]),
            )
        )
    if len(mine) > 1:
        above = int((mine["rec"] > mine["whole"]).sum())
        key = "answers.take.amdahl_every" if above == len(mine) else "answers.take.amdahl_some"
        out.append(tr(key, k=len(mine), above=above, n0=int(mine["seq_len"].min()), n1=int(mine["seq_len"].max()),
                      rec_lo=times_text(mine["rec"].min()), rec_hi=times_text(mine["rec"].max()),
                      whole_lo=times_text(mine["whole"].min()), whole_hi=times_text(mine["whole"].max())))  # fmt: skip
    return out


def _fit(g: pd.DataFrame, y: str) -> str:
    slope, se = fit.tail_fit(g["seq_len"], g[y])
    return fit.exponent_text(slope, se)


def speed_takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Sentences computed from answers_speed rows (any prefix of a run)."""
    ok = _ok(df)
    h = headline(df)
    out = []
    if h is not None:
        out.append(headline_text(h, tr))
        loop, fast = h["loop"], h["fast"]
        why = "answers.take.why_faster" if h["speedup"] > 1 else "answers.take.why"
        out.append(tr(why, n=h["n"], steps=int(loop["seq_steps"]), depth=int(fast["seq_steps"]),
                      loop_us=f"{1e3 * loop['train_ms'] / h['n']:.3g}", scan_us=f"{1e3 * fast['train_ms'] / h['n']:.3g}",
                      device=str(loop["device"])))  # fmt: skip
        out.extend(amdahl_text(df, tr))
        s = speedups(df)
        at = s[(s["seq_len"] == h["n"]) & (s["mixer"] != h["mixer"])]
        if len(at):
            items = [
                tr(
                    "answers.item",
                    mixer=model_name(r.mixer, tr),
                    form=tr(f"answers.form.{r.form}"),
                    x=times_text(r.speedup),
                )
                for r in at.itertuples()
            ]
            out.append(tr("answers.take.others", n=h["n"], items=tr("answers.sep_items").join(items)))
    if len(ok) and "vs_lstm" in ok:
        n = int(ok["seq_len"].max())
        at = ok[ok["seq_len"] == n].set_index(["mixer", "form"])
        known = [k for k in at.index if registry.has(k[0], ANSWERS)]
        base = {
            fam: [k for k in known if registry.has(k[0], CHAPTER) and family_of(k[0]) == fam]
            for fam in (RECURRENT, ATTENTION)
        }
        new = at.loc[[k for k in known if not registry.has(k[0], CHAPTER)]]
        if base[RECURRENT] and base[ATTENTION] and len(new):
            best = new["train_ms"].idxmin()
            out.append(tr("answers.take.baselines", n=n, lstm=sig3(at.loc[base[RECURRENT][0], "train_ms"]),
                          tf=sig3(at.loc[base[ATTENTION][0], "train_ms"]), best=model_name(best[0], tr),
                          form=tr(f"answers.form.{best[1]}"), best_ms=sig3(new.loc[best, "train_ms"])))  # fmt: skip
    windows = ok[[row_of(m, "restricted") for m in ok["mixer"]]] if len(ok) else ok
    att = ok[[row_of(m, "self_attention") for m in ok["mixer"]]] if len(ok) else ok
    if len(windows) and windows["seq_len"].nunique() >= 2 and att["seq_len"].nunique() >= 2:
        out.append(
            tr(
                "answers.take.window",
                r=int(windows["window"].iloc[0]),
                b=_fit(windows, "train_ms"),
                tb=_fit(att, "train_ms"),
                n=int(windows["seq_len"].max()),
            )
        )
    if h is not None and "saved_bytes" in h["loop"]:
        out.append(
            tr(
                "answers.take.memory",
                n=h["n"],
                mixer=model_name(h["mixer"], tr),
                scan=format_bytes(h["fast"]["saved_bytes"]),
                loop=format_bytes(h["loop"]["saved_bytes"]),
            )
        )
    errors = ok[ok["max_error"].notna()] if len(ok) and "max_error" in ok else pd.DataFrame()
    if len(errors):
        worst = errors.loc[errors["max_error"].idxmax()]
        out.append(
            tr(
                "answers.take.precision",
                err=f"{worst['max_error']:.1g}",
                mixer=model_name(worst["mixer"], tr),
                form=tr(f"answers.form.{worst['form']}"),
                n=int(worst["seq_len"]),
            )
        )
    return out


# ---- decoding --------------------------------------------------------------------------------------------------


def decode_fits(df: pd.DataFrame | None) -> pd.DataFrame:
    """Per mixer: log-log exponents (± SE) of kept bytes and time per token, and both at the longest context."""
    ok = _ok(df)
    rows = []
    for m, g in ok.groupby("mixer", sort=False) if len(ok) else ():
        if not registry.has(m, ANSWERS):
            continue
        g = g.sort_values("context_len")
        x = g["context_len"].astype(float)
        mem = fit.tail_fit(x, g["state_bytes"], points=len(g))
        ms = fit.tail_fit(x, g["ms_per_token"], points=len(g))
        last = g.iloc[-1]
        rows.append({"mixer": m, "family": registry.get(m).family, "mem_slope": mem[0], "mem_se": mem[1],
                     "time_slope": ms[0], "time_se": ms[1], "n": int(last["context_len"]),
                     "bytes": float(last["state_bytes"]), "ms": float(last["ms_per_token"]),
                     "predicted": float(last.get("predicted_bytes", math.nan)), "points": len(g)})  # fmt: skip
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
        out.append(tr("answers.take.flat", k=len(fixed), names=_names(fixed["mixer"], tr),
                      n=f"{int(fixed['n'].max()):,}", slope=fit.exponent_text(fixed["mem_slope"].abs().max(), 0.0),
                      big=model_name(biggest["mixer"], tr), bytes=format_bytes(biggest["bytes"])))  # fmt: skip
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
        out.append(tr("answers.take.cache", slope=fit.exponent_text(c["mem_slope"], c["mem_se"]), n=f"{int(c['n']):,}",
                      bytes=format_bytes(c["bytes"]), formula=tr(said)))  # fmt: skip
        if len(fixed):
            ratio = c["bytes"] / fixed["bytes"].max()
            quick = fixed.loc[fixed["ms"].idxmin()]
            out.append(tr("answers.take.decode_time", n=f"{int(c['n']):,}", ms=sig3(c["ms"]),
                          t_slope=fit.exponent_text(c["time_slope"], c["time_se"]), fast=model_name(quick["mixer"], tr),
                          fast_ms=sig3(quick["ms"]), ratio=times_text(ratio)))  # fmt: skip
    return out


# ---- gradient reach --------------------------------------------------------------------------------------------


def reach_profiles(df: pd.DataFrame | None) -> pd.DataFrame:
    """Per model: its Table 1 row, where its gradient ends exactly (a window's or kernel's receptive field), and
    its decay reach (the first distance REACH_FACTOR× below distance 1)."""
    ok = _ok(df)
    rows = []
    for m, g in ok.groupby("model", sort=False) if len(ok) else ():
        g = g.sort_values("distance")
        nonzero = g[g["grad_norm"] > 0]["distance"]
        T = int(g["distance"].max()) + 1
        end = int(nonzero.max()) + 1 if len(nonzero) else 0
        back = g[g["distance"] >= 1]["grad_norm"]
        table1 = registry.get(m).table1 if registry.has(m, ANSWERS) else None  # else the chapter's layers
        table1 = table1 or ("recurrent" if family_of(m) == RECURRENT else "self_attention")
        # an end only for a window or receptive field: a recurrence's far gradients can underflow to 0 too
        ends = table1 in ("restricted", "convolutional") and end < T
        rows.append({"model": m, "table1": table1, "T": T, "end": end if ends else math.nan,
                     "reach": float(g["reach"].iloc[0]), "lo": float(back.min()), "hi": float(back.max()),
                     "d_model": int(g["d_model"].iloc[0])})  # fmt: skip
    return pd.DataFrame(rows)


def reach_takeaways(df: pd.DataFrame, tr) -> list[str]:
    prof = reach_profiles(df)
    if not len(prof):
        return []
    out = []
    decays = prof[prof["reach"].notna() & prof["end"].isna()]
    if len(decays):
        lo, hi = int(decays["reach"].min()), int(decays["reach"].max())
        out.append(tr("answers.take.decay", names=_names(decays["model"], tr), lo=lo, hi=hi))
    for _, r in prof[prof["end"].notna() & prof["model"].isin(registry.names(ANSWERS))].iterrows():
        spec, end = Spec(r["d_model"]), int(r["end"]) - 1
        if registry.get(r["model"]).family == CONVOLUTION:  # a stack of kernels of size k: k^levels tokens
            k, levels = spec.kernel, spec.levels
            out.append(tr("answers.take.field", end=end, k=k, levels=levels, field=k**levels))
        else:
            layers = registry.get(r["model"]).reach_depth
            out.append(tr("answers.take.window_reach", end=end, layers=layers, r=spec.window, per=spec.window - 1))
    level = prof[prof["reach"].isna() & prof["end"].isna() & (prof["lo"] > 0)]
    if len(level):
        out.append(tr("answers.take.kept", names=_names(level["model"], tr), T=int(level["T"].max()) - 1))
    return out
