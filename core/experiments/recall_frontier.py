"""Page 5, what a fixed state costs: recall accuracy against the bytes a model keeps per sequence while generating.

Every mixer of page 5 (in Zoology's residual blocks, core.models.stack) and the chapter's LSTM and Transformer,
trained alike on MQAR and selective copying (Gu & Dao 2023). Each row records the model's state at inference in bytes
(its recurrent state, or attention's growing KV cache) and its held-out accuracy after every chunk of steps.

The runs form a cross: every width at the most pairs (the frontier) and every number of pairs at one width; selective
copying at a width of its own. Arora et al. 2023 (Zoology) and 2024 (Based) drew this frontier for models of
70M–1.4B parameters; the shapes, not their numbers, are what a small machine can reproduce.
"""

from __future__ import annotations

import dataclasses
import math
import time

import pandas as pd
import torch

from core.config import Experiment, spec
from core.experiments.common import ChunkRows, tagged
from core.findings.recall_frontier import takeaways
from core.harness.device import DEVICES, environment, resolve_device, torch_threads
from core.models import registry
from core.models.layers import n_params
from core.models.registry import ANSWERS, Spec
from core.store.results import tidy
from core.terms import status
from core.training import tasks as task_lib
from core.training.chunks import train_chunks

TASKS = ("mqar", "selective_copy")
TRAINED, WRITTEN = "trained", "written"
METHODS = (TRAINED, WRITTEN)
# written keys: random with this spread, where φ = elu + 1 is nearly a ReLU (a larger spread changes little)
KEY_SCALE = 8.0
BYTES_PER_FLOAT = 4  # float32 states
STOP_AT = 0.99  # two evaluations in a row at or above this end a run early (stop_when_solved)
COLUMNS = ("task", "mixer", "form", "d_model", "n_pairs", "seq_len", "state_bytes", "params", "step", "loss",
           "accuracy", "chance", "train_s", "n_layers", "n_keys", "n_queries", "distance", "seed", "status", "note")  # fmt: skip
TEXT = ("task", "mixer", "form")  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ()


