"""Which answer to each page's "predict first" question the rows shown support: computed, never an answer key.

The right answer can depend on the device (on a 2-core CPU the fused LSTM *is* faster than a Transformer layer),
so each question's verdict is read from the measurement the page shows — a live run if there is one, else the
reference — with the number that decides it. `option` is the 0-based index of the supported option, or None when
the rows support none clearly (the spread straddles the boundary, a stopped run lacks the points, the effect sits
between two options). `other_device` says, where a model predicts it, that another device would answer otherwise.
Each verdict is registered (`@question`) under its question's key with the experiment whose rows it reads: that is
the one map from questions to experiments, which the pages, the home page and the tests read.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import pandas as pd

from core.findings import answers as answers_findings
from core.findings import attention_cost as attention_findings
from core.findings import checkpoint as checkpoint_findings
from core.findings import clear_of
from core.findings import depth as depth_findings
from core.findings import long_range as long_range_findings
from core.findings import real_text as text_findings
from core.findings import recall_frontier as recall_findings
from core.findings import scaling as scaling_findings
from core.findings import serial as serial_findings
from core.findings.long_range import pct
from core.harness.fit import exponent_text
from core.harness.memory_formulas import format_bytes
from core.models.registry import ATTENTION, RECURRENT
from core.terms import status
from core.terms.rules import NEAR_CHANCE, SEPARATED, SOLVED

# The depth question: "about the same" below this first ÷ last ratio, "a few times smaller" up to the next, and
# "thousands of times smaller, or less" from the last; between the two upper bounds neither option fits.
DEPTH_SAME_BELOW, DEPTH_FEW_UP_TO, DEPTH_THOUSANDS_FROM = 3.0, 100.0, 1000.0
DEPTH_LAYERS = 8  # the question's stack
SERIAL_TOKENS = 1000  # the serial question's sequence length
# The answers question: "no faster" below this speed-up over its own loop, "a few times" up to the next, "tens of
# times or more" from there
ANSWERS_FEW_FROM, ANSWERS_TENS_FROM = answers_findings.OPTION_BOUNDS


@dataclasses.dataclass(frozen=True)
class Verdict:
    option: int | None  # the option the measurement supports (0-based), None = none clearly
    key: str  # catalogue key of the sentence that says what was measured
    values: dict  # its placeholders, as text
    other_device: str | None = None  # catalogue key of a sentence on what another device would answer, if any
    # placeholders given as catalogue keys (a task's name): said in the page's language
    terms: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Question:
    experiment: str  # the experiment whose rows its verdict reads
    verdict: Callable[[pd.DataFrame], Verdict | None]


QUESTIONS: dict[str, Question] = {}  # by predict key ('serial.scaling'), in the order they are declared


def question(key: str, experiment: str) -> Callable:
    """Registers the decorated function as question `key`'s verdict, read from `experiment`'s rows."""

    def add(verdict: Callable) -> Callable:
        QUESTIONS[key] = Question(experiment, verdict)
        return verdict

    return add


def sentence(verdict: Verdict, tr, where: str = "here", where_text: str | None = None) -> str:
    """The verdict's measured sentence, led by where it was measured: 'here' (the run shown) or 'gpu' (a shipped GPU
    reference read beside it), or by `where_text` as given."""
    terms = {name: tr(key) for name, key in verdict.terms.items()}
    return tr(verdict.key, where=where_text or tr(f"ui.verdict.where.{where}"), **verdict.values, **terms)


@question("serial", "serial")
def serial(df: pd.DataFrame) -> Verdict | None:
    """'Which trains faster at ~1,000 tokens?': the chapter's pair at the length both ran nearest to 1,000, by their
    paired ratio (0 Transformer, 1 LSTM, 2 about the same); off a GPU, the roofline's GPU prediction beside it."""
    c = serial_findings.comparison(df) if len(df) else None
    if c is None:
        return None
    near = min(c["lengths"], key=lambda n: (abs(math.log(n / SERIAL_TOKENS)), -n))  # the question: ~1,000 tokens
    c = serial_findings.comparison(df[df["seq_len"] <= near])
    option = {"faster": 0, "slower": 1, "same": 2}[c["verdict"]]
    ratio, lo, hi = serial_findings.spread_text(c)
    values = {"T": c["T"], "ratio": ratio, "lo": lo, "hi": hi, "device": str(c["att_row"]["device"])}
    other = None
    if option != 0 and str(c["att_row"].get("device_type", "cpu")) != "cuda":
        gpu = serial_findings.roofline_frame(df[df["seq_len"] == c["T"]])
        gpu = gpu[~gpu["measured"]].set_index("model")["predicted_ms"] if len(gpu) else gpu
        if len(gpu) and c["att"] in gpu.index and c["rec"] in gpu.index and gpu[c["att"]] < gpu[c["rec"]]:
            other = "verdict.serial.other_gpu"
    return Verdict(option, f"verdict.serial.measured.{c['verdict']}", values, other)


