"""Page 5, training speed: recurrence made parallel, timed on the serial page's axes.

Each mixer in each form (sequential loop, parallel scan, chunked, a library kernel) trains one step of a one-layer
language model beside the serial experiment's fused LSTM/GRU and SDPA block, all forms of a length timed
interleaved so the scan-vs-loop ratio is paired. Per point: step time, tokens/s, dependent steps, bytes saved for
backward, and the float32 output's deviation from the float64 reference form. Where forms share all but the
recurrence, the recurrence alone is timed too. Feng et al. 2024 measured their scans 175× (minGRU) and 235×
(minLSTM) faster than the sequential versions at n = 512 on a T4 GPU.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable

import pandas as pd
import torch

from core.config import Experiment, spec
from core.experiments.common import TINY_STEP, MixerSizes, Rows, copied, fitting, ok_fields, paired, tagged, time_points
from core.findings.answers import speed_takeaways
from core.harness import bench, guard
from core.harness.device import DEVICES, environment, resolve_device
from core.models import registry
from core.models.registry import ANSWERS, ATTENTION, CHAPTER, FORMS, LOOP, RECURRENT, Spec
from core.store.results import tidy
from core.terms import status
from core.training.step import training_step

COLUMNS = ("mixer", "form", "family", "seq_len", "batch_size", "d_model", "params", "train_ms", "train_iqr_ms",
           "noisy", "tokens_per_s", "seq_steps", "saved_bytes", "predicted_bytes", "speedup_vs_loop", "speedup_q25",
           "speedup_q75", "rec_ms", "rec_iqr_ms", "rec_speedup_vs_loop", "rec_speedup_q25", "rec_speedup_q75", "vs_lstm", "vs_transformer", "vs_traditional", "max_error", "window", "chunk", "kernel", "levels", "d_state",
           "status", "note", "seed")  # fmt: skip
TEXT = ("mixer", "form", "family")  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ("noisy",)


@dataclasses.dataclass(frozen=True)
class AnswersSpeedConfig(MixerSizes):
    mixers: tuple[str, ...] = tagged(
        ANSWERS, help="which mixers to time (the chapter's LSTM, GRU and Transformer included)"
    )
    forms: tuple[str, ...] = spec(FORMS, choices=FORMS, help="loop: n steps; scan; chunked; fused: a library kernel")
    seq_lens: tuple[int, ...] = spec((256, 1024, 4096), lo=2, hi=16384, help="sequence lengths to sweep")
    d_model: int = spec(128, lo=8, hi=1024, help="width of every mixer")
    batch_size: int = spec(8, lo=1, hi=256, help="sequences per training step")
    chunk: int = spec(64, lo=1, hi=4096, help="a recurrence's chunked form: tokens per chunk")
    vocab_size: int = spec(64, lo=2, hi=65536, help="small, so the output layer does not dominate")
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")
    seed: int = spec(0, lo=0, hi=2**31 - 1)
    warmup: int = spec(1, lo=0, hi=50, help="untimed steps first")
    repeats: int = spec(5, lo=1, hi=200, help="timed steps; the median and IQR are reported")
    max_point_s: float = spec(3.0, lo=0.05, hi=600.0, help="stop repeating a length after this much timed work")
    max_step_s: float = spec(20.0, lo=0.1, hi=3600.0, help="skip a point whose step would take longer (extrapolated)")
    rec_mixers: tuple[str, ...] = tagged(
        ANSWERS, min_len=0, help="whose recurrence is also timed alone (Amdahl: the part a scan replaces)"
    )
    long_lens: tuple[int, ...] = spec((), lo=2, hi=16384, min_len=0, help="more lengths, timed for long_mixers alone")
    long_mixers: tuple[str, ...] = tagged(
        ANSWERS, "answers_speed.recurrence:quick", min_len=0, help="the mixers timed at long_lens, in every form"
    )

    def check(self):
        for m in self.mixers:
            if not set(registry.get(m).forms) & set(self.forms):
                raise ValueError(
                    f"forms: {m} has none of {', '.join(self.forms)} (it has {', '.join(registry.get(m).forms)})"
                )
        self.check_sizes()

    @property
    def mixer_spec(self) -> Spec:
        return Spec(self.d_model, self.window, self.kernel, self.levels, self.chunk, self.d_state)


REC_QUICK = registry.tagged("answers_speed.recurrence:quick")  # the models whose recurrence quick times alone
PRESETS = {
    # a tighter limit would turn a busy moment at n = 256 into skipped points at n = 1024
    # the recurrence alone of minGRU only (the verdict's mixer): all five loops' would double the run
    # and the verdict's mixer on to the question's length
    "quick": {
        "seq_lens": (256, 512),
        "warmup": 1,
        "repeats": 3,
        "max_point_s": 1.0,
        "rec_mixers": REC_QUICK,
        "long_lens": (1024, 4096),
        "long_mixers": REC_QUICK,
    },
    "tiny": {**TINY_STEP, "window": 4, "chunk": 4, "levels": 3, "long_lens": ()},
    # scripts/gpu_reference.sh's preset, for its limit of 50 s (sizing: docs/GPU.md)
    "gpu": {"seq_lens": (128, 512, 1024), "warmup": 1, "repeats": 3, "max_point_s": 2.0, "max_step_s": 2.0},
    "full": {"seq_lens": (128, 256, 512, 1024, 2048, 4096, 8192), "warmup": 1, "repeats": 5, "max_point_s": 8.0},
}


def points(cfg: AnswersSpeedConfig, T: int | None = None) -> list[tuple[str, str]]:
    """(mixer, form) pairs the run measures (at length T: at a length of long_lens alone, long_mixers' only), in
    the config's order."""
    only = cfg.long_mixers if T is not None and T in cfg.long_lens and T not in cfg.seq_lens else None
    return [(m, f) for m in cfg.mixers for f in registry.get(m).forms if f in cfg.forms and (only is None or m in only)]


def predicted_bytes(m: str, form: str, cfg: AnswersSpeedConfig, T: int) -> float:
    """A generous estimate of a point's peak memory, for the guard (as the serial experiment's)."""
    B, d, V = cfg.batch_size, cfg.d_model, cfg.vocab_size
    activations = B * T * (registry.get(m).saved_floats(form, cfg.mixer_spec) + 4 * V + 2 * d) * 4
    return 2.0 * activations + 4 * (16 * d * d + 2 * V * d) * 4


def _prepare(m: str, form: str, cfg: AnswersSpeedConfig, T: int, device: torch.device):
    """(model, one training step, the loss alone, its inputs); seeded, so every form starts from the same weights."""
    torch.manual_seed(cfg.seed)
    model = registry.get(m).build(cfg.vocab_size, cfg.mixer_spec, 1, form).to(device)
    return (model, *training_step(model, cfg.vocab_size, cfg.batch_size, T, cfg.seed, device))  # serial's step


def _finite(model, loss_fn) -> bool:
    """One forward and backward: are the loss and every gradient finite in float32?"""
    model.zero_grad(set_to_none=True)
    loss = loss_fn()
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    ok = bool(torch.isfinite(loss)) and all(bool(torch.isfinite(g).all()) for g in grads)
    model.zero_grad(set_to_none=True)
    return ok


def max_error(m: str, form: str, cfg: AnswersSpeedConfig, T: int) -> float:
    """Largest |float32 form − float64 reference form| over one sequence, relative to the reference's largest value;
    NaN where there is no other form or the reference would cost too much. On the CPU, any device."""
    mixer = registry.get(m)
    ref_form = mixer.reference_form
    if ref_form is None or form == ref_form or T > mixer.reference_max_len:
        return math.nan
    torch.manual_seed(cfg.seed)
    layer = mixer.layer(cfg.mixer_spec, form)
    ref = copy.deepcopy(layer).double()
    ref.form = ref_form
    x = torch.randn(1, T, cfg.d_model, generator=torch.Generator().manual_seed(cfg.seed), dtype=torch.float64)
    with torch.no_grad():
        want, got = ref(x), layer(x.float()).double()
    scale = float(want.abs().max())
    err = float((got - want).abs().max())
    return err / scale if scale > 0 else err


def measure_length(cfg, T: int, pairs: list, device, after_round=None) -> dict:
    """Every (mixer, form) in `pairs` at one length, timed interleaved; then saved bytes one by one."""

    def prepare(key):  # None where the loss or a gradient is not finite in float32
        p = _prepare(*key, cfg, T, device)
        return p if _finite(p[0], p[2]) else None

    prepared, fields = guard.prepare_each(pairs, prepare, device)
    for key in [key for key, p in prepared.items() if p is None]:
        fields[key] = {"status": status.DIVERGED, "note": "non-finite loss or gradient in float32"}
        del prepared[key]
    steps = {key: p[1] for key, p in prepared.items()}
    # the finiteness check above was one forward and backward of each: it counts as the first warm-up step
    timings, failed = time_points(steps, cfg, device, after_round, warmup=max(0, cfg.warmup - 1))
    fields.update(failed)
    for key, timing in timings.items():
        model, _, loss_fn, inputs = prepared[key]
        speed = cfg.batch_size * T / (timing.median_ms / 1e3)
        saved = bench.saved_activation_bytes(loss_fn, exclude=(*model.parameters(), *inputs))
        fields[key] = ok_fields(model, timing, tokens_per_s=speed, saved_bytes=saved, max_error=max_error(*key, cfg, T))
    _time_recurrences(cfg, T, {key: prepared[key][0] for key in timings}, device, fields, after_round)
    prepared.clear()
    guard.free(device)
    _paired(fields)
    return fields


def recurrence_step(layer, form: str, shape: tuple[int, int, int], seed: int, device) -> Callable[[], object] | None:
    """One forward and backward of `layer`'s recurrence alone in `form`, over gates computed once from a random
    input and then held fixed; None where the layer has no recurrence to separate."""
    make = getattr(layer, "recurrence_inputs", None)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(device)  # (batch, n, width)
    with torch.no_grad():
        inputs = make(x) if make is not None else None
    if inputs is None:
        return None
    inputs = tuple(t.detach().clone().requires_grad_(True) for t in inputs)
    fn = layer.recurrence(form)
    with torch.no_grad():
        out_shape = fn(*inputs).shape
    grad = torch.randn(out_shape, generator=torch.Generator().manual_seed(seed + 1)).to(device)
    return lambda: torch.autograd.grad(fn(*inputs), inputs, grad)


def _time_recurrences(cfg, T: int, models: dict, device, fields: dict, after_round=None) -> None:
    """The recurrence alone of every timed form that has one, timed interleaved as the whole steps were (same
    warm-up, repeats and limit): rec_ms, rec_iqr_ms, and the repeats for the paired ratio."""
    steps = {}
    for key, model in models.items():
        if key[0] not in cfg.rec_mixers:
            continue
        step = recurrence_step(model.layers[0], key[1], (cfg.batch_size, T, cfg.d_model), cfg.seed, device)
        if step is not None:
            steps[key] = step
    timings, failed = time_points(steps, cfg, device, after_round)
    for key, timing in timings.items():
        fields[key].update(rec_ms=timing.median_ms, rec_iqr_ms=timing.iqr_ms, rec_times_ms=timing.times_ms)
    for key, fail in failed.items():  # the whole step stands; its recurrence is NaN
        fields[key]["note"] = f"recurrence alone: {fail['note']}"
    steps.clear()
    guard.free(device)


def _baseline(family: str, keys) -> tuple | None:
    """The (mixer, form) of the chapter's model of `family` (the LSTM, the Transformer) among `keys`, by record."""
    chapter = {m: (m, f) for m, f in keys if CHAPTER in registry.get(m).tags}
    chosen = registry.representative(family, chapter)
    return chapter.get(chosen) if chosen is not None and registry.get(chosen).representative else None


def _paired(fields: dict) -> None:
    """Per measured form: its loop's time ÷ its time (paired quartiles), and the LSTM's, the Transformer's and the
    traditional GRU's or LSTM's (for minGRU, minLSTM) time ÷ its time; above 1, this form is faster."""
    for (m, form), f in fields.items():  # the recurrence alone: its loop's time ÷ its own, repeat by repeat
        loop = fields.get((m, LOOP), {}).get("rec_times_ms")
        if form != LOOP and loop and f.get("rec_times_ms"):
            f["rec_speedup_q25"], f["rec_speedup_vs_loop"], f["rec_speedup_q75"] = paired(loop, f["rec_times_ms"])
    timed = {k: f["times_ms"] for k, f in fields.items() if "times_ms" in f}
    lstm, transformer = _baseline(RECURRENT, timed), _baseline(ATTENTION, timed)
    for (m, form), times in timed.items():
        f = fields[(m, form)]
        if (m, LOOP) in timed and form != LOOP:
            f["speedup_q25"], f["speedup_vs_loop"], f["speedup_q75"] = paired(timed[(m, LOOP)], times)
        for col, base in (("vs_lstm", lstm), ("vs_transformer", transformer)):
            if base is not None:
                f[col] = paired(timed[base], times)[1]
        twin = registry.get(m).traditional  # the model it simplifies, timed in the same rounds (Feng et al.'s ratio)
        fused = [k for k in timed if k[0] == twin]
        if twin is not None and fused and form != LOOP:
            f["vs_traditional"] = paired(timed[fused[0]], times)[1]
    for f in fields.values():
        f.pop("times_ms", None)
        f.pop("rec_times_ms", None)


def _too_slow(history: list, T: int, limit: float) -> str | None:
    """A note if the step at length T, extrapolated from the longest two measured (as n^1 to n^2), exceeds
    `limit` seconds; None if it may run."""
    if not history:
        return None
    (n0, ms0), (n1, ms1) = (history[-2] if len(history) > 1 else history[-1]), history[-1]
    # between 1 and 2: no form here grows faster than attention's n², and a busy moment at the shorter length must
    # not extrapolate to n^3 and skip every longer point
    slope = min(2.0, max(1.0, math.log(ms1 / ms0) / math.log(n1 / n0))) if n1 > n0 and ms0 > 0 else 1.0
    seconds = ms1 / 1e3 * (T / n1) ** slope
    return f"would take about {seconds:,.0f} s per step (n^{slope:.1f} from n = {n1})" if seconds > limit else None


def run(cfg: AnswersSpeedConfig, on_progress=None) -> pd.DataFrame:
    """One row per (length, mixer, form), shortest lengths first; failures and refusals are rows with a status."""
    device = resolve_device(cfg.device)
    env = environment(device)
    lengths = sorted({*cfg.seq_lens, *cfg.long_lens})
    out, history = Rows(sum(len(points(cfg, T)) for T in lengths), on_progress), {key: [] for key in points(cfg)}
    same = copied(cfg, "batch_size", "d_model", "window", "chunk", "kernel", "levels", "d_state", "seed")
    for T in lengths:
        pairs = points(cfg, T)
        fitted, fields = fitting(pairs, lambda key, T=T: predicted_bytes(*key, cfg, T), device)
        runnable = []
        for key in fitted:
            slow = _too_slow(history[key], T, cfg.max_step_s)
            if slow:
                fields[key] = {"status": status.SKIPPED_TIME, "note": slow}
            else:
                runnable.append(key)
        after_round = lambda r, T=T: out.say(f"n={T}: repeat {r} of {cfg.repeats}")
        fields.update(measure_length(cfg, T, runnable, device, after_round))
        for m, form in pairs:
            f = fields[(m, form)]
            if f["status"] == status.OK:
                history[(m, form)].append((T, f["train_ms"]))
            mixer = registry.get(m)
            row = {
                **dict.fromkeys(COLUMNS, math.nan),
                "mixer": m,
                "form": form,
                "family": mixer.family,
                "seq_len": T,
                "seq_steps": mixer.steps(T, form, cfg.mixer_spec),
                "predicted_bytes": predicted_bytes(m, form, cfg, T),
                **same,
                "note": "",
                **f,
                **env,
            }
            out.add(row, f"{m} ({form}) n={T}")
    return tidy(out.rows, COLUMNS)


EXPERIMENT = Experiment(
    "answers_speed",
    AnswersSpeedConfig,
    run,
    PRESETS,
    "training-step time vs n of every page-5 mixer in each of its forms (loop, scan, chunked, a library kernel), "
    "beside nn.LSTM, nn.GRU and the SDPA Transformer",
    speed_takeaways,
    point=("mixer", "form", "seq_len"),
)