@dataclasses.dataclass(frozen=True)
class RecallFrontierConfig:
    """`gap` and `n_queries` are the same in every run, so only the pairs change and every run learns from as many
    questions per step. One head of linear attention keeps a d × d state, as Zoology's does."""

    tasks: tuple[str, ...] = spec(
        ("mqar",), choices=TASKS, help="mqar = key-value recall; selective_copy = copy the tokens among blanks"
    )
    mixers: tuple[str, ...] = tagged(ANSWERS, "recall_frontier:quick", help="which models to train")
    d_models: tuple[int, ...] = spec(
        (32, 16), lo=8, hi=512, help="widths: every one at the largest n_pairs, and every n_pairs at the first"
    )
    n_pairs: tuple[int, ...] = spec((4, 8), lo=1, hi=64, help="key-value pairs: every count at the pairs width")
    seq_len: int = spec(32, lo=8, hi=1024, help="tokens per sequence; the queries come last, after a gap")
    n_keys: int = spec(16, lo=2, hi=256, help="K keys and K values; chance is 1/K")
    gap: int = spec(
        0, lo=0, hi=1024, help="tokens between the last pair and the first question; 0 = the room the most pairs leave"
    )
    n_queries: int = spec(0, lo=0, hi=256, help="questions that end each sequence; 0 = as many as the most pairs")
    copy_tokens: int = spec(8, lo=1, hi=64, help="selective copying: data tokens to copy, among blanks")
    n_layers: int = spec(2, lo=1, hi=8, help="layers in every model")
    heads: int = spec(1, lo=0, hi=64, help="heads of linear and window attention; 0 = heads of 32 channels")
    pairs_width: int = spec(0, lo=0, hi=512, help="the width at which every n_pairs is trained; 0 = the first width")
    copy_width: int = spec(0, lo=0, hi=512, help="the width of selective copying; 0 = the pairs width")
    steps: int = spec(300, lo=1, hi=100_000, help="training steps per run (a budget when stop_when_solved)")
    batch_size: int = spec(32, lo=1, hi=1024)
    lr: float = spec(3e-3, lo=1e-6, hi=1.0, help="AdamW learning rate, the same for every model")
    eval_every: int = spec(50, lo=1, hi=100_000, help="steps per chunk: measure accuracy, report, allow Stop")
    eval_size: int = spec(256, lo=8, hi=8192, help="held-out sequences for accuracy")
    threads: int = spec(1, lo=0, hi=256, help="torch threads while training; 0 = keep the process setting")
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")
    seed: int = spec(0, lo=0, hi=2**31 - 1, help="first seed")
    seeds: int = spec(1, lo=1, hi=20, help="runs per setting, seeds seed, seed+1, …: the takeaways read their median")
    stop_when_solved: bool = spec(True, help="end a run once it is solved at two evaluations in a row")
    method: str = spec(
        TRAINED, choices=METHODS, help="trained; written = pairs written straight into each state, no training"
    )

    def check(self):
        most = max(self.n_pairs)
        if "mqar" in self.tasks:
            if most > self.n_keys:
                raise ValueError(f"n_pairs: {most} pairs need at least as many keys (n_keys={self.n_keys})")
            room = task_lib.mqar_max_distance(self.seq_len, most, self.queries)
            if room < 1:
                raise ValueError(
                    f"n_pairs: {most} pairs and {self.queries} queries do not fit in seq_len {self.seq_len}"
                )
            if self.gap > room:
                raise ValueError(
                    f"gap: {self.gap} tokens leave no room for {most} pairs and {self.queries} queries in seq_len "
                    f"{self.seq_len} (at most {room})"
                )
        if "selective_copy" in self.tasks and 2 * self.copy_tokens > self.seq_len:
            raise ValueError(
                f"copy_tokens: {self.copy_tokens} tokens and their markers do not fit in seq_len "
                f"{self.seq_len} (at most {self.seq_len // 2})"
            )
        if self.method == WRITTEN:
            if self.tasks != ("mqar",):
                raise ValueError("tasks: written pairs are recall (mqar) alone")
            if unable := [m for m in self.mixers if registry.get(m).recall is None]:
                raise ValueError(f"mixers: {', '.join(unable)} keep no key–value state to write pairs into")
        for d in {*self.d_models, self.width_for_pairs, self.width_for_copy}:
            if d % self.mixer_spec(d).heads:
                raise ValueError(f"d_models: {d} must be divisible by the number of heads ({self.heads})")

    @property
    def queries(self) -> int:
        return self.n_queries or max(self.n_pairs)

    @property
    def distance(self) -> int:
        """The gap of every MQAR run: fewer pairs get filler before them, not a longer gap, so a change with the
        number of pairs is the pairs' doing, not the distance's."""
        return self.gap or task_lib.mqar_max_distance(self.seq_len, max(self.n_pairs), self.queries)

    @property
    def width_for_pairs(self) -> int:
        return self.pairs_width or self.d_models[0]

    @property
    def width_for_copy(self) -> int:
        return self.copy_width or self.width_for_pairs

    def mixer_spec(self, d_model: int) -> Spec:
        return Spec(d_model, n_heads=self.heads)


PRESETS = {
    # the question's widths, pairs and keys with no training: pairs written straight into linear attention's fixed
    # state and into attention's cache (a page's Run); `train` is the training run these defaults describe
    "quick": {
        "method": WRITTEN,
        "mixers": lambda: tuple(m for m in registry.tagged("recall_frontier")() if registry.get(m).recall),
        "d_models": (16, 32, 64),
        "n_pairs": (4, 8, 16),
        "seq_len": 64,
        "n_keys": 64,
        "eval_size": 1024,
        "seeds": 3,
    },
    # a short MQAR (32 tokens, 16 keys, 4 and 8 pairs) at widths 16 and 32, four models, one seed
    "train": {},
    "tiny": {
        "tasks": TASKS,
        "mixers": registry.tagged("recall_frontier:tiny"),
        "d_models": (8,),
        "n_pairs": (2,),
        "seq_len": 12,
        "n_keys": 4,
        "copy_tokens": 2,
        "steps": 4,
        "batch_size": 4,
        "eval_every": 2,
        "eval_size": 16,
    },
    # scripts/gpu_reference.sh's preset, for its limit of 25 s (sizing: docs/GPU.md)
    "gpu": {},
    # 16 questions across a gap of 17; lr 3e-3 for the Transformer's slow MQAR, pairs from 4 as 2 stayed at a
    # plateau (tuning runs: docs/BENCHMARKS.md)
    "full": {
        "tasks": TASKS,
        "mixers": registry.tagged("recall_frontier"),
        "d_models": (16, 32, 64),
        "n_pairs": (4, 8, 16),
        "seq_len": 64,
        "n_keys": 64,
        "copy_width": 32,
        "steps": 1500,
        "lr": 3e-3,
        "seeds": 2,
        "eval_size": 512,
    },
}


