"""The real-text language models: which are trained, how they are built and matched in size, their checkpoints,
and the arithmetic that reads them per position (Kaplan et al. 2020, Fig. 7 and App. D.5).

Every model tagged `real_text` is trained (the fused LSTM, the Pre-LN Transformer, page 5's linear attention), each
built as its own page builds it, all one width, each with the layer count closest to PARAM_BUDGET parameters.
A checkpoint is a plain dict of half-precision tensors and a meta holding the training curve (`weights_only=True`).
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from core.models import registry
from core.models.layers import n_params
from core.models.registry import CHAPTER, Spec
from core.store import files
from core.store.results import DATA_DIR
from core.training import text

# the shipped text models; LAB_TEXT_CHECKPOINTS points a server (a browser test, your own models) at another folder
CHECKPOINT_DIR = Path(os.environ.get("LAB_TEXT_CHECKPOINTS") or DATA_DIR / "checkpoints")
TAG = "real_text"
PARAM_BUDGET = 1_000_000  # each model's layer count brings it closest to this many parameters
SEEDS = (0, 1)
LN2 = math.log(2.0)
# the shipped models' recipe: the same bytes in the same windows for every model, not the same seconds;
# AdamW with warm-up and cosine decay (nanoGPT's), one torch thread per model so two can train side by side
TRAIN = {
    "d_model": 192,
    "window": 512,
    "batch_size": 8,
    "steps": 4000,
    "lr": 2e-3,
    "warmup_steps": 100,
    "decay_to": 0.1,
    "clip": 1.0,
    "threads": 1,
}


def models() -> tuple[str, ...]:
    return registry.names(TAG)


def build(name: str, d_model: int, n_layers: int) -> torch.nn.Module:
    """The language model over bytes, each family built as its field builds a small one: the fused LSTM as it is,
    attention with a short causal convolution and rotary positions, a page-5 mixer as page 5 stacks it."""
    record = registry.get(name)
    if record.positions:
        return record.stack(text.VOCAB, Spec(d_model), n_layers, rope=True)
    if CHAPTER in record.tags:
        return record.build(text.VOCAB, d_model, n_layers)
    return record.stack(text.VOCAB, Spec(d_model), n_layers)


@functools.cache
def n_layers_for(name: str, d_model: int, budget: int = PARAM_BUDGET) -> int:
    """The layer count whose parameter count is closest to `budget` (one layer's share measured on built models)."""
    one, two = (n_params(build(name, d_model, n)) for n in (1, 2))
    per_layer, outer = two - one, 2 * one - two
    return max(1, round((budget - outer) / per_layer))


def path_for(name: str, seed: int, folder: Path | None = None) -> Path:
    return Path(folder or CHECKPOINT_DIR) / f"text_{name}_seed{seed}.pt"


def save(model: torch.nn.Module, meta: dict, path: Path) -> Path:
    """Write {'state_dict' (float16), 'meta'} atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".pt.tmp")
    state = {k: v.detach().cpu().to(torch.float16).clone() for k, v in model.state_dict().items()}
    torch.save({"state_dict": state, "meta": meta}, tmp)
    tmp.replace(path)
    return path


# What `load` needs of a checkpoint's meta, and the type each must have (bool is not taken for a number)
META_TYPES = {
    "model": str,
    "seed": int,
    "d_model": int,
    "n_layers": int,
    "window": int,
    "params": int,
    "steps": int,
    "batch_size": int,
    "bytes_trained": int,
    "train_s": float,
    "curve": list,
}
# one list per point of meta['curve']; copy_*: the copy probe (`copy_bits`) at meta['copy_probe'] bytes
CURVE_FIELDS = ("step", "bytes", "seconds", "train_bits", "heldout_bits", "copy_first", "copy_repeat")


def _curve_problem(name: str):
    def check(meta: dict) -> str | None:
        if meta["model"] != name:
            return f"meta 'model' is {meta['model']!r}, not {name!r}"
        if not all(isinstance(p, list) and len(p) == len(CURVE_FIELDS) for p in meta["curve"]):
            return f"meta 'curve' is not a list of {len(CURVE_FIELDS)}-number points"
        return None

    return check


def _read(name: str, seed: int, folder: Path | None) -> tuple[dict, dict]:
    return files.load_checkpoint(path_for(name, seed, folder), META_TYPES, _curve_problem(name))


def load_meta(name: str, seed: int, folder: Path | None = None) -> dict:
    """A checkpoint's meta (its training settings and curve), checked as `load` checks it."""
    return _read(name, seed, folder)[0]


def load(name: str, seed: int, folder: Path | None = None) -> tuple[torch.nn.Module, dict]:
    """A shipped model in float32, eval mode, on the CPU; DamagedFile (a ValueError) for a damaged or foreign file."""
    meta, state = _read(name, seed, folder)
    model = build(name, meta["d_model"], meta["n_layers"])
    try:
        model.load_state_dict({k: v.float() for k, v in state.items()})
    except RuntimeError as err:  # missing or unexpected keys, or shapes that differ
        detail = str(err).splitlines()[-1].strip()[:120]
        raise files.DamagedFile(files.FileProblem(path_for(name, seed, folder).name, "wrong_kind", detail)) from None
    return model.eval(), meta


# ---- reading a model per position -----------------------------------------------------------------------------


def as_tokens(windows: np.ndarray, device: torch.device | str = "cpu") -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(windows), dtype=torch.long, device=device)