@question("long_range", "long_range")
def long_range(df: pd.DataFrame) -> Verdict | None:
    """'Who learns the name at a long distance?': long_range.chapter_pair's accuracies (the home card reads the same),
    by the median over seeds (0 both solved, 1 only the Transformer, 2 neither; the LSTM alone is no option)."""
    c = long_range_findings.chapter_pair(df)
    if c is None:
        return None
    a_att, a_rec = c[ATTENTION]["accuracy"], c[RECURRENT]["accuracy"]
    solved_att, solved_rec = a_att >= SOLVED, a_rec >= SOLVED
    option = 0 if solved_att and solved_rec else 1 if solved_att else 2 if not solved_rec else None
    values = {"d": c["distance"], "att": pct(a_att), "rec": pct(a_rec), "chance": pct(c["chance"]), "steps": c["steps"]}
    return Verdict(option, "verdict.long_range.measured", values, terms={"task": f"long_range.task.{c['task']}"})


@question("depth", "depth")
def depth(df: pd.DataFrame) -> Verdict | None:
    """'How large is the first layer's gradient of an 8-layer plain LSTM stack against its last?': the measured
    last ÷ first ratio at initialisation, at the measured depth nearest to 8."""
    plain = depth_findings.roles().plain
    prof = depth_findings.init_profile(df) if len(df) else pd.DataFrame()
    prof = prof[prof["model"] == plain] if len(prof) else prof
    if not len(prof):
        return None
    L = min(set(prof["n_layers"]), key=lambda n: (abs(n - DEPTH_LAYERS), -n))
    stack = prof[prof["n_layers"] == L].set_index("layer")["grad_norm"]
    if L < 2 or 1 not in stack.index or L not in stack.index:
        return None
    first, last = float(stack[1]), float(stack[L])
    ratio = last / first if first > 0 else math.inf
    few, thousands = ratio <= DEPTH_FEW_UP_TO, ratio >= DEPTH_THOUSANDS_FROM
    option = 0 if ratio < DEPTH_SAME_BELOW else 1 if few else 2 if thousands else None
    bounds = (DEPTH_SAME_BELOW, DEPTH_FEW_UP_TO, DEPTH_THOUSANDS_FROM)
    shown = "∞" if not math.isfinite(ratio) else clear_of(ratio, bounds)
    values = {"L": int(L), "first": depth_findings.number(first), "last": depth_findings.number(last), "ratio": shown}
    return Verdict(option, "verdict.depth.measured", values)


@question("attention_cost", "attention_cost")
def attention_cost(df: pd.DataFrame) -> Verdict | None:
    """'Double n from 1,024 to 2,048: how much more does naive attention keep for backward?': the measured ratio
    of saved bytes between those lengths (else 2 to the fitted exponent), read to the nearest of 2×, 4×, 8×."""
    naive, _ = attention_findings.materialised_and_fused(df) if len(df) else (None, None)
    if naive is None:
        return None
    ok = df[(df["status"] == status.OK) & (df["impl"] == naive["impl"])]
    if "point" in ok:
        ok = ok[ok["point"] == "sweep"]
    by_n = ok.drop_duplicates("seq_len", keep="last").set_index("seq_len")["saved_bytes"]
    if 1024 in by_n.index and 2048 in by_n.index and by_n[1024] > 0:
        ratio, how = float(by_n[2048] / by_n[1024]), "measured"
    elif math.isfinite(naive["mem_slope"]):
        ratio, how = 2.0 ** float(naive["mem_slope"]), "fitted"
    else:
        return None
    steps = math.log2(ratio) if ratio > 0 else -math.inf
    option = min(range(3), key=lambda i: abs(steps - (i + 1)))
    if abs(steps - (option + 1)) > 0.25:  # between two options: neither is what was measured
        option = None
    return Verdict(option, f"verdict.attention_cost.{how}", {"ratio": f"{ratio:.2f}", "slope": naive["mem_text"]})


@question("serial.scaling", "scaling")
def scaling(df: pd.DataFrame) -> Verdict | None:
    """'Give the step twice the threads: whose step speeds up most?': the chapter's pair at the longest length and
    the most threads both reached, by their paired speed-up quartiles (0 the Transformer, 1 the LSTM, 2 alike)."""
    c = scaling_findings.comparison(df) if len(df) else None
    if c is None:
        return None
    option = {"above": 0, "below": 1, "overlap": 2}[c["order"]]
    a, r = c["att_row"], c["rec_row"]

    def x(row, who) -> dict:  # numbers only: the sentence in each language brackets them with its own punctuation
        keys = (who, f"{who}_lo", f"{who}_hi")
        return {k: f"{row[c]:.2f}" for k, c in zip(keys, ("speedup", "speedup_q25", "speedup_q75"))}

    return Verdict(option, "verdict.scaling.measured", {"T": c["T"], "p": c["p"], **x(a, "att"), **x(r, "rec")})


