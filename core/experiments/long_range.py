"""Bottleneck 2b, long-range dependency in training: can a model carry a fact across d tokens?

An LSTM and a Transformer with about the same number of parameters, the same optimizer (AdamW + gradient
clipping), the same batches and the same number of steps, trained on `core.tasks`' recall ("Alice … she") and
multi-query associative recall (Zoology, Arora et al. 2023) at several distances. Accuracy is measured on a fixed
held-out batch after every chunk of steps, so the curves are live and a page can stop between chunks.
In a recurrent network the fact must survive d state updates (gradient path O(d)); attention reaches it in one
step (O(1), Vaswani et al. 2017, Table 1).
"""

from __future__ import annotations

import dataclasses
import math
import time

import pandas as pd
import torch
import torch.nn.functional as F

from core import tasks as task_lib
from core.config import Experiment, Progress, spec
from core.device import DEVICES, environment, resolve_device, torch_threads
from core.models import RecurrentLM, TransformerLM, n_heads_for, n_params
from core.results import tidy

MODELS = ("lstm", "transformer")
SOLVED = 0.9  # final accuracy at or above this counts as "solved"
COLUMNS = (
    "task",
    "model",
    "distance",
    "step",
    "loss",
    "accuracy",
    "chance",
    "params",
    "train_s",
    "seq_len",
    "d_model",
    "n_layers",
    "n_keys",
    "n_pairs",
    "status",
    "note",
    "seed",
)


@dataclasses.dataclass(frozen=True)
class LongRangeConfig:
    tasks: tuple[str, ...] = spec(("recall",), choices=task_lib.TASKS, help="recall = one name; mqar = several pairs")
    models: tuple[str, ...] = spec(MODELS, choices=MODELS, help="which models to train")
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
    seed: int = spec(0, lo=0, hi=2**31 - 1)

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
        if self.d_model % n_heads_for(self.d_model):
            raise ValueError(f"d_model: {self.d_model} must be divisible by the number of heads")


PRESETS = {
    "quick": {},
    # about 3-4 min on 2 quiet cores; multi-query recall needs ~600 steps before the Transformer suddenly solves it
    "full": {
        "tasks": ("recall", "mqar"),
        "seq_len": 48,
        "distances": (2, 12, 36),
        "steps": 800,
        "d_model": 64,
        "eval_every": 50,
        "eval_size": 512,
    },
}


def lstm_params(width: int, vocab_size: int, n_layers: int) -> int:
    """Parameters of RecurrentLM('lstm'): embedding, 4 gates × (input + recurrent weights + 2 biases), head."""
    return vocab_size * width + n_layers * (8 * width * width + 8 * width) + width * vocab_size + vocab_size


def matched_lstm_width(target_params: int, vocab_size: int, n_layers: int) -> int:
    """The LSTM width whose parameter count is closest to `target_params`."""
    return min(range(4, 4097), key=lambda w: abs(lstm_params(w, vocab_size, n_layers) - target_params))


def set_forget_bias(lstm: torch.nn.LSTM, value: float) -> None:
    """Forget-gate bias = `value` in every layer (gate order i, f, g, o; the two biases add, so one holds it)."""
    h = lstm.hidden_size
    with torch.no_grad():
        for layer in range(lstm.num_layers):
            getattr(lstm, f"bias_ih_l{layer}")[h : 2 * h] = value
            getattr(lstm, f"bias_hh_l{layer}")[h : 2 * h] = 0.0


def build_model(name: str, cfg: LongRangeConfig, vocab_size: int, impl: str = "sdpa") -> torch.nn.Module:
    """The Transformer at cfg.d_model, or an LSTM of matched parameter count; seeded by cfg.seed."""
    torch.manual_seed(cfg.seed)
    transformer = TransformerLM(vocab_size, cfg.d_model, cfg.n_layers, n_heads_for(cfg.d_model), norm="pre", impl=impl)
    if name == "transformer":
        return transformer
    width = matched_lstm_width(n_params(transformer), vocab_size, cfg.n_layers)
    torch.manual_seed(cfg.seed)
    model = RecurrentLM("lstm", vocab_size, width, cfg.n_layers)
    set_forget_bias(model.rnn, cfg.forget_bias)
    return model


def query_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy at the query positions only (targets elsewhere are IGNORE)."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=task_lib.IGNORE)


@torch.no_grad()
def accuracy(model: torch.nn.Module, tokens: torch.Tensor, targets: torch.Tensor) -> float:
    """Fraction of query positions where the most likely token is the target."""
    model.eval()
    asked = targets != task_lib.IGNORE
    hit = model(tokens).argmax(dim=-1)[asked] == targets[asked]
    model.train()
    return float(hit.float().mean())


def train_runs(cfg: LongRangeConfig, device: torch.device, env: dict):
    """Yield (chunks_done_in_run, row) after each chunk of every (task, distance, model) run, in order."""
    for task in cfg.tasks:
        V = task_lib.vocab_size(task, cfg.n_keys)
        for distance in sorted(cfg.distances):
            eval_g = torch.Generator().manual_seed(cfg.seed + 1)  # held out: a different stream from training
            ev_x, ev_y = (
                t.to(device)
                for t in task_lib.batch(task, cfg.eval_size, cfg.seq_len, distance, cfg.n_keys, cfg.n_pairs, eval_g)
            )
            for name in cfg.models:
                yield from _train_one(cfg, task, name, distance, V, (ev_x, ev_y), device, env)


