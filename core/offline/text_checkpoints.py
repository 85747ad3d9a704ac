"""Train the real-text models shipped in data/checkpoints/: `python -m core text-checkpoints`.

Each model tagged `real_text` (core.experiments.text_lm) learns to predict the next byte of the standard library's
training files, for the same number of bytes (TRAIN's steps × batch × window), on one torch thread, with AdamW, a
linear warm-up and a cosine decay (a Transformer trained here with no warm-up learned nothing in 7 minutes).
Every 10 steps the curve records the bytes read, the seconds spent training and the mean training loss; every
`eval_every` steps, and before the first, the loss on EVAL_WINDOWS held-out windows too (not counted in the
seconds). Two processes of one thread each, one per seed, are the fair way to train on 2 cores: `--seeds 0` in one,
`--seeds 1` in the other.
"""

from __future__ import annotations

import datetime as _dt
import math
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from core.experiments import text_lm
from core.harness.device import torch_threads
from core.models.layers import n_params
from core.terms import status
from core.training import loop as train_loop
from core.training import text

EVAL_WINDOWS = 32  # held-out windows scored along the way (the shipped reference scores many more)
CURVE_EVERY = 10  # steps between curve points


def _bits_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def train_one(name: str, seed: int, spec: dict = text_lm.TRAIN, eval_every: int = 100, log=None):
    """Train one model from scratch; (model, meta) with its curve. RuntimeError if it diverges."""
    train_texts, held_texts = text.stdlib_split()
    W, B = spec["window"], spec["batch_size"]
    sampler = text.Sampler(train_texts, W, seed)
    held = text_lm.as_tokens(text.eval_windows(held_texts, W, EVAL_WINDOWS))
    n_layers = text_lm.n_layers_for(name, spec["d_model"])
    torch.manual_seed(seed)
    model = text_lm.build(name, spec["d_model"], n_layers)

    def heldout() -> float:
        model.eval()
        bits = float(text_lm.byte_bits(model, held).mean())
        model.train()
        return bits

    curve = [[0, 0, 0.0, math.nan, heldout()]]
    losses: list[float] = []

    def batch():
        xy = text_lm.as_tokens(sampler.batch(B))
        return xy[:, :-1], xy[:, 1:]

    def on_chunk(steps_done: int, train_s: float):
        step = curve[-1][0] + steps_done
        point = [step, step * B * W, round(train_s, 3), sum(losses) / len(losses) / text_lm.LN2, math.nan]
        losses.clear()
        if step % eval_every == 0 or step == spec["steps"]:
            point[4] = heldout()
            if log is not None:
                log(f"{name} seed {seed}: step {step}/{spec['steps']}, {train_s:.0f} s, train {point[3]:.3f}, "
                    f"held-out {point[4]:.3f} bits per byte")  # fmt: skip
        curve.append(point)

    plan = train_loop.TrainSpec(
        spec["steps"], spec["lr"], optimizer="adamw", warmup_steps=spec["warmup_steps"], decay_to=spec["decay_to"],
        clip=spec["clip"], max_loss=train_loop.loss_bound(text.VOCAB), chunk_steps=CURVE_EVERY,
    )  # fmt: skip
    with torch_threads(spec["threads"]):
        out = train_loop.train(model, batch, _bits_loss, plan, lambda s: losses.append(s.loss), on_chunk)
    if out.status != status.OK:
        raise RuntimeError(f"{name} seed {seed}: training diverged ({out.note}); nothing was written")
    meta = {
        "model": name,
        "seed": seed,
        "n_layers": n_layers,
        "params": n_params(model),
        "bytes_trained": spec["steps"] * B * W,
        "train_s": out.train_s,
        "curve": curve,
        "corpus": f"Python {platform.python_version()} standard library, {len(train_texts)} files for training, "
        f"{len(held_texts)} held out (crc32(path) % {text.HELD_OUT_EVERY} == 0)",
        "torch_version": str(torch.__version__),
        "cpu": platform.processor() or platform.machine(),
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **spec,
    }
    return model.eval(), meta


def cli(args) -> int:
    """`python -m core text-checkpoints [--models M …] [--seeds S …] [--steps N] [--out-dir DIR]`."""
    spec = dict(text_lm.TRAIN)
    if args.steps is not None:
        if not str(args.steps).isdigit() or int(args.steps) < 1:
            raise ValueError(f"--steps: {args.steps!r} must be a positive integer")
        spec["steps"] = int(args.steps)
        spec["warmup_steps"] = min(spec["warmup_steps"], max(1, spec["steps"] // 10))
    names = args.models or list(text_lm.models())
    for n in names:
        if n not in text_lm.models():
            raise ValueError(f"--models: {n!r} is not one of {', '.join(text_lm.models())}")
    seeds = []
    for s in args.seeds or [str(s) for s in text_lm.SEEDS]:
        if not str(s).isdigit():
            raise ValueError(f"--seeds: {s!r} must be a non-negative integer")
        seeds.append(int(s))
    folder = Path(args.out_dir) if args.out_dir else None

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    for seed in seeds:
        for name in names:
            t0 = time.perf_counter()
            model, meta = train_one(name, seed, spec, log=log)
            path = text_lm.save(model, meta, text_lm.path_for(name, seed, folder))
            log(f"{name} seed {seed}: {meta['params']:,} parameters, {meta['n_layers']} layers, "
                f"{time.perf_counter() - t0:.0f} s; {path.stat().st_size / 1024:.0f} KiB → {path}")  # fmt: skip
    return 0
