"""Bottleneck 3, depth and stability: why stacks of LSTM layers stay shallow while Transformers go 32+ layers deep.

Two measurements on one small next-token task (a noisy permutation chain, see `make_batch`):
- at initialisation, the gradient norm of every layer's weights for one batch, across depths (Wu et al. 2016 needed
  residual connections to train 8-layer LSTM stacks; gradients fade layer by layer without them);
- in training, loss, global gradient norm (with clipping events) and per-layer gradient norms, step by step, for
  each variant, depth, warm-up setting and seed (Xiong et al. 2020, Liu et al. 2020: Post-LN needs learning-rate
  warm-up, Pre-LN trains without it). A NaN/inf loss or gradient ends that run with status='diverged'.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from core.config import Experiment, spec
from core.experiments.common import Rows, copied, tagged
from core.findings.depth import COLUMNS, FLAGS, LEARNED_FRACTION, TEXT, UNDERFLOW, chain_entropy, to_frame  # noqa: F401
from core.findings.depth_sentences import takeaways
from core.harness import guard
from core.harness.device import DEVICES, environment, resolve_device, torch_threads
from core.models import registry
from core.terms import status
from core.training import loop as train_loop

CHUNK_STEPS = 10  # report progress at least every this many training steps …
CHUNK_SECONDS = 0.3  # … or this often, whichever comes first, so a page can Stop promptly


@dataclasses.dataclass(frozen=True)
class DepthConfig:
    models: tuple[str, ...] = tagged("depth", "depth:quick", help="which variants to compare")
    depths: tuple[int, ...] = spec((2, 8), lo=1, hi=64, help="stack depths to train")
    init_depths: tuple[int, ...] = spec(
        (1, 2, 4, 8, 16), lo=1, hi=64, help="extra depths measured at initialisation only (one batch, cheap)"
    )
    d_model: int = spec(32, lo=8, hi=1024, help="width of every layer")
    vocab_size: int = spec(16, lo=4, hi=1024, help="tokens in the chain task")
    noise: float = spec(0.2, lo=0.0, hi=0.9, help="chance that the next token is random instead of perm[token]")
    seq_len: int = spec(24, lo=4, hi=1024)
    batch_size: int = spec(16, lo=1, hi=512)
    steps: int = spec(60, lo=1, hi=20000, help="training steps per run")
    lr: float = spec(2e-2, lo=1e-6, hi=1.0, help="peak learning rate (Adam)")
    warmup_steps: tuple[int, ...] = spec((0, 20), lo=0, hi=10000, help="linear warm-up lengths to compare; 0 = none")
    clip: float = spec(0.0, lo=0.0, hi=1e6, help="clip the global gradient norm to this; 0 = no clipping")
    seed: int = spec(0, lo=0, hi=2**31 - 1, help="first seed")
    seeds: int = spec(1, lo=1, hi=20, help="runs per setting, seeds seed, seed+1, …")
    log_every: int = spec(2, lo=1, hi=1000, help="record losses and per-layer gradient norms every this many steps")
    layer_seeds: int = spec(
        1,
        lo=1,
        hi=20,
        help="record per-layer gradient norms in training for the first this "
        "many seeds (every seed records loss and global gradient norm)",
    )
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")

    def check(self):
        if any(w >= self.steps for w in self.warmup_steps if w > 0):
            raise ValueError(f"warmup_steps: each warm-up must be shorter than steps ({self.steps})")


# lr 2e-2: where Post-LN without warm-up stalls and Pre-LN trains (tuning runs: docs/BENCHMARKS.md)
PRESETS = {
    "quick": {},  # the defaults: 20 runs of 60 steps, depths 2 and 8
    # a second or two: for testing the command line and scripts/gpu_reference.sh, not for reading
    "tiny": {
        "depths": (1, 2),
        "init_depths": (1,),
        "d_model": 16,
        "seq_len": 8,
        "batch_size": 4,
        "steps": 4,
        "warmup_steps": (0, 2),
        "log_every": 2,
    },
    # scripts/gpu_reference.sh's preset, for its limit of 40 s (sizing: docs/GPU.md)
    "gpu": {
        "depths": (2, 8),
        "init_depths": (1, 2, 4, 8, 16, 32, 64),
        "steps": 100,
        "warmup_steps": (0, 30),
        "seeds": 2,
        "log_every": 5,
    },
    # the shipped reference; per-layer rows for `layer_seeds` seeds only keep the CSV small
    "full": {
        "depths": (2, 8, 16, 32),
        "init_depths": (1, 2, 4, 8, 16, 32, 64),
        "steps": 150,
        "warmup_steps": (0, 30),
        "seeds": 3,
        "log_every": 10,
    },
}


# ---------------------------------------------------------------- the task


def make_perm(vocab_size: int, seed: int) -> torch.Tensor:
    """The chain's fixed successor map: a random permutation of the vocabulary."""
    return torch.randperm(vocab_size, generator=torch.Generator().manual_seed(seed))


