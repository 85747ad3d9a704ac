"""Train the real-text models shipped in data/checkpoints/: `python -m core text-checkpoints`.

Each model tagged `real_text` learns next-byte prediction on the standard library's training files for the same
bytes (TRAIN's steps × batch × window), one torch thread, AdamW with warm-up and cosine decay. The curve records
bytes, training seconds and loss every CURVE_EVERY steps; held-out loss and the copy probe every `eval_every`.

A run resumes from STATE_DIR (step s's windows depend only on (seed, s)); each evaluation also writes the
half-precision checkpoint. Train one seed per process: `--seeds 0` in one, `--seeds 1` in another.
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

from core.harness.device import torch_threads
from core.models.layers import n_params
from core.training import loop as train_loop
from core.training import text
from core.workloads import text_lm

EVAL_WINDOWS = 32  # held-out windows scored along the way (the shipped reference scores many more)
CURVE_EVERY = 10  # steps between curve points
STATE_DIR = text_lm.CHECKPOINT_DIR / "training"  # resume states, git-ignored


def state_path(name: str, seed: int, folder: Path | None = None) -> Path:
    return Path(folder or STATE_DIR) / f"text_{name}_seed{seed}.state.pt"


def _save_atomic(blob: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(blob, tmp)
    tmp.replace(path)


def train_one(
    name: str,
    seed: int,
    spec: dict = text_lm.TRAIN,
    eval_every: int = 200,
    save_every: int = 50,
    log=None,
    state_dir: Path | None = None,
    out_dir: Path | None = None,
):
    """Train one model, resuming from its saved state if there is one; (model, meta). RuntimeError if it diverges."""
    train_texts, held_texts = text.stdlib_split()
    W, B, steps = spec["window"], spec["batch_size"], spec["steps"]
    sampler = text.Sampler(train_texts, W, seed)
    held = text.offset_windows(held_texts, W, EVAL_WINDOWS, seed=0)
    probe = max(text_lm.copy_distances(W))
    n_layers = text_lm.n_layers_for(name, spec["d_model"])
    torch.manual_seed(seed)
    model = text_lm.build(name, spec["d_model"], n_layers)
    opt = torch.optim.AdamW(model.parameters(), lr=spec["lr"])
    spath = state_path(name, seed, state_dir)
    curve: list[list] = []
    step, train_s = 0, 0.0
    if spath.exists():
        state = torch.load(spath, map_location="cpu", weights_only=True)
        if state["spec"] != dict(spec):
            raise ValueError(f"{spath.name}: saved with another recipe; delete it to start again")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        curve, step, train_s = state["curve"], state["step"], state["train_s"]
        if log:
            log(f"{name} seed {seed}: resumed at step {step}/{steps}")

    def evaluate() -> tuple[float, float, float]:
        model.eval()
        bits = float(text_lm.byte_bits(model, text_lm.as_tokens(held)).mean())
        first, repeat = text_lm.copy_bits(text_lm.model_bits(model), held, probe)
        model.train()
        return bits, float(first.mean()), float(repeat.mean())

    def meta() -> dict:
        return {
            "model": name,
            "seed": seed,
            "n_layers": n_layers,
            "params": n_params(model),
            "bytes_trained": max(step, 1) * B * W,
            "train_s": train_s,
            "curve": curve,
            "planned_steps": steps,
            "copy_probe": probe,
            "corpus": f"Python {platform.python_version()} standard library, {len(train_texts)} files for training, "
            f"{len(held_texts)} held out (crc32(path) % {text.HELD_OUT_EVERY} == 0)",
            "torch_version": str(torch.__version__),
            "cpu": platform.processor() or platform.machine(),
            "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **spec,
            "steps": max(step, 1),
        }

    def save_state() -> None:
        _save_atomic(
            {
                "model": model.state_dict(),
                "optimizer": opt.state_dict(),
                "curve": curve,
                "step": step,
                "train_s": train_s,
                "spec": dict(spec),
            },
            spath,
        )

    if not curve:
        curve.append([0, 0, 0.0, math.nan, *evaluate()])
    bound = train_loop.loss_bound(text.VOCAB)
    losses: list[float] = []
    model.train()
    with torch_threads(spec["threads"]):
        while step < steps:
            t0 = time.perf_counter()
            step += 1
            for group in opt.param_groups:
                group["lr"] = train_loop.lr_at(step, spec["lr"], spec["warmup_steps"], steps, spec["decay_to"])
            xy = text_lm.as_tokens(sampler.batch(B, step))
            logits = model(xy[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, text.VOCAB), xy[:, 1:].reshape(-1))
            loss_v = float(loss.detach())
            if not math.isfinite(loss_v) or loss_v > bound:
                raise RuntimeError(f"{name} seed {seed}: training diverged at step {step} (loss {loss_v:.3g})")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), spec["clip"])
            opt.step()
            train_s += time.perf_counter() - t0
            losses.append(loss_v)
            if step % CURVE_EVERY == 0 or step == steps:
                point = [step, step * B * W, round(train_s, 3), sum(losses) / len(losses) / text_lm.LN2]
                losses.clear()
                evals = evaluate() if step % eval_every == 0 or step == steps else (math.nan,) * 3
                curve.append(point + list(evals))
                if not math.isnan(evals[0]):
                    text_lm.save(model, meta(), text_lm.path_for(name, seed, out_dir))
                    if log:
                        log(
                            f"{name} seed {seed}: step {step}/{steps}, {train_s:.0f} s, train {point[3]:.3f}, "
                            f"held-out {evals[0]:.3f}, copy at {probe} bytes {evals[1]:.3f} → {evals[2]:.3f} "
                            "bits per byte"
                        )
            if step % save_every == 0 or step == steps:
                save_state()
    return model.eval(), meta()


def cli(args) -> int:
    """`python -m core text-checkpoints [--models M …] [--seeds S …] [--steps N] [--out-dir DIR] [--state-dir DIR]`."""
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
    state_dir = Path(args.state_dir) if getattr(args, "state_dir", None) else None

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    for seed in seeds:
        for name in names:
            t0 = time.perf_counter()
            model, meta = train_one(name, seed, spec, log=log, state_dir=state_dir, out_dir=folder)
            path = text_lm.save(model, meta, text_lm.path_for(name, seed, folder))
            log(
                f"{name} seed {seed}: {meta['params']:,} parameters, {meta['n_layers']} layers, "
                f"{time.perf_counter() - t0:.0f} s; {path.stat().st_size / 1024:.0f} KiB → {path}"
            )
    return 0