@torch.no_grad()
def byte_bits(model: torch.nn.Module, windows: torch.Tensor, batch_size: int = 8) -> torch.Tensor:
    """(N, L − 1) bits each target byte costs: −log₂ p(b[t+1] | b[0..t]) for every window of (N, L) bytes."""
    out = []
    for chunk in windows.split(batch_size):
        logits = model(chunk[:, :-1]).float()  # (B, L−1, 256)
        nll = F.cross_entropy(logits.transpose(1, 2), chunk[:, 1:], reduction="none")  # (B, L−1) nats
        out.append(nll / LN2)
    return torch.cat(out).cpu()


COPY_SPAN = 64  # bytes of real text that the copy probe repeats


def copy_distances(window: int, span: int = COPY_SPAN) -> list[int]:
    """Repeat distances span, 2·span, 4·span, … and the longest that leaves the first occurrence `span` bytes of
    context before it (window − 2·span)."""
    longest, xs, d = window - 2 * span, [], span
    while d < longest:
        xs.append(d)
        d *= 2
    return xs + [longest] if longest >= span else xs


def copy_windows(windows: np.ndarray, distance: int | None, span: int = COPY_SPAN) -> np.ndarray:
    """The windows with one span of real text pasted twice, `distance` bytes apart, the second ending at the last input
    byte; `distance` None: only the second (the control, the same place without a first copy). Each window's span is
    the same stretch of the previous window (the last window's: the first's), so it is text read nowhere else in it."""
    end = windows.shape[1] - 1  # the second copy ends at the last input byte
    start = end - span
    if distance is not None and not span <= distance <= start:
        raise ValueError(f"distance: {distance} must be between the span ({span}) and {start}")
    spans = np.roll(windows, 1, axis=0)[:, start:end]  # (N, span): row i holds window i − 1's bytes
    out = windows.copy()
    if distance is not None:
        out[:, start - distance : end - distance] = spans
    out[:, start:end] = spans
    return out


def model_bits(model: torch.nn.Module, batch_size: int = 8, device: torch.device | str = "cpu"):
    """A bits function: (N, L) uint8 windows → (N, L − 1) bits, read by `model` (`byte_bits`)."""
    return lambda w: byte_bits(model, as_tokens(w, device), batch_size)


def copy_bits(bits_fn, windows: np.ndarray, distance: int, span: int = COPY_SPAN):
    """(first, repeat): (N,) mean bits per byte on a span's first occurrence and on its copy `distance` bytes later,
    each span's first byte left out (nothing before it says a copy begins). `bits_fn`: see `model_bits`."""
    end = windows.shape[1] - 1
    start = end - span
    bits = torch.as_tensor(bits_fn(copy_windows(windows, distance, span)))  # index j: byte j + 1
    repeat = bits[:, start : end - 1]
    first = bits[:, start - distance : end - 1 - distance]
    return first.double().mean(dim=1), repeat.double().mean(dim=1)


def control_bits(bits_fn, windows: np.ndarray, span: int = COPY_SPAN) -> torch.Tensor:
    """(N,) mean bits per byte on the repeat's bytes in the control (`copy_windows` with no first copy): the same
    bytes at the same place after the same text, never read before. Gain = control − repeat (`copy_bits`)."""
    end = windows.shape[1] - 1
    bits = torch.as_tensor(bits_fn(copy_windows(windows, None, span)))
    return bits[:, end - span : end - 1].double().mean(dim=1)


def context_lengths(window: int, tail: int) -> list[int]:
    """0, 8, 16, 32, … doubling, and the longest there is (window − tail): how much before the scored tail a
    model is given."""
    xs, x = [0], 8
    while x < window - tail:
        xs.append(x)
        x *= 2
    return xs + [window - tail]


def tail_bits(bits_fn, windows: np.ndarray, x: int, tail: int) -> torch.Tensor:
    """(N,) mean bits per byte on each window's last `tail` target bytes given only the x bytes before them (and the
    tail's own earlier bytes): the input is the window's last x + tail + 1 bytes. `bits_fn`: see `model_bits`."""
    L = windows.shape[1]  # window + 1 bytes
    if not 0 <= x <= L - 1 - tail:
        raise ValueError(f"context: {x} bytes before a tail of {tail} do not fit a window of {L - 1}")
    cut = windows[:, L - 1 - tail - x :]  # (N, x + tail + 1): the inputs and the last target
    return torch.as_tensor(bits_fn(cut))[:, -tail:].double().mean(dim=1)


def effective_context(losses: dict[int, float], within: float) -> int:
    """The smallest x from which on every loss is within `within` (a fraction) of the loss at the longest x."""
    full = losses[max(losses)]
    above = [x for x, v in losses.items() if v > full * (1 + within)]
    return min(x for x in losses if not above or x > max(above))


def position_bins(window: int) -> list[tuple[int, int]]:
    """[lo, hi) bins of context length, doubling: [1,2), [2,4), … , the last ending at window + 1."""
    bins, lo = [], 1
    while lo <= window:
        bins.append((lo, min(2 * lo, window + 1)))
        lo *= 2
    return bins
