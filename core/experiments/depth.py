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
import functools
import math
import time

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from core import guard
from core.config import Experiment, Progress, spec
from core.device import DEVICES, environment, resolve_device, torch_threads
from core.models import TransformerLM, n_heads_for

MODELS = ("lstm", "lstm_residual", "post_ln", "pre_ln", "no_residual", "no_norm")
DEFAULT_MODELS = MODELS[:5]
TRANSFORMERS = {  # name -> (norm, residual) for core.models.TransformerLM
    "post_ln": ("post", True),  # the 2017 original: LayerNorm after each residual sum
    "pre_ln": ("pre", True),  # GPT-2 style: LayerNorm inside the branch, a clean residual path
    "no_residual": ("pre", False),  # ablation: Pre-LN blocks with the skip connection removed
    "no_norm": ("none", True),  # ablation: residual connections, no LayerNorm at all
}
COLUMNS = (
    "model",
    "n_layers",
    "layer",
    "step",
    "phase",
    "grad_norm",
    "loss",
    "lr",
    "lr_now",
    "warmup_steps",
    "clip",
    "clipped",
    "seed",
    "d_model",
    "vocab_size",
    "noise",
    "seq_len",
    "batch_size",
    "status",
    "note",
    "predicted_bytes",
)
LEARNED_FRACTION = 0.5  # a run "trained" if its final loss closed at least this share of the learnable gap
FINAL_FRACTION = 0.2  # the final loss is the mean over the last 20% of logged steps
CHUNK_STEPS = 10  # report progress at least every this many training steps …
CHUNK_SECONDS = 0.3  # … or this often, whichever comes first, so a page can Stop promptly


@dataclasses.dataclass(frozen=True)
class DepthConfig:
    models: tuple[str, ...] = spec(DEFAULT_MODELS, choices=MODELS, help="which variants to compare")
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
        if self.d_model % n_heads_for(self.d_model):
            raise ValueError(f"d_model: {self.d_model} must be divisible by the number of heads")
        if any(w >= self.steps for w in self.warmup_steps if w > 0):
            raise ValueError(f"warmup_steps: each warm-up must be shorter than steps ({self.steps})")


