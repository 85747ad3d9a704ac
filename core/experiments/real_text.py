"""Bottleneck 2 on real text: what a model keeps of something read d bytes ago. The shipped byte-level models
(core.workloads.text_lm) and the count baseline (core.training.ngram), read on text none of them trained on.

Five measures, one row each per (model, seed, x):
- `copy`: bits per byte on a span's first copy and on its repeat x bytes later, and on the control, the same window
  with only the repeat (Olsson et al. 2022, induction heads): split first / repeat / control, gain = control − repeat;
- `position`: bits per byte at position x of windows at random offsets (Kaplan et al. 2020, Fig. 7);
- `context`: bits per byte on each window's last `tail` bytes given only the x bytes before them;
- `recall_split`: bits per byte on recall bytes (core.training.text.recall_mask) and on the others;
- `train_curve`: the shipped training logs, x = bytes trained on: split train, heldout, and the copy probe's
  copy_first and copy_repeat (no control), its distance in `probe`.
The baselines' rows have model NGRAM (counting) or NGRAM_COPY (counting with a copy rule, ngram.CopyNGram) and seed 0.
The text: the standard library's held-out files, or `text_dir`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from core.config import Experiment, spec
from core.experiments.common import Rows, tagged
from core.findings.real_text import takeaways
from core.harness.device import DEVICES, environment, resolve_device
from core.store import files
from core.store.results import tidy
from core.terms import status
from core.training import ngram, text
from core.workloads import text_lm

COLUMNS = ("model", "seed", "measure", "x", "bits_per_byte", "n_bytes", "split", "seconds", "text", "window", "tail",
           "probe", "status", "note")  # fmt: skip
TEXT = ("model", "measure", "split", "text")  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ()
MEASURES = ("copy", "position", "context", "recall_split", "train_curve")
NGRAM = "ngram"  # the `model` of the count baseline's rows
NGRAM_COPY = "ngram_copy"  # the `model` of the count baseline with the copy rule
STDLIB = "stdlib held-out"  # the `text` column for the standard library's held-out files


@dataclasses.dataclass(frozen=True)
class RealTextConfig:
    models: tuple[str, ...] = tagged(text_lm.TAG, help="which shipped models to read")
    seeds: tuple[int, ...] = spec(text_lm.SEEDS, lo=0, hi=99, help="which of their training seeds")
    measures: tuple[str, ...] = spec(MEASURES, choices=MEASURES, help="what to read off them")
    windows: int = spec(128, lo=1, hi=4096, help="held-out windows read (each a window of bytes and the next one)")
    window: int = spec(text_lm.TRAIN["window"], lo=128, hi=65536, help="bytes of context per window")
    tail: int = spec(64, lo=8, hi=512, help="context measure: the window's last bytes, scored at every cut-off")
    baseline: int = spec(ngram.ORDER, lo=0, hi=7, help="the count baseline's order (bytes of context + 1); 0: none")
    copy_match: int = spec(ngram.MATCH, lo=0, hi=64, help="the copying baseline's match in bytes (0: none)")
    text_dir: str = spec("", help="a folder of UTF-8 text files to read instead (empty: the standard library's)")
    checkpoint_dir: str = spec("", help="where the checkpoints are (empty: data/checkpoints)")
    batch_size: int = spec(8, lo=1, hi=256, help="windows per forward pass")
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")

    def check(self) -> None:
        if self.tail >= self.window:
            raise ValueError(f"tail: {self.tail} must be shorter than the window ({self.window})")
        trained = shipped_window(self.folder(), self.models, self.seeds)
        if self.window > trained:
            raise ValueError(f"window: {self.window:,} bytes is longer than the checkpoints' window of {trained:,}")
        if self.text_dir:
            text.read_text_dir(self.text_dir, self.window + 1)  # ValueError naming text_dir, before any model loads

    def folder(self) -> Path | None:
        return Path(self.checkpoint_dir) if self.checkpoint_dir else None


def shipped_window(folder: Path | None, models, seeds) -> int:
    """The shortest window the named checkpoints were trained on; ValueError naming checkpoint_dir and the file for
    one that is missing or damaged (before anything is read or measured)."""
    found = []
    for name in models:
        for seed in seeds:
            try:
                found.append(text_lm.load_meta(name, seed, folder)["window"])
            except files.DamagedFile as err:
                raise ValueError(f"checkpoint_dir: {err}") from None
    return min(found)


PRESETS = {
    "quick": {"windows": 24, "seeds": (0,)},  # the page's Run: one seed, a few windows (scripts/bench_real_text.py)
    "tiny": {"windows": 2, "window": 256, "seeds": (0,), "tail": 32, "baseline": 2},  # the CLI's and scripts' tests
    # scripts/gpu_reference.sh's preset, for its limit of 15 s (sizing: docs/GPU.md)
    "gpu": {"windows": 256, "batch_size": 64},
    "full": {"windows": 256},  # the shipped reference: 256 windows of held-out text per model
}


def _texts(cfg: RealTextConfig) -> tuple[list[bytes], str]:
    if cfg.text_dir:
        return text.read_text_dir(cfg.text_dir, cfg.window + 1), Path(cfg.text_dir).name or cfg.text_dir
    return text.stdlib_split()[1], STDLIB


def position_rows(bits: torch.Tensor) -> list[dict]:
    """One row per position: x = bytes of context read (1..W), the mean over windows."""
    mean = bits.double().mean(dim=0)
    return [{"x": x + 1, "bits_per_byte": float(v), "n_bytes": bits.shape[0]} for x, v in enumerate(mean)]


def recall_rows(bits: torch.Tensor, masks: np.ndarray) -> list[dict]:
    """Mean bits on the recall bytes and on the rest, with their counts."""
    m = torch.as_tensor(masks)
    out = []
    for split, pick in (("recall", m), ("other", ~m)):
        n = int(pick.sum())
        out.append(
            {
                "split": split,
                "bits_per_byte": float(bits[pick].double().mean()) if n else math.nan,
                "n_bytes": n,
                "x": math.nan,
            }
        )
    return out


CURVE_SPLITS = {
    "train": "train_bits",
    "heldout": "heldout_bits",
    "copy_first": "copy_first",
    "copy_repeat": "copy_repeat",
}


def curve_rows(meta: dict) -> list[dict]:
    """The training log in a checkpoint's meta, one row per (point, split); the copy probe's rows with its distance."""
    rows = []
    for point in meta["curve"]:
        p = dict(zip(text_lm.CURVE_FIELDS, point))
        for split, key in CURVE_SPLITS.items():
            if p.get(key) is not None and math.isfinite(p[key]):
                rows.append(
                    {
                        "x": p["bytes"],
                        "seconds": p["seconds"],
                        "split": split,
                        "bits_per_byte": p[key],
                        "n_bytes": p["bytes"],
                        **({"probe": meta.get("copy_probe", math.nan)} if split.startswith("copy") else {}),
                    }
                )
    return rows


def copy_rows(bits_fn, windows: np.ndarray) -> list[dict]:
    """First copy, repeat and control, one row each per distance (text_lm.copy_distances); the control has no first
    copy, so it is read once and its row repeated at every distance."""
    rows = []
    n = len(windows) * (text_lm.COPY_SPAN - 1)
    control = float(text_lm.control_bits(bits_fn, windows).mean())
    for d in text_lm.copy_distances(windows.shape[1] - 1):
        first, repeat = text_lm.copy_bits(bits_fn, windows, d)
        rows += [
            {"x": d, "split": "first", "bits_per_byte": float(first.mean()), "n_bytes": n},
            {"x": d, "split": "repeat", "bits_per_byte": float(repeat.mean()), "n_bytes": n},
            {"x": d, "split": "control", "bits_per_byte": control, "n_bytes": n},
        ]
    return rows


@functools.cache
def counted(order: int) -> ngram.NGram:
    """The count baseline, counted once per process on the standard library's training files."""
    return ngram.NGram(order).fit(text.stdlib_split()[0])