def runs(cfg: RecallFrontierConfig) -> list[tuple[str, int, int]]:
    """(task, d_model, n_pairs) of every run per mixer and seed: MQAR at every width with the most pairs, and at the
    pairs width with every number of pairs; selective copying at its own width (default: the pairs width)."""
    out = []
    w = cfg.width_for_pairs
    if "mqar" in cfg.tasks:
        most = max(cfg.n_pairs)
        out += [("mqar", d, most) for d in sorted(cfg.d_models)]
        out += [("mqar", w, p) for p in sorted(cfg.n_pairs) if p != most or w not in cfg.d_models]
    if "selective_copy" in cfg.tasks:
        out.append(("selective_copy", cfg.width_for_copy, cfg.copy_tokens))
    return out


def state_bytes(mixer: str, d_model: int, cfg: RecallFrontierConfig) -> int:
    """What the model keeps per sequence between tokens after reading seq_len tokens (float32): its layers' states
    and short-convolution buffers; for attention, the KV cache of all seq_len tokens."""
    return BYTES_PER_FLOAT * registry.get(mixer).stack_state_floats(cfg.seq_len, cfg.mixer_spec(d_model), cfg.n_layers)


def fastest_form(mixer: str, spec_: Spec, x: torch.Tensor) -> str:
    """The form that runs one forward and backward fastest here, timed once after a warm-up (every form computes
    the same function, tested in tests/test_mixers.py; only the time differs)."""
    forms = registry.get(mixer).forms
    if len(forms) == 1:
        return forms[0]
    times = {}
    for form in forms:
        layer = registry.get(mixer).layer(spec_, form).to(x.device)
        for timed in (False, True):
            start = time.perf_counter()
            layer(x).sum().backward()
            if x.device.type == "cuda":
                torch.cuda.synchronize()
            if timed:
                times[form] = time.perf_counter() - start
    return min(times, key=times.get)


def run(cfg: RecallFrontierConfig, on_progress=None) -> pd.DataFrame:
    """One row per (seed, task, width, pairs, mixer, chunk of eval_every steps): loss, held-out accuracy, state."""
    device = resolve_device(cfg.device)
    describe = lambda r: (
        f"{r['task']} {r['mixer']} d={r['d_model']} pairs={r['n_pairs']} seed {r['seed']} step {r['step']}"
    )
    chunks = len(runs(cfg)) * len(cfg.mixers) * cfg.seeds * math.ceil(cfg.steps / cfg.eval_every)
    emit = ChunkRows(chunks, on_progress, describe)
    with torch_threads(cfg.threads):
        env = environment(device)
        forms = {}  # (mixer, width) → its fastest form, chosen once
        for seed in range(cfg.seed, cfg.seed + cfg.seeds):
            for task, d, pairs in runs(cfg):
                for name in cfg.mixers:
                    if cfg.method == WRITTEN:
                        emit(written_one(cfg, seed, name, d, pairs, env), math.ceil(cfg.steps / cfg.eval_every) - 1)
                        continue
                    if (name, d) not in forms:
                        probe = torch.randn(cfg.batch_size, cfg.seq_len, d, device=device)
                        forms[name, d] = fastest_form(name, cfg.mixer_spec(d), probe)
                    train_one(cfg, seed, task, name, d, pairs, forms[name, d], device, env, emit)
    return tidy(emit.rows, COLUMNS)