# lr 2e-2 sits where, at width 32 and 8 layers, Post-LN without warm-up stalled in 4 of 5 seeds here while Pre-LN
# trained in all; at 1.5e-2 both trained, at 3e-2 even a 20-step warm-up did not save Post-LN.
PRESETS = {
    "quick": {},  # the defaults: 20 runs of 60 steps, depths 2 and 8
    # ~7 min on one CPU thread; per-layer rows for one seed keep the CSV near 2.5 MB (~14k rows)
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

    Worked example with vocabulary 4, perm = [2, 0, 3, 1], noise 0: tokens 1 0 2 3 1 → targets 0 2 3 1 0.
    Only the current token matters, so one layer of any kind solves it; what differs is whether a deep stack can
    learn to pass the token through. Loss floor and ceiling are formulas: `chain_entropy`, log(vocab_size).
    """
    V = perm.numel()
    seq = torch.empty(batch_size, seq_len + 1, dtype=torch.long)
    seq[:, 0] = torch.randint(V, (batch_size,), generator=g)
    random = torch.randint(V, (batch_size, seq_len), generator=g)
    coin = torch.rand(batch_size, seq_len, generator=g) < noise
    for t in range(seq_len):
        seq[:, t + 1] = torch.where(coin[:, t], random[:, t], perm[seq[:, t]])
    return seq[:, :-1], seq[:, 1:]


def chain_entropy(vocab_size: int, noise: float) -> float:
    """The best achievable loss (nats): entropy of the next token given the current one."""
    p_hit = 1 - noise + noise / vocab_size
    p_other = noise / vocab_size
    h = -p_hit * math.log(p_hit)
    if p_other > 0:
        h -= (vocab_size - 1) * p_other * math.log(p_other)
    return h


# ---------------------------------------------------------------- the models


class StackedLSTMLM(nn.Module):
    """Embedding → n single-layer nn.LSTMs (fused each) → head; `residual` adds each layer's input to its output.

    With residual=True this is the GNMT recipe (Wu et al. 2016): x ← x + LSTM(x) between layers.
    """

    def __init__(self, vocab_size: int, d_model: int, n_layers: int, residual: bool):
        super().__init__()
        self.residual = residual
        self.embed = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(nn.LSTM(d_model, d_model, batch_first=True) for _ in range(n_layers))
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)  # (B, T, d)
        for lstm in self.layers:
            h, _ = lstm(x)  # zero initial state
            x = x + h if self.residual else h
        return self.head(x)


def build_model(name: str, vocab_size: int, d_model: int, n_layers: int) -> nn.Module:
    if name in ("lstm", "lstm_residual"):
        return StackedLSTMLM(vocab_size, d_model, n_layers, residual=name == "lstm_residual")
    norm, residual = TRANSFORMERS[name]
    return TransformerLM(vocab_size, d_model, n_layers, n_heads_for(d_model), norm=norm, residual=residual)


def layer_modules(model: nn.Module) -> list[nn.Module]:
    """The stacked layers, input side first: LSTM layers or Transformer blocks."""
    return list(model.layers if hasattr(model, "layers") else model.blocks)


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


def n_params_formula(name: str, vocab_size: int, d_model: int, n_layers: int) -> int:
    """Parameter count without building the model (for the guard); equals `n_params(build_model(...))`."""
    d, V = d_model, vocab_size
    outer = V * d + d * V + V  # embedding, head
    if name.startswith("lstm"):
        return n_layers * (8 * d * d + 8 * d) + outer  # 4 gates × (W_ih, W_hh, b_ih, b_hh)
    norm, _ = TRANSFORMERS[name]
    per_block = 12 * d * d + 9 * d + (4 * d if norm != "none" else 0)  # qkv, proj, MLP (4d), two LayerNorms
    return n_layers * per_block + outer + (2 * d if norm == "pre" else 0)  # final LayerNorm for Pre-LN


def predicted_bytes(name: str, cfg: DepthConfig, n_layers: int) -> float:
    """A generous estimate of one run's peak memory: weights, grads, Adam's two moments, activations, logits."""
    B, T, d, V = cfg.batch_size, cfg.seq_len, cfg.d_model, cfg.vocab_size
    per_token_layer = 12 * d if name.startswith("lstm") else 40 * d
    activations = B * T * (n_layers * per_token_layer + 4 * V + 2 * d) * 4
    states = 4 * n_params_formula(name, V, d, n_layers) * 4
    return 2.0 * activations + states


# ---------------------------------------------------------------- the runs


def lr_at(step: int, lr: float, warmup_steps: int) -> float:
    """Linear warm-up from lr/warmup to lr over the first `warmup_steps` steps (1-based), then constant."""
    return lr * min(1.0, step / warmup_steps) if warmup_steps > 0 else lr


def measure_init(name: str, cfg: DepthConfig, n_layers: int, seed: int, device: torch.device) -> list[dict]:
    """Per-layer gradient norms and loss for one batch at initialisation (no update)."""
    torch.manual_seed(seed)
    model = build_model(name, cfg.vocab_size, cfg.d_model, n_layers).to(device)
    g = torch.Generator().manual_seed(seed)
    tokens, targets = make_batch(make_perm(cfg.vocab_size, seed), cfg.batch_size, cfg.seq_len, cfg.noise, g)
    loss = F.cross_entropy(model(tokens.to(device)).flatten(0, 1), targets.to(device).flatten())
    loss.backward()
    rows = [{"layer": i + 1, "grad_norm": n} for i, n in enumerate(layer_grad_norms(layer_modules(model)))]
    rows.append(
        {"layer": math.nan, "grad_norm": total_grad_norm(list(model.parameters())), "loss": float(loss.detach())}
    )
    return rows


def _is_bad(x: float) -> bool:
    return not math.isfinite(x)


def train(
    name: str,
    cfg: DepthConfig,
    n_layers: int,
    warmup: int,
    seed: int,
    device: torch.device,
    report=None,
    per_layer: bool = True,
) -> list[dict]:
    """One training run; rows for logged steps (whole-model row with layer NaN, then one per layer if `per_layer`).

    `report(rows, steps_done)` is called every few steps with the new rows. A non-finite loss or gradient ends
    the run with a status='diverged' row at that step.
    """
    torch.manual_seed(seed)
    model = build_model(name, cfg.vocab_size, cfg.d_model, n_layers).to(device)
    params = list(model.parameters())
    layers = layer_modules(model)
    opt = torch.optim.Adam(params, lr=lr_at(1, cfg.lr, warmup))
    perm = make_perm(cfg.vocab_size, seed)
    g = torch.Generator().manual_seed(seed + 1)  # training batches: a different stream from the init batch
    pending, last_report, last_step = [], time.perf_counter(), 0
    for step in range(1, cfg.steps + 1):
        lr_now = lr_at(step, cfg.lr, warmup)
        for group in opt.param_groups:
            group["lr"] = lr_now
        tokens, targets = make_batch(perm, cfg.batch_size, cfg.seq_len, cfg.noise, g)
        opt.zero_grad(set_to_none=True)
        loss_t = F.cross_entropy(model(tokens.to(device)).flatten(0, 1), targets.to(device).flatten())
        loss = float(loss_t.detach())
        gnorm = math.nan
        if not _is_bad(loss):
            loss_t.backward()
            gnorm = total_grad_norm(params)
        base = {"step": step, "lr_now": lr_now}
        if _is_bad(loss) or _is_bad(gnorm):
            what = "loss" if _is_bad(loss) else "gradient norm"
            pending.append(
                {
                    **base,
                    "layer": math.nan,
                    "loss": loss,
                    "grad_norm": gnorm,
                    "clipped": False,
                    "status": "diverged",
                    "note": f"{what} became {loss if _is_bad(loss) else gnorm}",
                }
            )
            break
        clipped = cfg.clip > 0 and gnorm > cfg.clip
        if step % cfg.log_every == 0 or step == 1 or step == cfg.steps:
            pending.append({**base, "layer": math.nan, "loss": loss, "grad_norm": gnorm, "clipped": clipped})
            if per_layer:
                pending += [{**base, "layer": i + 1, "grad_norm": n} for i, n in enumerate(layer_grad_norms(layers))]
        if clipped:
            torch.nn.utils.clip_grads_with_norm_(params, cfg.clip, torch.tensor(gnorm))
        opt.step()
        now = time.perf_counter()
        if report is not None and (step % CHUNK_STEPS == 0 or now - last_report > CHUNK_SECONDS):
            report(pending, step - last_step)
            pending, last_report, last_step = [], now, step
    if report is not None and (pending or cfg.steps > last_step):
        report(pending, cfg.steps - last_step)  # a diverged run reports its skipped steps as done
        pending = []
    return pending


def _init_rows(*args) -> dict:
    return {"rows": measure_init(*args)}


def _train_rows(*args) -> dict:
    train(*args)  # its rows went out through `report` as they were measured
    return {}


def _task_fields(cfg: DepthConfig) -> dict:
    return {
        "d_model": cfg.d_model,
        "vocab_size": cfg.vocab_size,
        "noise": cfg.noise,
        "seq_len": cfg.seq_len,
        "batch_size": cfg.batch_size,
    }


# These layers are tiny: per-op overhead dominates and extra intra-op threads do not help (core.device.torch_threads).
CPU_THREADS = 1
UNDERFLOW = 1e-30  # gradients below this have met float32's floor (~1e-38 normal, 1e-45 subnormal) somewhere


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
    total = len(init_points) + len(runs) * cfg.steps
    rows, done = [], 0

    def emit(new: list[dict], advance: int, message: str):
        nonlocal done
        rows.extend(new)
        done += advance
        if on_progress is not None:
            on_progress(Progress(done, total, message, tuple(new)))

    for L, name, seed in init_points:
        common = {
            "model": name,
            "n_layers": L,
            "step": 0,
            "phase": "init",
            "seed": seed,
            "lr": math.nan,
            "warmup_steps": math.nan,
            "clip": math.nan,
            **_task_fields(cfg),
            **env,
        }
        fields = guard.guarded(
            functools.partial(_init_rows, name, cfg, L, seed, device), predicted_bytes(name, cfg, L), device
        )
        measured = fields.pop("rows", None) or [{"layer": math.nan, "grad_norm": math.nan, "loss": math.nan}]
        emit([{**common, "note": "", **fields, **r} for r in measured], 1, f"init {name} L={L} seed={seed}")

    for L, warmup, name, seed in runs:
        common = {
            "model": name,
            "n_layers": L,
            "phase": "train",
            "seed": seed,
            "lr": cfg.lr,
            "warmup_steps": warmup,
            "clip": cfg.clip,
            **_task_fields(cfg),
            **env,
        }
        message = f"train {name} L={L} warm-up={warmup} seed={seed}"
        predicted = predicted_bytes(name, cfg, L)

        def report(new, advance, common=common, message=message, predicted=predicted):
            emit(
                [{"status": "ok", "note": "", "predicted_bytes": predicted, **common, **r} for r in new],
                advance,
                message,
            )

        per_layer = seed < cfg.seed + cfg.layer_seeds
        fields = guard.guarded(
            functools.partial(_train_rows, name, cfg, L, warmup, seed, device, report, per_layer), predicted, device
        )
        if fields["status"] != "ok":  # refused or out of memory: one row with the predicted size, no metrics
            emit(
                [{**common, "step": math.nan, "layer": math.nan, "grad_norm": math.nan, "loss": math.nan, **fields}],
                cfg.steps,
                message,
            )
    return to_frame(rows)


def to_frame(rows) -> pd.DataFrame:
    """The result frame: every column of COLUMNS present (NaN where absent), `layer` as a nullable integer.

    Accepts row dicts or a frame, so a page's partial live rows read the same as a finished run.
    """
    df = pd.DataFrame(rows).copy()
    for c in COLUMNS:
        if c not in df.columns:
            df[c] = math.nan
    df = df[list(COLUMNS) + [c for c in df.columns if c not in COLUMNS]]
    df["layer"] = df["layer"].astype("Int64")  # empty for whole-model rows
    return df


# ---------------------------------------------------------------- reading the results


def loss_bounds(df: pd.DataFrame) -> tuple[float, float]:
    """(ceiling, floor) of the loss, both formulas: log(vocab) for a uniform guess, the chain's entropy."""
    V, noise = int(df["vocab_size"].iloc[0]), float(df["noise"].iloc[0])
    return math.log(V), chain_entropy(V, noise)


RUN_KEYS = ("model", "n_layers", "warmup_steps", "seed", "lr", "clip")


def _source_keys(df: pd.DataFrame) -> list[str]:
    return [c for c in ("source", "device") if c in df.columns]


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per training run: final loss, share of the learnable gap closed, outcome, divergence, clipping.

    outcome: 'trained' (closed at least LEARNED_FRACTION of the gap between log V and the chain's entropy),
    'stalled' (did not, including runs that learned and then collapsed), 'diverged' (NaN/inf), or the guard's
    'skipped'/'oom'.
    """
    cols = [
        *RUN_KEYS,
        *_source_keys(df),
        "status",
        "final_loss",
        "gap_closed",
        "outcome",
        "diverged_step",
        "clipped_share",
        "logged_steps",
    ]
    if df is None or not len(df) or "phase" not in df:
        return pd.DataFrame(columns=cols)
    df = to_frame(df)
    runs = df[(df["phase"] == "train") & df["layer"].isna()]
    if not len(runs):
        return pd.DataFrame(columns=cols)
    out = []
    for key, g in runs.groupby([*RUN_KEYS, *_source_keys(df)], sort=False, dropna=False):
        ceiling, floor = loss_bounds(g)
        ok = g[g["status"] == "ok"].sort_values("step")
        bad = g[g["status"] != "ok"]
        status = "diverged" if (bad["status"] == "diverged").any() else (bad["status"].iloc[0] if len(bad) else "ok")
        final = float(ok["loss"].tail(max(1, math.ceil(FINAL_FRACTION * len(ok)))).mean()) if len(ok) else math.nan
        gap = (ceiling - final) / (ceiling - floor) if len(ok) else math.nan
        if status == "ok":
            outcome = "trained" if gap >= LEARNED_FRACTION else "stalled"
        else:
            outcome = status
        clipped = ok["clipped"].astype(bool) if len(ok) else pd.Series(dtype=bool)
        out.append(
            {
                **dict(zip([*RUN_KEYS, *_source_keys(df)], key)),
                "status": status,
                "final_loss": final,
                "gap_closed": gap,
                "outcome": outcome,
                "diverged_step": float(bad["step"].min()) if status == "diverged" else math.nan,
                "clipped_share": float(clipped.mean()) if len(clipped) else math.nan,
                "logged_steps": len(ok),
            }
        )
    return pd.DataFrame(out, columns=cols)


def init_profile(df: pd.DataFrame) -> pd.DataFrame:
    """Per-layer gradient norm at initialisation, geometric mean over seeds: model, n_layers, layer, grad_norm."""
    init = to_frame(df) if len(df) and "phase" in df else pd.DataFrame()
    init = init[(init["phase"] == "init") & (init["status"] == "ok") & init["layer"].notna()] if len(init) else init
    if not len(init):
        return pd.DataFrame(columns=["model", "n_layers", "layer", "grad_norm"])
    logs = init.assign(log_g=lambda x: x["grad_norm"].astype(float).clip(lower=1e-300).map(math.log))
    g = logs.groupby(["model", "n_layers", "layer"], sort=False)["log_g"].mean().map(math.exp)
    return g.rename("grad_norm").reset_index()


def _num(x: float) -> str:
    """Two significant digits; a geometric mean that hit the 1e-300 floor was an exact 0 (float underflow)."""
    if not math.isfinite(x):
        return "–"
    return "0" if x <= 1e-299 else f"{x:.2g}"


def _failed(s: pd.DataFrame) -> tuple[int, int]:
    ran = s[s["outcome"].isin(["trained", "stalled", "diverged"])]
    return int((ran["outcome"] != "trained").sum()), len(ran)


def _shape(ratio: float) -> str:
    return "up" if ratio > 2 else "down" if ratio < 0.5 else "flat"


def _init_takeaways(df: pd.DataFrame, tr) -> list[str]:
    prof = init_profile(df)
    if not len(prof):
        return []
    out = []
    first = prof[prof["layer"] == 1].set_index(["model", "n_layers"])["grad_norm"]
    last = prof[prof["layer"] == prof["n_layers"]].set_index(["model", "n_layers"])["grad_norm"]
    if "lstm" in first.index.get_level_values(0):
        g = first["lstm"].sort_index()
        if len(g) >= 2:
            d0, d1 = int(g.index[0]), int(g.index[-1])
            # per-layer loss over the depths whose gradient is still well above float underflow
            usable = g[g > UNDERFLOW]
            dd = int(usable.index[-1]) if len(usable) >= 2 else d1
            factor = (g.iloc[0] / g[dd]) ** (1 / (dd - d0)) if g[dd] > 0 and dd > d0 else math.inf
            key = "depth.take.lstm_init" if factor >= 1.5 else "depth.take.lstm_init_flat"
            out.append(
                tr(
                    key,
                    d0=d0,
                    d1=d1,
                    g0=_num(g.iloc[0]),
                    g1=_num(g.iloc[-1]),
                    factor=_num(factor),
                    top=_num(last.get(("lstm", d1), math.nan)),
                )
            )
            if ("lstm_residual", d1) in first.index:
                out.append(
                    tr(
                        "depth.take.res_init",
                        d1=d1,
                        g=_num(first[("lstm_residual", d1)]),
                        top=_num(last.get(("lstm_residual", d1), math.nan)),
                    )
                )
    if "no_residual" in first.index.get_level_values(0):
        g = first["no_residual"].sort_index()
        if len(g) >= 2 and ("pre_ln", int(g.index[-1])) in first.index:
            d0, d1 = int(g.index[0]), int(g.index[-1])
            out.append(
                tr(
                    "depth.take.nores_init",
                    d0=d0,
                    d1=d1,
                    g0=_num(g.iloc[0]),
                    g1=_num(g.iloc[-1]),
                    pre=_num(first[("pre_ln", d1)]),
                )
            )
    both = [
        L
        for L in sorted(set(first.index.get_level_values(1)))
        if L >= 4 and all((m, L) in first.index and (m, L) in last.index for m in ("post_ln", "pre_ln"))
    ]
    if both:
        L = both[-1]
        r_post, r_pre = last[("post_ln", L)] / first[("post_ln", L)], last[("pre_ln", L)] / first[("pre_ln", L)]
        matches = (_shape(r_post) == "up") + (_shape(r_pre) == "flat")
        verdict = ("depth.verdict.match", "depth.verdict.partial", "depth.verdict.nomatch")[2 - matches]
        out.append(
            tr(
                "depth.take.xiong",
                L=L,
                r_post=_num(r_post),
                r_pre=_num(r_pre),
                shape_post=tr(f"depth.shape.{_shape(r_post)}"),
                shape_pre=tr(f"depth.shape.{_shape(r_pre)}"),
                verdict=tr(verdict),
            )
        )
    return out


def _rate(s: pd.DataFrame) -> float:
    f, n = _failed(s)
    return f / n if n else math.nan


def _per_depth(s: pd.DataFrame, tr) -> str:
    """'1/3 at 2 layers, 3/3 at 8 layers' — failed of run, per depth (all rows of `s` pooled per depth)."""
    return tr("depth.take.sep").join(
        tr("depth.take.item", f=f, n=n, L=int(L)) for L, g in s.groupby("n_layers") for f, n in [_failed(g)]
    )


def _layers(depths, tr) -> str:
    return tr("depth.take.sep").join(str(int(L)) for L in depths)


def _warmup_takeaways(ran: pd.DataFrame, tr) -> list[str]:
    """Post-LN vs Pre-LN without warm-up, per depth; then Post-LN with the longest warm-up against without."""
    post, pre = ran[ran["model"] == "post_ln"], ran[ran["model"] == "pre_ln"]
    post0, pre0 = post[post["warmup_steps"] == 0], pre[pre["warmup_steps"] == 0]
    depths = sorted(set(post0["n_layers"]) & set(pre0["n_layers"]))
    if not depths:
        return []
    post0, pre0 = post0[post0["n_layers"].isin(depths)], pre0[pre0["n_layers"].isin(depths)]
    shown = [L for L in depths if _rate(post0[post0["n_layers"] == L]) > _rate(pre0[pre0["n_layers"] == L])]
    lr = _num(float(ran["lr"].iloc[0]))
    key = "depth.take.warmup_shown" if shown else "depth.take.warmup_not_shown"
    out = [tr(key, lr=lr, post=_per_depth(post0, tr), pre=_per_depth(pre0, tr), shown=_layers(shown, tr))]
    warm = post[(post["warmup_steps"] > 0) & post["n_layers"].isin(depths)]
    if len(warm):
        w = int(warm["warmup_steps"].max())
        warm = warm[warm["warmup_steps"] == w]
        rescued = [L for L in depths if _rate(warm[warm["n_layers"] == L]) < _rate(post0[post0["n_layers"] == L])]
        still = [L for L in depths if _failed(warm[warm["n_layers"] == L])[0] > 0]
        key = (
            "depth.take.warmup_no_help"
            if not rescued
            else "depth.take.warmup_partly"
            if still
            else "depth.take.warmup_helped"
        )
        out.append(
            tr(
                key,
                w=w,
                warm=_per_depth(warm, tr),
                cold=_per_depth(post0, tr),
                rescued=_layers(rescued, tr),
                still=_layers(still, tr),
            )
        )
    return out


def _train_takeaways(df: pd.DataFrame, tr) -> list[str]:
    summ = summarize(df)
    ran = summ[summ["outcome"].isin(["trained", "stalled", "diverged"])]
    if not len(ran):
        return [tr("depth.take.no_training")]
    out = _warmup_takeaways(ran, tr)
    D = int(ran["n_layers"].max())
    nores, pre = ran[ran["model"] == "no_residual"], ran[ran["model"] == "pre_ln"]
    if len(nores[nores["n_layers"] == D]) and len(pre[pre["n_layers"] == D]):
        shown = _rate(nores[nores["n_layers"] == D]) > _rate(pre[pre["n_layers"] == D])
        key = "depth.take.nores_shown" if shown else "depth.take.nores_not_shown"
        out.append(tr(key, nores=_per_depth(nores, tr), pre=_per_depth(pre, tr), d=D))
    plain, res = ran[ran["model"] == "lstm"], ran[ran["model"] == "lstm_residual"]
    if len(plain[plain["n_layers"] == D]) and len(res[res["n_layers"] == D]):

        def gap(s):
            return tr("depth.take.sep").join(
                tr("depth.take.gap_item", p=f"{100 * g['gap_closed'].mean() + 0:.0f}".replace("-0", "0"), L=int(L))
                for L, g in s.groupby("n_layers")
            )

        p, q = (100 * s[s["n_layers"] == D]["gap_closed"].mean() for s in (plain, res))
        key = "depth.take.lstm_train_shown" if p < q - 10 else "depth.take.lstm_train_not_shown"
        out.append(tr(key, plain=gap(plain), res=gap(res), d=D, fp=_per_depth(plain, tr), fq=_per_depth(res, tr)))
    div = summ[summ["outcome"] == "diverged"]
    if len(div):
        runs = tr("depth.take.sep").join(
            tr(
                "depth.take.diverged_item",
                model=tr(f"depth.model.{r.model}"),
                L=int(r.n_layers),
                seed=int(r.seed),
                step=int(r.diverged_step),
            )
            for r in div.itertuples()
        )
        out.append(tr("depth.take.diverged", n=len(div), total=len(ran), runs=runs))
    clip = ran[ran["clip"] > 0]
    if len(clip):
        share = clip.groupby("model")["clipped_share"].mean()
        out.append(
            tr(
                "depth.take.clipping",
                clip=_num(float(clip["clip"].iloc[0])),
                pct=f"{100 * clip['clipped_share'].mean():.0f}",
                model=tr(f"depth.model.{share.idxmax()}"),
                pm=f"{100 * share.max():.0f}",
            )
        )
    return out


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Sentences computed from the rows of one run: gradients at initialisation, then training outcomes."""
    if df is None or not len(df) or "phase" not in df:
        return []
    df = to_frame(df)
    return _init_takeaways(df, tr) + _train_takeaways(df, tr)


EXPERIMENT = Experiment(
    "depth",
    DepthConfig,
    run,
    PRESETS,
    "per-layer gradients at init and training stability vs depth: LSTM stacks (with/without "
    "residuals) vs Post-LN, Pre-LN and ablated Transformers",
    takeaways,
)