def read_rows(bits_fn, windows: np.ndarray, masks, measures, xs: list[int], tail: int, meta: dict | None):
    """(measure, rows) for each measure a bits function can answer (`train_curve` needs a checkpoint's meta)."""
    bits = None
    for measure in measures:
        if measure in ("position", "recall_split") and bits is None:
            bits = torch.as_tensor(bits_fn(windows))
        if measure == "position":
            yield measure, position_rows(bits)
        elif measure == "recall_split":
            yield measure, recall_rows(bits, masks)
        elif measure == "context":
            yield (
                measure,
                [
                    {
                        "x": x,
                        "bits_per_byte": float(text_lm.tail_bits(bits_fn, windows, x, tail).mean()),
                        "n_bytes": len(windows) * tail,
                    }
                    for x in xs
                ],
            )
        elif measure == "copy":
            yield measure, copy_rows(bits_fn, windows)
        elif meta is not None:
            yield measure, curve_rows(meta)


def run(cfg: RealTextConfig, on_progress=None) -> pd.DataFrame:
    device = resolve_device(cfg.device)
    env = environment(device)
    texts, source = _texts(cfg)
    windows = text.offset_windows(texts, cfg.window, cfg.windows, seed=0)
    masks = np.stack([text.recall_mask(w) for w in windows]) if len(windows) else None
    xs = text_lm.context_lengths(cfg.window, cfg.tail)
    baselines = [(NGRAM, 0)] + ([(NGRAM_COPY, 0)] if cfg.copy_match else []) if cfg.baseline else []
    pairs = [(m, s) for m in cfg.models for s in cfg.seeds] + baselines
    out = Rows(len(pairs) * len(cfg.measures), on_progress)
    base_all = {"text": source, "window": cfg.window, "tail": cfg.tail, "status": status.OK, "note": "", **env}
    for name, seed in pairs:
        base = {"model": name, "seed": seed, **base_all}
        if name in (NGRAM, NGRAM_COPY):
            model, meta = counted(cfg.baseline), None
            bits_fn = model.bits if name == NGRAM else ngram.CopyNGram(model, cfg.copy_match).bits
        else:  # checked by the config: damaged since, it fails the run
            model, meta = text_lm.load(name, seed, cfg.folder())
            bits_fn = text_lm.model_bits(model.to(device), cfg.batch_size, device)
        for measure, rows in read_rows(bits_fn, windows, masks, cfg.measures, xs, cfg.tail, meta):
            out.add([{**base, "measure": measure, **r} for r in rows], f"{name} seed {seed}: {measure}", advance=1)
        if meta is None and "train_curve" in cfg.measures:
            out.add([], f"{name}: no training curve", advance=1)
    return tidy(out.rows, COLUMNS)


