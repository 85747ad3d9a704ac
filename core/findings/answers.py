"""What page 5 and the home page conclude about training speed: parallel forms against their loops, Amdahl's law
for the part a scan replaces, and the chapter's models beside them; facts from the records. Decoding and gradient
reach: core.findings.answers_decode and core.findings.answers_reach."""

from __future__ import annotations

import math

import pandas as pd

from core.findings import clear_of, model_name, sig3
from core.harness import fit
from core.harness.memory_formulas import format_bytes
from core.models import registry
from core.models.registry import ANSWERS, ATTENTION, CHAPTER, LOOP, RECURRENT, family_of
from core.terms import status

FENG_N = 512  # Feng et al. 2024 (T4 GPU, vs the sequential versions): the published speed-ups at this length
FENG = {"min_gru": 175.0, "min_lstm": 235.0}


def ok_rows(df: pd.DataFrame | None) -> pd.DataFrame:
    """The rows measured OK (an empty frame for none)."""
    if df is None or not len(df) or "status" not in df:
        return pd.DataFrame()
    return df[df["status"] == status.OK]


def row_of(m: str, table1: str) -> bool:
    """Whether `m` is a mixer of that Table 1 row (False for a name from another version of the lab)."""
    return registry.has(m, ANSWERS) and registry.get(m).table1 == table1


def names_text(mixers, tr) -> str:
    """The mixers' names, listed in the page's language."""
    return tr("answers.sep").join(model_name(m, tr) for m in mixers)


OPTION_BOUNDS = (2.0, 10.0)  # the speed-ups where the page's question's options meet


def times_text(x: float) -> str:
    return clear_of(x, OPTION_BOUNDS)


# ---- training speed --------------------------------------------------------------------------------------------


def speedups(df: pd.DataFrame | None) -> pd.DataFrame:
    """Every parallel form's paired speed-up over its own loop: mixer, form, seq_len, speedup, q25, q75."""
    ok = ok_rows(df)
    if not len(ok) or "speedup_vs_loop" not in ok:
        return pd.DataFrame(columns=["mixer", "form", "seq_len", "speedup", "q25", "q75"])
    ok = ok[ok["speedup_vs_loop"].notna()]
    out = ok[["mixer", "form", "seq_len", "speedup_vs_loop", "speedup_q25", "speedup_q75"]]
    return out.rename(columns={"speedup_vs_loop": "speedup", "speedup_q25": "q25", "speedup_q75": "q75"})


QUESTION_TOKENS = 4096  # the length the page's question asks about


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
    ok = ok_rows(df)
    at = ok[(ok["mixer"] == m) & (ok["seq_len"] == top["seq_len"])].set_index("form")
    return {
        "mixer": m,
        "form": top["form"],
        "n": int(top["seq_len"]),
        "speedup": float(top["speedup"]),
        "q25": float(top["q25"]),
        "q75": float(top["q75"]),
        "n0": int(low["seq_len"]),
        "speedup0": float(low["speedup"]),
        "loop": at.loc[LOOP],
        "fast": at.loc[top["form"]],
    }


def question_headline(df: pd.DataFrame, h: dict) -> dict:
    """The headline at the length measured nearest the question's QUESTION_TOKENS (the longer of two equally near),
    for the mixer and form of `h`, the headline at the longest length."""
    s = speedups(df)
    s = s[(s["mixer"] == h["mixer"]) & (s["form"] == h["form"])]
    n = min(set(s["seq_len"]), key=lambda v: (abs(math.log(v / QUESTION_TOKENS)), -v))
    return headline(df[df["seq_len"] <= n])


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


AMDAHL = [
    "mixer",
    "form",
    "seq_len",
    "whole",
    "whole_q25",
    "whole_q75",
    "rec",
    "rec_q25",
    "rec_q75",
    "loop_ms",
    "loop_rec_ms",
    "shared_ms",
    "fast_ms",
    "fast_rec_ms",
    "fast_shared_ms",
    "share",
    "ceiling",
    "predicted",
]


