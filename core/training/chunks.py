"""Training on a synthetic recall task in chunks of steps, a row after each: the loss at the query positions, held-out
accuracy, and the chunked run itself (`train_chunks`), which the long-range and recall-frontier experiments share."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from core.terms import status
from core.training import loop as train_loop
from core.training import tasks as task_lib


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


def train_chunks(model, sample, V: int, cfg, base: dict, emit, stop_at: float | None, label: str, device) -> None:
    """Train `model` (AdamW at cfg.lr, clipping at 1) in chunks of cfg.eval_every steps, emitting after each the mean
    loss, held-out accuracy and time. Every model of a run sees the same batches; with `stop_at` a run ends once two
    evaluations in a row reach it, and a divergence ends it with one 'diverged' row (`label` names the run)."""
    g, held_out = (torch.Generator().manual_seed(base["seed"] + i) for i in (0, 1))
    eval_batch = tuple(t.to(device) for t in sample(cfg.eval_size, held_out))
    batch = lambda: tuple(t.to(device) for t in sample(cfg.batch_size, g))
    losses, done, solved = [], [0], [0]  # solved: consecutive evaluations at or above stop_at
    chunks = math.ceil(cfg.steps / cfg.eval_every)

    def on_chunk(steps: int, train_s: float):
        done[0] += steps
        row = {
            **base,
            "step": done[0],
            "loss": sum(losses) / len(losses),
            "accuracy": accuracy(model, *eval_batch),
            "train_s": train_s,
            "status": status.OK,
            "note": "",
        }
        losses.clear()
        solved[0] = solved[0] + 1 if stop_at is not None and row["accuracy"] >= stop_at else 0
        stop = solved[0] >= 2 and done[0] < cfg.steps
        emit(row, chunks - math.ceil(done[0] / cfg.eval_every) if stop else 0)
        return stop

    spec = train_loop.TrainSpec(
        cfg.steps, cfg.lr, optimizer="adamw", clip=1.0, max_loss=train_loop.loss_bound(V), chunk_steps=cfg.eval_every
    )
    out = train_loop.train(model, batch, query_loss, spec, lambda s: losses.append(s.loss), on_chunk)
    if out.status == status.DIVERGED:
        row = {
            **base,
            "step": out.steps,
            "loss": math.nan,
            "accuracy": math.nan,
            "train_s": out.train_s,
            "status": out.status,
            "note": f"{label}: {out.note}; this run stopped",
        }
        emit(row, chunks - math.ceil(out.steps / cfg.eval_every))