def written_recall(name: str, d: int, pairs: int, n_keys: int, trials: int, seed: int) -> float:
    """Held-out accuracy of `pairs` key–value pairs written straight into the model's state (`Model.recall`) and
    read back with their exact keys: out of n_keys random keys and values at width d, the value nearest to what
    the state returns must be the one written. The same keys, values and pairs for every model of a seed."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + d * 1009 + pairs)
    keys = torch.randn(trials, n_keys, d, generator=g) * KEY_SCALE
    values = torch.nn.functional.normalize(torch.randn(trials, n_keys, d, generator=g), dim=-1)
    which = torch.rand(trials, n_keys, generator=g).argsort(-1)[:, :pairs]  # distinct keys, as MQAR's
    answer = torch.randint(0, n_keys, (trials, pairs), generator=g)
    k = keys.gather(1, which[..., None].expand(-1, -1, d))  # (trials, pairs, d)
    v = values.gather(1, answer[..., None].expand(-1, -1, d))
    read = registry.get(name).recall(k, v, k)
    return float(((read @ values.transpose(1, 2)).argmax(-1) == answer).float().mean())


def written_one(cfg, seed, name, d, pairs, env) -> dict:
    """One row of the written method: `written_recall` over eval_size sequences, step 0."""
    start = time.perf_counter()
    accuracy = written_recall(name, d, pairs, cfg.n_keys, cfg.eval_size, seed)
    return {
        "task": "mqar",
        "mixer": name,
        "form": WRITTEN,
        "d_model": d,
        "n_pairs": pairs,
        "seq_len": cfg.seq_len,
        "state_bytes": BYTES_PER_FLOAT * registry.get(name).stack_state_floats(cfg.seq_len, cfg.mixer_spec(d), 1),
        "params": math.nan,
        "step": 0,
        "loss": math.nan,
        "accuracy": accuracy,
        "chance": 1.0 / cfg.n_keys,
        "train_s": time.perf_counter() - start,
        "n_layers": 1,  # one state, written once
        "n_keys": cfg.n_keys,
        "n_queries": pairs,
        "distance": cfg.distance,
        "seed": seed,
        "status": status.OK,
        "note": "",
        **env,
    }


def layout(cfg: RecallFrontierConfig, task: str, pairs: int) -> task_lib.Layout:
    """One run's sequences: MQAR across the config's gap, or selective copying of `pairs` tokens."""
    distance = cfg.distance if task == "mqar" else 1
    return task_lib.Layout(task, cfg.seq_len, cfg.n_keys, distance, pairs, cfg.queries)


def train_one(cfg, seed, task, name, d, pairs, form, device, env, emit) -> None:
    """Train one (task, mixer, width, pairs) run with core.training.loop; `emit(row)` after every chunk of steps."""
    sequences = layout(cfg, task, pairs)
    V = sequences.vocab
    torch.manual_seed(seed)
    model = registry.get(name).stack(V, cfg.mixer_spec(d), cfg.n_layers, form).to(device)
    base = {
        "task": task,
        "mixer": name,
        "form": form,
        "d_model": d,
        "n_pairs": pairs,
        "seq_len": cfg.seq_len,
        "state_bytes": state_bytes(name, d, cfg),
        "params": n_params(model),
        "chance": 1.0 / cfg.n_keys,
        "n_layers": cfg.n_layers,
        "n_keys": cfg.n_keys,
        "n_queries": cfg.queries if task == "mqar" else pairs,
        "distance": cfg.distance if task == "mqar" else math.nan,
        "seed": seed,
        **env,
    }
    stop_at = STOP_AT if cfg.stop_when_solved else None
    train_chunks(model, sequences.batch, V, cfg, base, emit, stop_at, f"{task} {name} d={d} pairs={pairs}", device)


EXPERIMENT = Experiment(
    "recall_frontier",
    RecallFrontierConfig,
    run,
    PRESETS,
    "recall accuracy against the state a model keeps: MQAR over widths and pairs, and selective copying",
    takeaways,
    point=("mixer", "d_model", "n_pairs"),
)