def amdahl(df: pd.DataFrame | None) -> pd.DataFrame:
    """Amdahl's law per (mixer, form, length) with the recurrence timed alone: paired speed-ups of step and
    recurrence, shared work (step − recurrence), its share of the loop's step, ceiling 1 ÷ share (NaN unless
    share > 0), and the law's prediction 1 ÷ (share + (1 − share) ÷ rec)."""
    ok = ok_rows(df)
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
        rows.append(
            {
                "mixer": r.mixer,
                "form": r.form,
                "seq_len": int(r.seq_len),
                "whole": whole,
                "whole_q25": float(r.speedup_q25),
                "whole_q75": float(r.speedup_q75),
                "rec": rec,
                "rec_q25": float(r.rec_speedup_q25),
                "rec_q75": float(r.rec_speedup_q75),
                "loop_ms": float(loop["train_ms"]),
                "loop_rec_ms": float(loop["rec_ms"]),
                "shared_ms": shared,
                "fast_ms": float(r.train_ms),
                "fast_rec_ms": float(r.rec_ms),
                "fast_shared_ms": float(r.train_ms - r.rec_ms),
                "share": share if share > 0 else math.nan,
                "ceiling": 1 / share if share > 0 else math.nan,
                "predicted": 1 / (share + (1 - share) / rec) if share > 0 and rec > 0 else math.nan,
            }
        )
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
    out = [
        tr(
            "answers.take.amdahl",
            n=h["n"],
            mixer=model_name(h["mixer"], tr),
            form=tr(f"answers.form.{r['form']}"),
            rec=times_text(r["rec"]),
            rec_lo=times_text(r["rec_q25"]),
            rec_hi=times_text(r["rec_q75"]),
            whole=times_text(r["whole"]),
            shared_ms=sig3(r["shared_ms"]),
            loop_ms=sig3(r["loop_ms"]),
            share=pct_text(r["share"]),
            fast_shared_ms=sig3(r["fast_shared_ms"]),
            ceiling=times_text(r["ceiling"]),
            predicted=times_text(r["predicted"]),
        )
    ]
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
        out.append(
            tr(
                key,
                k=len(mine),
                above=above,
                n0=int(mine["seq_len"].min()),
                n1=int(mine["seq_len"].max()),
                rec_lo=times_text(mine["rec"].min()),
                rec_hi=times_text(mine["rec"].max()),
                whole_lo=times_text(mine["whole"].min()),
                whole_hi=times_text(mine["whole"].max()),
            )
        )
    return out


def _fit(g: pd.DataFrame, y: str) -> str:
    slope, se = fit.tail_fit(g["seq_len"], g[y])
    return fit.exponent_text(slope, se)


def speed_takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Sentences computed from answers_speed rows (any prefix of a run)."""
    ok = ok_rows(df)
    h = headline(df)
    out = []
    if h is not None:
        text, q = headline_text(h, tr), question_headline(df, h)
        if q["n"] not in (h["n"], h["n0"]):
            text += tr("ui.sentence_sep") + tr("answers.take.headline_q", n=q["n"], x=times_text(q["speedup"]))
        out.append(text)
        loop, fast = h["loop"], h["fast"]
        why = "answers.take.why_faster" if h["speedup"] > 1 else "answers.take.why"
        out.append(
            tr(
                why,
                n=h["n"],
                steps=int(loop["seq_steps"]),
                depth=int(fast["seq_steps"]),
                loop_us=f"{1e3 * loop['train_ms'] / h['n']:.3g}",
                scan_us=f"{1e3 * fast['train_ms'] / h['n']:.3g}",
                device=str(loop["device"]),
            )
        )
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
            out.append(
                tr(
                    "answers.take.baselines",
                    n=n,
                    lstm=sig3(at.loc[base[RECURRENT][0], "train_ms"]),
                    tf=sig3(at.loc[base[ATTENTION][0], "train_ms"]),
                    best=model_name(best[0], tr),
                    form=tr(f"answers.form.{best[1]}"),
                    best_ms=sig3(new.loc[best, "train_ms"]),
                )
            )
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