def make_batch(perm: torch.Tensor, batch_size: int, seq_len: int, noise: float, g: torch.Generator):
    """(tokens, targets), each (B, T): token t+1 = perm[token t], or with probability `noise` a random token.
    Example, perm = [2, 0, 3, 1], noise 0: tokens 1 0 2 3 1 → targets 0 2 3 1 0; one layer solves it."""
    V = perm.numel()
    seq = torch.empty(batch_size, seq_len + 1, dtype=torch.long)
    seq[:, 0] = torch.randint(V, (batch_size,), generator=g)
    random = torch.randint(V, (batch_size, seq_len), generator=g)
    coin = torch.rand(batch_size, seq_len, generator=g) < noise
    for t in range(seq_len):
        seq[:, t + 1] = torch.where(coin[:, t], random[:, t], perm[seq[:, t]])
    return seq[:, :-1], seq[:, 1:]


# ---------------------------------------------------------------- the models


def build_model(name: str, vocab_size: int, d_model: int, n_layers: int) -> nn.Module:
    return registry.get(name).build(vocab_size, d_model, n_layers)


def layer_grad_norms(layers: list[nn.Module]) -> list[float]:
    """L2 norm of the gradient of each layer's weights (all its parameters together); 0 where none has a grad."""
    out = []
    for layer in layers:
        sq = [p.grad.detach().float().pow(2).sum() for p in layer.parameters() if p.grad is not None]
        out.append(float(torch.stack(sq).sum().sqrt()) if sq else 0.0)
    return out


def total_grad_norm(params: list[nn.Parameter]) -> float:
    """The global L2 norm of all gradients (what clipping looks at); inf/NaN pass through."""
    norms = [p.grad.detach().float().norm() for p in params if p.grad is not None]
    return float(torch.stack(norms).norm()) if norms else 0.0


def predicted_bytes(name: str, cfg: DepthConfig, n_layers: int) -> float:
    """A generous estimate of one run's peak memory: weights, grads, Adam's two moments, activations, logits."""
    B, T, d, V = cfg.batch_size, cfg.seq_len, cfg.d_model, cfg.vocab_size
    kind = registry.get(name)
    activations = B * T * (n_layers * kind.activation_floats * d + 4 * V + 2 * d) * 4
    states = 4 * kind.n_params(V, d, n_layers) * 4
    return 2.0 * activations + states


# ---------------------------------------------------------------- the runs


def measure_init(name: str, cfg: DepthConfig, n_layers: int, seed: int, device: torch.device) -> list[dict]:
    """Per-layer gradient norms and loss for one batch at initialisation (no update)."""
    torch.manual_seed(seed)
    model = build_model(name, cfg.vocab_size, cfg.d_model, n_layers).to(device)
    g = torch.Generator().manual_seed(seed)
    tokens, targets = make_batch(make_perm(cfg.vocab_size, seed), cfg.batch_size, cfg.seq_len, cfg.noise, g)
    loss = lm_loss(model(tokens.to(device)), targets.to(device))
    loss.backward()
    rows = [{"layer": i + 1, "grad_norm": n} for i, n in enumerate(layer_grad_norms(list(model.layers)))]
    rows.append(
        {"layer": math.nan, "grad_norm": total_grad_norm(list(model.parameters())), "loss": float(loss.detach())}
    )
    return rows