@question("serial.ckpt", "checkpoint")
def checkpoint(df: pd.DataFrame) -> Verdict | None:
    """'With checkpointed BPTT, 4× the tokens: how many times the layers' saved memory?': from the fitted growth
    exponent b of the checkpointed rows over the longest lengths, 4^b (0 about 4×: b above 0.75, 1 about 2×:
    0.25 to 0.75, 2 about the same: below 0.25)."""
    c = checkpoint_findings.comparison(df) if len(df) else None
    if c is None:
        return None
    b, se = c["growth"]
    if not math.isfinite(b):
        return None
    option = 0 if b > 0.75 else 1 if b >= 0.25 else 2
    return Verdict(
        option,
        "verdict.ckpt.measured",
        {
            "T": c["T"],
            "ck": format_bytes(c["ck"]["layer_saved_bytes"]),
            "plain": format_bytes(c["plain"]["layer_saved_bytes"]),
            "b": exponent_text(b, se),
            "x": f"{4**b:.1f}",
        },
    )


def _answers_option(x: float) -> int:
    return 0 if x < ANSWERS_FEW_FROM else 1 if x < ANSWERS_TENS_FROM else 2


@question("answers", "answers_speed")
def answers(df: pd.DataFrame) -> Verdict | None:
    """'A recurrence whose gate reads only the input: how many times faster can it train at 4K tokens (than its
    own step loop)?': the minGRU scan's paired speed-up at the length measured nearest to 4,096 (0 no faster, 1 a
    few times, 2 tens of times or more; None when the paired spread straddles a boundary); off a GPU, a line on
    what Feng et al. measured on one."""
    h = answers_findings.headline(df) if len(df) else None
    if h is None:
        return None
    h = answers_findings.question_headline(df, h)
    lo, hi = _answers_option(h["q25"]), _answers_option(h["q75"])
    way, said = answers_findings.how(h)
    option = lo if lo == hi else None
    other = None if str(h["loop"].get("device_type", "cpu")) == "cuda" or option == 2 else "answers.verdict.other_gpu"
    values = {"n": h["n"], **said, "device": str(h["loop"]["device"])}
    return Verdict(option, f"answers.verdict.{way}", values, other)


@question("recall", "recall_frontier")
def recall(df: pd.DataFrame) -> Verdict | None:
    """'Linear attention at a width that recalls 4 pairs: 16, same width — its recall?': from the pairs
    panel, the fall from the fewest to the most pairs (0 stays high: it fell by under 2 × NEAR_CHANCE; 1 falls: by
    SEPARATED or more; 2 at chance: both within NEAR_CHANCE of chance; None in between)."""
    f = recall_findings.fall(df, "linear_attention") if len(df) else None
    if f is None:
        return None
    drop, at_chance = f["lo"] - f["hi"], max(f["lo"], f["hi"]) < f["chance"] + NEAR_CHANCE
    option = 2 if at_chance else 1 if drop >= SEPARATED else 0 if drop < 2 * NEAR_CHANCE else None
    lo, hi, chance = (pct(f[k]) for k in ("lo", "hi", "chance"))
    values = {"d": f["d"], "lo": lo, "hi": hi, "lo_p": f["lo_p"], "hi_p": f["hi_p"], "chance": chance}
    written = "form" in df and set(df["form"]) == {"written"}  # no training: pairs written straight into the state
    return Verdict(option, f"verdict.recall.{'written' if written else 'measured'}", values)


@question("long_range.text", "real_text")
def long_range_text(df: pd.DataFrame) -> Verdict | None:
    """'A span repeats x bytes later: which model reads it cheaper the second time?' (0 only the Transformer, 1 only
    the LSTM, 2 both): a model does when the repeat costs COPY_GAIN_BITS or more less than the control (the same span
    at the same place with no first copy) in every seed (core.findings.real_text.pair_copy); neither, or seeds that
    disagree: no option. `n`: the number of seeds (the sentence's '.one' twin for one)."""
    said = text_findings.pair_copy(df) if len(df) else None
    if said is None:
        return None
    values = {k: said[k] for k in ("att", "rec", "distance")} | {"n": said["seeds"]}
    return Verdict(said["option"], "long_range.text.verdict.measured", values)
