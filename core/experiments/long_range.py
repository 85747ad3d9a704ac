"""Bottleneck 2b, long-range dependency in training: can a model carry a fact across d tokens?

An LSTM and a Transformer with about the same number of parameters, the same optimizer (AdamW + gradient
clipping), the same batches and the same number of steps, trained on `core.training.tasks`' recall ("Alice … she") and
multi-query associative recall (Zoology, Arora et al. 2023) at several distances. Accuracy is measured on a fixed
held-out batch after every chunk of steps, so the curves are live and a page can stop between chunks.
In a recurrent network the fact must survive d state updates (gradient path O(d)); attention reaches it in one
step (O(1), Vaswani et al. 2017, Table 1).
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import torch

from core.config import Experiment, spec
from core.experiments.common import ChunkRows, copied, tagged
from core.findings.long_range import SOLVED, final, takeaways  # noqa: F401 - the page reads them here too
from core.harness.device import DEVICES, environment, resolve_device, torch_threads
from core.models import registry
from core.models.layers import n_params
from core.models.registry import ATTENTION
from core.store.results import tidy
from core.training import tasks as task_lib
from core.training.chunks import train_chunks

COLUMNS = ("task", "model", "distance", "step", "loss", "accuracy", "chance", "params", "train_s", "seq_len",
           "d_model", "n_layers", "n_keys", "n_pairs", "status", "note", "seed")  # fmt: skip
TEXT = ("task", "model")  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ()


@dataclasses.dataclass(frozen=True)
class LongRangeConfig:
    tasks: tuple[str, ...] = spec(("recall",), choices=task_lib.TASKS, help="recall = one name; mqar = several pairs")
    models: tuple[str, ...] = tagged("long_range", help="which models to train")
    distances: tuple[int, ...] = spec(
        (4, 16, 60), lo=1, hi=4095, help="tokens between the fact and its question; each < seq_len"
    )
    seq_len: int = spec(64, lo=3, hi=4096, help="tokens per sequence (the same at every distance)")
    n_keys: int = spec(8, lo=2, hi=task_lib.MAX_KEYS, help="K names (or keys and values); chance is 1/K")
    n_pairs: int = spec(4, lo=1, hi=task_lib.MAX_KEYS, help="mqar: key-value pairs per sequence")
    d_model: int = spec(32, lo=8, hi=512, help="Transformer width; the LSTM's width is set to match its parameters")
    n_layers: int = spec(2, lo=1, hi=8, help="layers in both models")
    steps: int = spec(150, lo=1, hi=100_000, help="training steps per (task, model, distance)")
    batch_size: int = spec(32, lo=1, hi=1024)
    lr: float = spec(3e-3, lo=1e-6, hi=1.0, help="AdamW learning rate, the same for both models")
    forget_bias: float = spec(1.0, lo=-10.0, hi=10.0, help="LSTM forget-gate bias (Jozefowicz et al. 2015: 1)")
    eval_every: int = spec(25, lo=1, hi=100_000, help="steps per chunk: measure accuracy, report, allow Stop")
    eval_size: int = spec(256, lo=8, hi=8192, help="held-out sequences for accuracy")
    threads: int = spec(
        1,
        lo=0,
        hi=256,
        help="torch threads while training; 0 = keep the process setting (tiny models train faster on one)",
    )
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")
    seed: int = spec(0, lo=0, hi=2**31 - 1, help="first seed")
    seeds: int = spec(1, lo=1, hi=20, help="runs per setting, seeds seed, seed+1, …: the takeaways read their median")
    stop_when_solved: bool = spec(
        False, help="end a run once it is solved at two evaluations in a row; steps is then a budget"
    )

    def check(self):
        for d in self.distances:
            if d >= self.seq_len:
                raise ValueError(f"distances: {d} must be < seq_len ({self.seq_len})")
        if "mqar" in self.tasks:
            if self.n_pairs > self.n_keys:
                raise ValueError(f"n_pairs: {self.n_pairs} pairs need at least as many keys (n_keys={self.n_keys})")
            longest = task_lib.mqar_max_distance(self.seq_len, self.n_pairs)
            for d in self.distances:
                if d > longest:
                    raise ValueError(
                        f"distances: {d} leaves no room for {self.n_pairs} pairs and their queries "
                        f"in seq_len {self.seq_len} (mqar allows at most {longest})"
                    )


FAR = 800  # the chapter's distance between "Alice" and "she"
# the gpu and full presets' runs: both tasks at three distances in 48 tokens, width 64, each run ending once solved
GRID = {
    "lr": 1e-3,
    "tasks": ("recall", "mqar"),
    "seq_len": 48,
    "distances": (2, 12, 36),
    "stop_when_solved": True,
    "d_model": 64,
    "eval_every": 50,
    "eval_size": 512,
}
PRESETS = {
    # up to 250 steps, a run ending once solved: enough for attention, while the LSTM's failures take all 250; the
    # chapter's pair only (the question's), LSTM + attention in the form
    "quick": {"steps": 250, "stop_when_solved": True, "models": registry.tagged("long_range:quick")},
    # a second or two: for testing the command line and scripts/gpu_reference.sh, not for reading
    "tiny": {
        "seq_len": 8,
        "distances": (2,),
        "d_model": 16,
        "n_layers": 1,
        "steps": 4,
        "batch_size": 4,
        "eval_every": 2,
        "eval_size": 16,
    },
    # scripts/gpu_reference.sh's preset, for its limit of 50 s (sizing: docs/GPU.md)
    "gpu": {**GRID, "steps": 1000},
    # multi-query recall jumps after a plateau, at a different step per seed: many steps, three seeds' median;
    # lr 1e-3, as at 3e-3 the Transformer stayed on its plateau (tuning runs: docs/BENCHMARKS.md)
    "full": {**GRID, "steps": 3000, "seeds": 3},
    # the chapter's own distance, "Alice" … "she" FAR tokens apart: an offline run (scripts/far_recall.py) whose rows
    # are merged into the reference beside the grid's; fewer steps, as each reads FAR + 8 tokens
    "far": {
        **GRID,
        "tasks": ("recall",),
        "seq_len": FAR + 8,
        "distances": (FAR,),
        "steps": 1000,
        "seeds": 2,
        "models": registry.tagged("long_range:quick"),
    },
}


def width_for(name: str, cfg: LongRangeConfig, vocab_size: int) -> int:
    """d_model for attention kinds; a recurrent kind gets the width whose parameter count is closest to the
    Transformer's at d_model."""
    kind = registry.get(name)
    if not kind.recurrent:
        return cfg.d_model
    anchor = registry.get(registry.representative(ATTENTION, registry.names("long_range")))
    target = anchor.n_params(vocab_size, cfg.d_model, cfg.n_layers)
    return min(range(4, 4097), key=lambda w: abs(kind.n_params(vocab_size, w, cfg.n_layers) - target))


