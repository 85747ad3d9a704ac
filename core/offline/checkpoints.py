"""Small trained models shipped with the lab, so the "she looks at Alice" map shows without training.

`python -m core checkpoints` trains a Transformer and a parameter-matched LSTM on recall (a new distance per batch)
and writes data/checkpoints/{transformer,lstm}_recall.pt, plain dicts read with `weights_only=True`; `load` reads
one back. The map a page draws from the pair is core.experiments.recall_map's.
"""

from __future__ import annotations

import datetime as _dt
import random
import sys
import time
from pathlib import Path

import torch

from core.experiments.long_range import LongRangeConfig, build_model
from core.harness.device import torch_threads
from core.models.layers import n_params
from core.store import files
from core.store.results import DATA_DIR
from core.terms import status
from core.training import loop as train_loop
from core.training import tasks
from core.training.chunks import accuracy, query_loss

CHECKPOINT_DIR = DATA_DIR / "checkpoints"
MODELS = ("transformer", "lstm")
# what the shipped pair was trained with: small enough for one CPU thread
SPEC = {
    "seq_len": 24,
    "n_keys": 8,
    "d_model": 32,
    "n_layers": 2,
    "steps": 1500,
    "batch_size": 64,
    "lr": 3e-3,
    "forget_bias": 1.0,
    "seed": 0,
}


def path_for(name: str, folder: Path | None = None) -> Path:
    return Path(folder or CHECKPOINT_DIR) / f"{name}_recall.pt"


def _config(spec: dict) -> LongRangeConfig:
    shared = ("seq_len", "n_keys", "d_model", "n_layers", "lr", "forget_bias", "seed")  # the fields SPEC sets too
    return LongRangeConfig(**{k: spec[k] for k in shared}, distances=(1,), device="cpu")


def accuracy_by_distance(model: torch.nn.Module, spec: dict, n: int = 256) -> list[float]:
    """Held-out recall accuracy at every distance 1..seq_len−1 (index 0 is distance 1)."""
    g = torch.Generator().manual_seed(spec["seed"] + 1)
    return [
        accuracy(model, *tasks.recall_batch(n, spec["seq_len"], d, spec["n_keys"], g))
        for d in range(1, spec["seq_len"])
    ]


def train(name: str, spec: dict = SPEC, log=None) -> tuple[torch.nn.Module, dict]:
    """Train one model on recall with a random distance per batch; return it and its metadata."""
    cfg = _config(spec)
    V = tasks.recall_vocab(spec["n_keys"])
    model = build_model(name, cfg, V)
    g = torch.Generator().manual_seed(spec["seed"])
    pick = random.Random(spec["seed"])

    def batch():
        distance = pick.randint(1, spec["seq_len"] - 1)
        return tasks.recall_batch(spec["batch_size"], spec["seq_len"], distance, spec["n_keys"], g)

    def on_step(s: train_loop.Step):
        if log is not None and s.step % 250 == 0:
            log(f"{name}: step {s.step}/{spec['steps']} loss {s.loss:.3f}")

    t0 = time.perf_counter()
    plan = train_loop.TrainSpec(
        spec["steps"],
        spec["lr"],
        optimizer="adamw",
        clip=1.0,
        max_loss=train_loop.loss_bound(V),
        chunk_steps=spec["steps"],
    )
    out = train_loop.train(model, batch, query_loss, plan, on_step)
    if out.status != status.OK:
        raise RuntimeError(f"{name}: training diverged ({out.note}); nothing was written")
    meta = {
        "model": name,
        "task": "recall",
        "vocab_size": V,
        "params": n_params(model),
        "train_s": time.perf_counter() - t0,
        "accuracy_by_distance": accuracy_by_distance(model, spec),
        "torch_version": str(torch.__version__),
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **spec,
    }
    meta["width"] = model.embed.embedding_dim
    return model, meta


def save(model: torch.nn.Module, meta: dict, path: Path) -> Path:
    """Write {'state_dict', 'meta'} atomically; meta holds only numbers, strings and lists (weights_only-safe)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".pt.tmp")
    torch.save({"state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}, "meta": meta}, tmp)
    tmp.replace(path)
    return path


# What `load` needs of a checkpoint's meta, and the type each must have (bool is not taken for a number)
META_TYPES = {
    "seq_len": int,
    "n_keys": int,
    "d_model": int,
    "n_layers": int,
    "vocab_size": int,
    "params": int,
    "steps": int,
    "seed": int,
    "lr": float,
    "forget_bias": float,
    "accuracy_by_distance": list,
}


def _accuracies_problem(meta: dict) -> str | None:
    acc = meta["accuracy_by_distance"]
    if not acc or not all(isinstance(a, (int, float)) and 0 <= a <= 1 for a in acc):
        return "meta 'accuracy_by_distance' is not a list of accuracies"
    return None


def load(name: str, folder: Path | None = None) -> tuple[torch.nn.Module, dict]:
    """A shipped model, in eval mode, on the CPU; the Transformer uses explicit attention so its maps can be read.
    Raises core.store.files.DamagedFile (a ValueError) for a missing, damaged or mismatched file."""
    path = path_for(name, folder)
    meta, state = files.load_checkpoint(path, META_TYPES, _accuracies_problem)
    model = build_model(name, _config(meta), meta["vocab_size"], impl="naive")
    try:
        model.load_state_dict(state)
    except RuntimeError as err:  # missing or unexpected keys, or shapes that differ
        detail = str(err).splitlines()[-1].strip()[:120]
        raise files.DamagedFile(files.FileProblem(path.name, "wrong_kind", detail)) from None
    return model.eval(), meta


def available(folder: Path | None = None) -> bool:
    return all(path_for(m, folder).exists() for m in MODELS)


def write_all(folder: Path | None = None, spec: dict = SPEC, log=print) -> list[Path]:
    """Train and save both models (one torch thread: tiny models train fastest so)."""
    paths = []
    with torch_threads(1):
        for name in MODELS:
            model, meta = train(name, spec, log)
            path = save(model, meta, path_for(name, folder))
            acc = meta["accuracy_by_distance"]
            log(
                f"{name}: {meta['params']:,} parameters, {meta['train_s']:.0f} s; held-out accuracy at distance "
                f"1 / {len(acc) // 2} / {len(acc)}: {acc[0]:.0%} / {acc[len(acc) // 2 - 1]:.0%} / {acc[-1]:.0%}; "
                f"{path.stat().st_size / 1024:.0f} KiB → {path}"
            )
            paths.append(path)
    return paths


def cli(args) -> int:
    """`python -m core checkpoints [--out-dir DIR] [--steps N]`."""
    spec = dict(SPEC)
    if args.steps is not None:
        if not str(args.steps).isdigit() or int(args.steps) < 1:
            raise ValueError(f"--steps: {args.steps!r} must be a positive integer")
        spec["steps"] = int(args.steps)
    write_all(Path(args.out_dir) if args.out_dir else None, spec, log=lambda m: print(m, file=sys.stderr))
    return 0