OWN_MAX_BYTES = text_lm.TRAIN["window"]  # a visitor's text: at most one training window
# What the page reads before a visitor pastes anything: a name defined, then used again far below (recall bytes)
SAMPLE_TEXT = '''def moving_average(values, width):
    """The mean of each run of `width` values in a row."""
    total = sum(values[:width])
    out = [total / width]
    for i in range(width, len(values)):
        total += values[i] - values[i - width]
        out.append(total / width)
    return out


def test_moving_average():
    assert moving_average([1, 2, 3, 4], 2) == [1.5, 2.5, 3.5]
'''


def own_text(
    data: bytes, models, seed: int = 0, folder: Path | None = None, baseline: int = ngram.ORDER
) -> pd.DataFrame:
    """A visitor's text read by the shipped models and the count baseline (`baseline` its order, 0 none): one row per
    byte (`i`, `char`) and a column of bits per model, −log₂ p(byte | the bytes before it), NaN for the first.
    ValueError naming `text` for an empty text or one over OWN_MAX_BYTES; DamagedFile for a damaged checkpoint."""
    if not data:
        raise ValueError("text: empty; paste some text to read")
    if len(data) > OWN_MAX_BYTES:
        raise ValueError(f"text: {len(data):,} bytes; at most {OWN_MAX_BYTES:,} are read")
    out = pd.DataFrame({"i": range(len(data)), "byte": list(data), "char": text.show_bytes(data)})
    x = torch.tensor([list(data)], dtype=torch.long)
    for name in models:
        model, _ = text_lm.load(name, seed, folder)
        bits = text_lm.byte_bits(model, x)[0].double().numpy() if len(data) > 1 else np.zeros(0)
        out[name] = np.concatenate([[math.nan], bits])
    if baseline:
        bits = -np.log2(counted(baseline).probs(data)) if len(data) > 1 else np.zeros(0)
        out[NGRAM] = np.concatenate([[math.nan], bits])
    return out


EXPERIMENT = Experiment(
    "real_text",
    RealTextConfig,
    run,
    PRESETS,
    "real text: byte-level LSTM, Transformer and linear attention read per position on held-out source code",
    takeaways,
    point=("model", "measure"),
)