def build_model(name: str, cfg: LongRangeConfig, vocab_size: int, impl: str = "sdpa") -> torch.nn.Module:
    """A model of kind `name` at its matched width, LSTM forget-gate bias cfg.forget_bias; seeded by cfg.seed."""
    torch.manual_seed(cfg.seed)
    width = width_for(name, cfg, vocab_size)
    return registry.get(name).build(vocab_size, width, cfg.n_layers, impl=impl, forget_bias=cfg.forget_bias)


def run(cfg: LongRangeConfig, on_progress=None) -> pd.DataFrame:
    """One row per (seed, task, distance, model, chunk of eval_every steps): training loss and held-out accuracy."""
    device = resolve_device(cfg.device)
    describe = lambda r: f"{r['task']} {r['model']} d={r['distance']} seed {r['seed']} step {r['step']}"
    runs = len(cfg.tasks) * len(cfg.distances) * len(cfg.models) * cfg.seeds
    emit = ChunkRows(runs * math.ceil(cfg.steps / cfg.eval_every), on_progress, describe)
    with torch_threads(cfg.threads):
        env = environment(device)
        for seed in range(cfg.seed, cfg.seed + cfg.seeds):
            run_cfg = dataclasses.replace(cfg, seed=seed)
            for task in cfg.tasks:
                V = task_lib.Layout(task, cfg.seq_len, cfg.n_keys).vocab
                for distance in sorted(cfg.distances):
                    for name in cfg.models:
                        train_one(run_cfg, task, name, distance, V, device, env, emit)
    return tidy(emit.rows, COLUMNS)


def train_one(cfg, task, name, distance, V, device, env, emit) -> None:
    """Train one (task, model, distance) run with core.training.loop; `emit(row)` after every chunk of steps."""
    model = build_model(name, cfg, V).to(device)
    base = {
        "task": task,
        "model": name,
        "distance": distance,
        "chance": 1.0 / cfg.n_keys,
        "params": n_params(model),
        **copied(cfg, "seq_len", "d_model", "n_layers", "n_keys"),
        "n_pairs": cfg.n_pairs if task == "mqar" else math.nan,
        "seed": cfg.seed,
        **env,
    }
    sample = task_lib.Layout(task, cfg.seq_len, cfg.n_keys, distance, cfg.n_pairs).batch
    stop_at = SOLVED if cfg.stop_when_solved else None
    train_chunks(model, sample, V, cfg, base, emit, stop_at, f"{task} {name} d={distance}", device)


EXPERIMENT = Experiment(
    "long_range",
    LongRangeConfig,
    run,
    PRESETS,
    "train an LSTM and a Transformer (matched parameters) to recall a token d steps back",
    takeaways,
    point=("model", "distance"),
)