def _train_one(cfg, task, name, distance, V, eval_batch, device, env):
    model = build_model(name, cfg, V).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    g = torch.Generator().manual_seed(cfg.seed)  # both models see exactly the same training batches
    base = {
        "task": task,
        "model": name,
        "distance": distance,
        "chance": 1.0 / cfg.n_keys,
        "params": n_params(model),
        "seq_len": cfg.seq_len,
        "d_model": cfg.d_model,
        "n_layers": cfg.n_layers,
        "n_keys": cfg.n_keys,
        "n_pairs": cfg.n_pairs if task == "mqar" else math.nan,
        "seed": cfg.seed,
        **env,
    }
    train_s, step = 0.0, 0
    while step < cfg.steps:
        chunk = min(cfg.eval_every, cfg.steps - step)
        losses = []
        t0 = time.perf_counter()
        for _ in range(chunk):
            x, y = (
                t.to(device)
                for t in task_lib.batch(task, cfg.batch_size, cfg.seq_len, distance, cfg.n_keys, cfg.n_pairs, g)
            )
            loss = query_loss(model(x), y)
            step += 1
            if not torch.isfinite(loss):
                yield {
                    **base,
                    "step": step,
                    "loss": math.nan,
                    "accuracy": math.nan,
                    "train_s": train_s,
                    "status": "diverged",
                    "note": f"{task} {name} d={distance}: loss became {loss.item()} at step {step}; this run stopped",
                }
                return
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
        train_s += time.perf_counter() - t0
        yield {
            **base,
            "step": step,
            "loss": sum(losses) / len(losses),
            "accuracy": accuracy(model, *eval_batch),
            "train_s": train_s,
            "status": "ok",
            "note": "",
        }


def n_chunks(cfg: LongRangeConfig) -> int:
    return len(cfg.tasks) * len(cfg.distances) * len(cfg.models) * math.ceil(cfg.steps / cfg.eval_every)


def run(cfg: LongRangeConfig, on_progress=None) -> pd.DataFrame:
    """One row per (task, distance, model, chunk of eval_every steps): training loss and held-out accuracy."""
    device = resolve_device(cfg.device)
    total = n_chunks(cfg)
    rows = []
    with torch_threads(cfg.threads):
        env = environment(device)
        for row in train_runs(cfg, device, env):
            rows.append(row)
            if row["status"] == "diverged":  # the run's remaining chunks will never come: count them as done
                total -= math.ceil(cfg.steps / cfg.eval_every) - math.ceil(row["step"] / cfg.eval_every)
            if on_progress is not None:
                on_progress(
                    Progress(
                        len(rows), total, f"{row['task']} {row['model']} d={row['distance']} step {row['step']}", (row,)
                    )
                )
    return to_frame(rows)


def to_frame(rows: list[dict]) -> pd.DataFrame:
    return tidy(rows, COLUMNS)


def final(df: pd.DataFrame) -> pd.DataFrame:
    """The last row of every (task, model, distance) run: its final accuracy, or its divergence."""
    if df is None or not len(df):
        return pd.DataFrame(columns=list(COLUMNS))
    keys = [k for k in ("source", "device", "task", "model", "distance") if k in df.columns]
    return df.sort_values("step").groupby(keys, as_index=False, sort=False).tail(1).sort_values(keys)


def _pct(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:.0f}%"


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Per task: up to which distance each model solved it, where it stayed near chance, and the honest caveat."""
    last = final(df)
    if not len(last):
        return []
    out = []
    for task_id in dict.fromkeys(last["task"]):
        t = last[last["task"] == task_id]
        task = tr(f"long_range.task.{task_id}")
        chance = float(t["chance"].iloc[0])
        steps = int(t["step"].max())
        solved = {}
        for model in dict.fromkeys(t["model"]):
            m = t[(t["model"] == model) & (t["status"] == "ok")].sort_values("distance")
            if not len(m):
                out.append(tr("long_range.take.diverged", task=task, model=tr(f"long_range.model.{model}")))
                continue
            ok = m[m["accuracy"] >= SOLVED]["distance"].tolist()
            fail = m[m["accuracy"] < SOLVED]
            solved[model] = (ok, fail)
            accs = ", ".join(f"d={int(r.distance)}: {_pct(r.accuracy)}" for r in m.itertuples())
            out.append(
                tr(
                    "long_range.take.model",
                    task=task,
                    model=tr(f"long_range.model.{model}"),
                    params=f"{int(m['params'].iloc[0]):,}",
                    steps=steps,
                    accs=accs,
                    chance=_pct(chance),
                )
            )
        lstm, tfm = solved.get("lstm"), solved.get("transformer")
        if lstm is None or tfm is None:
            continue
        lstm_fail = lstm[1]["distance"].tolist()
        beaten = [d for d in lstm_fail if d in tfm[0]]
        if beaten:
            worst = lstm[1][lstm[1]["distance"] == max(beaten)]["accuracy"].iloc[0]
            out.append(
                tr(
                    "long_range.take.contrast",
                    task=task,
                    distances=", ".join(str(int(d)) for d in beaten),
                    acc=_pct(worst),
                    chance=_pct(chance),
                    steps=steps,
                )
            )
        elif not lstm_fail:
            out.append(tr("long_range.take.lstm_held", task=task, steps=steps, d=int(max(lstm[0]))))
        if len(tfm[1]):
            out.append(
                tr(
                    "long_range.take.tfm_failed",
                    task=task,
                    distances=", ".join(str(int(d)) for d in tfm[1]["distance"]),
                    steps=steps,
                )
            )
    return out


EXPERIMENT = Experiment(
    "long_range",
    LongRangeConfig,
    run,
    PRESETS,
    "train an LSTM and a Transformer (matched parameters) to recall a token d steps back",
    takeaways,
)