def train(
    name: str,
    cfg: DepthConfig,
    n_layers: int,
    warmup: int,
    seed: int,
    device: torch.device,
    report=None,
    per_layer: bool = True,
) -> None:
    """One training run (core.training.loop); logged steps' rows (whole model, then per layer if `per_layer`) go out
    through `report(rows, steps_done)`. A diverged run ends with a status='diverged' row at that step."""
    torch.manual_seed(seed)
    model = build_model(name, cfg.vocab_size, cfg.d_model, n_layers).to(device)
    layers = list(model.layers)
    perm = make_perm(cfg.vocab_size, seed)
    g = torch.Generator().manual_seed(seed + 1)  # training batches: a different stream from the init batch
    pending: list[dict] = []
    reported = [0]  # steps already reported as done

    def batch():
        tokens, targets = make_batch(perm, cfg.batch_size, cfg.seq_len, cfg.noise, g)
        return tokens.to(device), targets.to(device)

    def on_step(s: train_loop.Step):
        if s.step % cfg.log_every == 0 or s.step == 1 or s.step == cfg.steps:
            base = {"step": s.step, "lr_now": s.lr}
            pending.append({**base, "layer": math.nan, "loss": s.loss, "grad_norm": s.grad_norm, "clipped": s.clipped})
            if per_layer:
                pending.extend({**base, "layer": i + 1, "grad_norm": n} for i, n in enumerate(layer_grad_norms(layers)))

    def on_chunk(steps_done: int, _train_s: float):
        if report is not None:
            report(list(pending), steps_done)
        pending.clear()
        reported[0] += steps_done

    spec = train_loop.TrainSpec(
        cfg.steps,
        cfg.lr,
        optimizer="adam",
        warmup_steps=warmup,
        clip=cfg.clip,
        max_loss=train_loop.loss_bound(cfg.vocab_size),
        chunk_steps=CHUNK_STEPS,
        chunk_seconds=CHUNK_SECONDS,
    )
    out = train_loop.train(model, batch, lm_loss, spec, on_step, on_chunk)
    if out.status == status.DIVERGED and report is not None:  # its remaining steps will never come: count them done
        row = {
            "step": out.steps,
            "lr_now": train_loop.lr_at(out.steps, cfg.lr, warmup),
            "layer": math.nan,
            "loss": out.loss,
            "grad_norm": out.grad_norm,
            "clipped": False,
            "status": out.status,
            "note": out.note,
        }
        report([*pending, row], cfg.steps - reported[0])


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy over every position."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


# tiny layers: per-op overhead dominates, so extra intra-op threads do not help
CPU_THREADS = 1


def run(cfg: DepthConfig, on_progress=None) -> pd.DataFrame:
    """Init rows for every (depth, model, seed), then one training run per (depth, warm-up, model, seed)."""
    device = resolve_device(cfg.device)
    with torch_threads(CPU_THREADS if device.type == "cpu" else 0):
        return _run(cfg, device, on_progress)


def _run(cfg: DepthConfig, device: torch.device, on_progress) -> pd.DataFrame:
    env = environment(device)
    seeds = range(cfg.seed, cfg.seed + cfg.seeds)
    init_points = [(L, m, s) for L in sorted(set(cfg.init_depths) | set(cfg.depths)) for m in cfg.models for s in seeds]
    runs = [(L, w, m, s) for L in sorted(cfg.depths) for w in cfg.warmup_steps for m in cfg.models for s in seeds]
    out = Rows(len(init_points) + len(runs) * cfg.steps, on_progress)
    sizes = ("d_model", "vocab_size", "noise", "seq_len", "batch_size")
    task = {**copied(cfg, *sizes), **env}  # what every row shares: the task's sizes, the environment
    unset = dict.fromkeys(("lr", "warmup_steps", "clip"), math.nan)
    for L, name, seed in init_points:
        common = {"model": name, "n_layers": L, "step": 0, "phase": "init", "seed": seed, **unset, **task}
        measure = lambda: {"rows": measure_init(name, cfg, L, seed, device)}  # noqa: B023 - called at once
        fields = guard.guarded(measure, predicted_bytes(name, cfg, L), device)
        measured = fields.pop("rows", None) or [{"layer": math.nan, "grad_norm": math.nan, "loss": math.nan}]
        out.add([{**common, "note": "", **fields, **r} for r in measured], f"init {name} L={L} seed={seed}", 1)

    for L, warmup, name, seed in runs:
        setting = {"lr": cfg.lr, "warmup_steps": warmup, "clip": cfg.clip}
        common = {"model": name, "n_layers": L, "phase": "train", "seed": seed, **setting, **task}
        message = f"train {name} L={L} warm-up={warmup} seed={seed}"
        predicted = predicted_bytes(name, cfg, L)
        ok = {"status": "ok", "note": "", "predicted_bytes": predicted, **common}
        report = lambda new, advance, ok=ok, message=message: out.add([{**ok, **r} for r in new], message, advance)
        per_layer = seed < cfg.seed + cfg.layer_seeds
        # no fields: its rows go out through `report` as they are measured; called at once
        measure = lambda: train(name, cfg, L, warmup, seed, device, report, per_layer) or {}  # noqa: B023
        fields = guard.guarded(measure, predicted, device)
        if fields["status"] != "ok":  # refused or out of memory: one row with the predicted size, no metrics
            empty = dict.fromkeys(("step", "layer", "grad_norm", "loss"), math.nan)
            out.add([{**common, **empty, **fields}], message, cfg.steps)
    return to_frame(out.rows)


EXPERIMENT = Experiment(
    "depth",
    DepthConfig,
    run,
    PRESETS,
    "per-layer gradients at init and training stability vs depth: LSTM stacks (with/without "
    "residuals) vs Post-LN, Pre-LN and ablated Transformers",
    takeaways,
    point=("model", "n_layers"),
)
