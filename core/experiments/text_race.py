"""The race, live: the real-text models trained from scratch on this device for the same seconds each, held-out bits
per byte against seconds of training (beside the shipped models' curves, core.experiments.real_text's train_curve).

The models take turns of about `turn_s` seconds until each has trained for `seconds`, so background load falls on
all alike; held-out loss is read after every round, untimed. Same width, layers as text_lm.n_layers_for
chooses, text_lm.TRAIN's batch, window, learning rate and warm-up, and no decay: the clock ends training.
"""

from __future__ import annotations

import dataclasses
import math
import time

import pandas as pd
import torch
import torch.nn.functional as F

from core.config import Experiment, spec
from core.experiments.common import Rows
from core.findings.text_training import race_takeaways
from core.harness import cancel
from core.harness.device import DEVICES, environment, resolve_device, synchronize
from core.models import registry
from core.models.layers import n_params
from core.store.results import tidy
from core.terms import status
from core.training import loop, text
from core.workloads import text_lm

COLUMNS = ("model", "seed", "step", "bytes", "seconds", "train_bits", "heldout_bits", "params", "window", "status",
           "note")  # fmt: skip
TEXT = ("model",)  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ()


@dataclasses.dataclass(frozen=True)
class TextRaceConfig:
    models: tuple[str, ...] = spec(
        ("lstm", "transformer"), choices=registry.tagged(text_lm.TAG), help="which models race"
    )
    seconds: float = spec(60.0, lo=1.0, hi=900.0, help="seconds of training each")
    turn_s: float = spec(2.0, lo=0.1, hi=30.0, help="seconds a model trains before the next one takes its turn")
    window: int = spec(256, lo=16, hi=4096, help="bytes per training window")
    batch_size: int = spec(text_lm.TRAIN["batch_size"], lo=1, hi=256, help="windows per step")
    d_model: int = spec(text_lm.TRAIN["d_model"], lo=16, hi=1024, help="width of every model")
    n_layers: int = spec(
        0, lo=0, hi=64, help="layers of each model (0: the count that brings it nearest 1 M parameters)"
    )
    lr: float = spec(text_lm.TRAIN["lr"], lo=1e-5, hi=0.1, help="AdamW's learning rate after the warm-up")
    warmup_steps: int = spec(20, lo=0, hi=10_000, help="steps of linear warm-up")
    eval_windows: int = spec(8, lo=1, hi=256, help="held-out windows read after every round")
    seed: int = spec(0, lo=0, hi=2**31 - 1)
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")


PRESETS = {
    "quick": {"seconds": 8.0, "turn_s": 1.0},  # 8 s a model, plus the held-out reads
    "tiny": {"seconds": 1.0, "turn_s": 0.5, "window": 64, "d_model": 32, "n_layers": 1, "eval_windows": 2},  # tests
    "gpu": {"seconds": 4.0, "turn_s": 1.0, "window": 1024, "batch_size": 32},
    "full": {"seconds": 60.0},  # the shipped reference and the page's race: a minute each
}


class Runner:
    """One model with its optimiser, trained a turn at a time; seconds counted around the steps only (synchronised)."""

    def __init__(self, name: str, cfg: TextRaceConfig, device: torch.device, texts: list[bytes]):
        torch.manual_seed(cfg.seed)
        self.name, self.cfg, self.device = name, cfg, device
        self.model = text_lm.build(name, cfg.d_model, cfg.n_layers or text_lm.n_layers_for(name, cfg.d_model)).to(
            device
        )
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.sampler = text.Sampler(texts, cfg.window, cfg.seed)  # the same windows for each
        self.step, self.seconds, self.losses, self.status, self.note = 0, 0.0, [], status.OK, ""
        self.bound = loop.loss_bound(text.VOCAB)

    def turn(self, budget: float) -> None:
        """Train until this turn's `budget` seconds are spent (at least one step)."""
        spent = 0.0
        while spent < budget and self.status == status.OK:
            cancel.check()
            xy = text_lm.as_tokens(self.sampler.batch(self.cfg.batch_size), self.device)
            synchronize(self.device)
            t0 = time.perf_counter()
            self.step += 1
            for group in self.opt.param_groups:
                group["lr"] = loop.lr_at(self.step, self.cfg.lr, self.cfg.warmup_steps)
            logits = self.model(xy[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), xy[:, 1:].reshape(-1))
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), text_lm.TRAIN["clip"])
            self.opt.step()
            value = float(loss.detach())
            synchronize(self.device)
            spent += time.perf_counter() - t0
            if not math.isfinite(value) or value > self.bound:
                self.status, self.note = status.DIVERGED, f"loss {value:.3g} at step {self.step}"
            self.losses.append(value)
        self.seconds += spent

    def heldout(self, windows: torch.Tensor) -> float:
        self.model.eval()
        bits = float(text_lm.byte_bits(self.model, windows).mean())
        self.model.train()
        return bits

    def row(self, windows: torch.Tensor) -> dict:
        train = sum(self.losses) / len(self.losses) / text_lm.LN2 if self.losses else math.nan
        self.losses = []
        held = self.heldout(windows) if self.status == status.OK else math.nan
        return {
            "model": self.name,
            "step": self.step,
            "bytes": self.step * self.cfg.batch_size * self.cfg.window,
            "seconds": self.seconds,
            "train_bits": train,
            "heldout_bits": held,
            "status": self.status,
            "note": self.note,
            "params": n_params(self.model),
        }


def run(cfg: TextRaceConfig, on_progress=None) -> pd.DataFrame:
    device = resolve_device(cfg.device)
    base = {"seed": cfg.seed, "window": cfg.window, **environment(device)}
    train_texts, held_texts = text.stdlib_split()
    held = text_lm.as_tokens(text.offset_windows(held_texts, cfg.window, cfg.eval_windows), device)
    runners = [Runner(name, cfg, device, train_texts) for name in cfg.models]
    rounds = math.ceil(cfg.seconds / cfg.turn_s)
    out = Rows(rounds, on_progress)
    out.add([{**base, **r.row(held)} for r in runners], "start", advance=0)  # step 0: the untrained models
    while any(r.seconds < cfg.seconds and r.status == status.OK for r in runners):
        new = []
        for r in runners:
            if r.seconds < cfg.seconds and r.status == status.OK:
                r.turn(min(cfg.turn_s, cfg.seconds - r.seconds))
                new.append({**base, **r.row(held)})
        slowest = (
            min(r.seconds for r in runners if r.status == status.OK)
            if any(r.status == status.OK for r in runners)
            else cfg.seconds
        )
        done = min(rounds, math.floor(slowest / cfg.turn_s + 1e-9))
        out.add(new, " · ".join(f"{r.name} {r.seconds:.0f} s" for r in runners), advance=done - out.done)
    return tidy(out.rows, COLUMNS)


EXPERIMENT = Experiment(
    "text_race",
    TextRaceConfig,
    run,
    PRESETS,
    "real text, live: the LSTM and the Transformer trained from scratch for the same seconds, taking turns",
    race_takeaways,
    point=("model",),
)
