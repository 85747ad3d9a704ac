"""Bottleneck 2 on real text: does a model use its far context? The shipped byte-level models (core.experiments.
text_lm), read on text none of them trained on, per position (Kaplan et al. 2020, Fig. 7; Khandelwal et al. 2018).

Four measures, one row each per (model, seed, x):
- `position`: bits per byte at each position x of the window (x bytes of context read), averaged over windows;
- `context`: bits per byte on each window's last `tail` bytes when the model reads only the x bytes before them
  (x = 0, 8, 16, … up to the whole window), from which a model's effective context is read (findings.real_text);
- `recall_split`: bits per byte on the window's recall bytes (core.training.text.recall_mask: a copy of a span more
  than FAR bytes back predicts them, nothing nearer does) and on all the others, x empty;
- `train_curve`: the shipped training curves, x = bytes trained on, with the seconds it took (`seconds`) and the
  split the loss was read on (`split`: train or heldout).

The text: the standard library's held-out files (a fixed rule of their paths), or every UTF-8 file of `text_dir`.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from core.config import Experiment, spec
from core.experiments import text_lm
from core.experiments.common import Rows, tagged
from core.findings.real_text import takeaways
from core.harness.device import DEVICES, environment, resolve_device
from core.store import files
from core.store.results import tidy
from core.terms import status
from core.training import text

COLUMNS = ("model", "seed", "measure", "x", "bits_per_byte", "n_bytes", "split", "seconds", "text", "window", "tail",
           "status", "note")  # fmt: skip
MEASURES = ("position", "context", "recall_split", "train_curve")
STDLIB = "stdlib held-out"  # the `text` column for the standard library's held-out files


@dataclasses.dataclass(frozen=True)
class RealTextConfig:
    models: tuple[str, ...] = tagged(text_lm.TAG, help="which shipped models to read")
    seeds: tuple[int, ...] = spec(text_lm.SEEDS, lo=0, hi=99, help="which of their training seeds")
    measures: tuple[str, ...] = spec(MEASURES, choices=MEASURES, help="what to read off them")
    windows: int = spec(128, lo=1, hi=4096, help="held-out windows read (each a window of bytes and the next one)")
    window: int = spec(text_lm.TRAIN["window"], lo=128, hi=65536, help="bytes of context per window")
    tail: int = spec(64, lo=8, hi=512, help="context measure: the window's last bytes, scored at every cut-off")
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
    # 48 windows of 1,024 bytes, six models: ~15 s on 2 cores, the process included (scripts/bench_real_text.py)
    "quick": {"windows": 48},
    "tiny": {"windows": 2, "window": 256, "seeds": (0,), "tail": 32},  # the command line's and the scripts' tests
    # scripts/gpu_reference.sh's preset, for its limit of 15 s on a GPU such as an H200: the full preset's reading
    # (6 models × 256 windows × 10 forward passes of 1,024 bytes, 2 s of work for an H100 at a few % of its peak) in
    # batches of 64; the process start and reading the standard library (~5 s) are most of it
    "gpu": {"windows": 256, "batch_size": 64},
    "full": {"windows": 256},  # the shipped reference: 256 windows, 262,144 bytes of held-out text per model
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
        out.append({"split": split, "bits_per_byte": float(bits[pick].double().mean()) if n else math.nan,
                    "n_bytes": n, "x": math.nan})  # fmt: skip
    return out


def curve_rows(meta: dict) -> list[dict]:
    rows = []
    for point in meta["curve"]:
        p = dict(zip(text_lm.CURVE_FIELDS, point))
        for split, key in (("train", "train_bits"), ("heldout", "heldout_bits")):
            if p[key] is not None and math.isfinite(p[key]):
                rows.append({"x": p["bytes"], "seconds": p["seconds"], "split": split, "bits_per_byte": p[key],
                             "n_bytes": p["bytes"]})  # fmt: skip
    return rows


def run(cfg: RealTextConfig, on_progress=None) -> pd.DataFrame:
    device = resolve_device(cfg.device)
    env = environment(device)
    texts, source = _texts(cfg)
    windows = text_lm.as_tokens(text.eval_windows(texts, cfg.window, cfg.windows))
    masks = np.stack([text.recall_mask(w) for w in windows.numpy().astype(np.uint8)]) if len(windows) else None
    xs = text_lm.context_lengths(cfg.window, cfg.tail)
    pairs = [(m, s) for m in cfg.models for s in cfg.seeds]
    out = Rows(len(pairs) * len(cfg.measures), on_progress)
    base_all = {"text": source, "window": cfg.window, "tail": cfg.tail, "status": status.OK, "note": "", **env}
    for name, seed in pairs:
        base = {"model": name, "seed": seed, **base_all}
        model, meta = text_lm.load(name, seed, cfg.folder())  # checked by the config: damaged since, it fails the run
        model = model.to(device)
        bits = None
        for measure in cfg.measures:
            if measure in ("position", "recall_split") and bits is None:
                bits = text_lm.byte_bits(model, windows.to(device), cfg.batch_size)
            if measure == "position":
                rows = position_rows(bits)
            elif measure == "recall_split":
                rows = recall_rows(bits, masks)
            elif measure == "context":
                w = windows.to(device)
                rows = [{"x": x, "bits_per_byte": float(text_lm.tail_bits(model, w, x, cfg.tail, cfg.batch_size)
                                                          .double().mean()), "n_bytes": len(windows) * cfg.tail}
                        for x in xs]  # fmt: skip
            else:
                rows = curve_rows(meta)
            out.add([{**base, "measure": measure, **r} for r in rows], f"{name} seed {seed}: {measure}", advance=1)
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


def own_text(data: bytes, models, seed: int = 0, folder: Path | None = None) -> pd.DataFrame:
    """A visitor's text read by the shipped models: one row per byte (`i`, `char` as text.show_bytes draws it) and a
    column of bits per model (−log₂ p of that byte given every byte before it; the first byte, with nothing before
    it, is not scored). ValueError naming `text` for an empty text or one over OWN_MAX_BYTES; DamagedFile for a
    damaged checkpoint."""
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
    return out


EXPERIMENT = Experiment(
    "real_text",
    RealTextConfig,
    run,
    PRESETS,
    "real text: byte-level LSTM, Transformer and linear attention read per position on held-out source code",
    takeaways,
)
