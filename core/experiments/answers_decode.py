"""Page 5, inference: a fixed state against a growing cache, measured token by token.

Each mixer of core.models.mixers reads a context with its own exact prefill, then is timed over `gen_tokens`
single-token steps; what it keeps per sequence between tokens is counted byte by byte (`state_bytes`: a recurrent
state, a window's keys and values, a convolution's buffers, or the KV cache that grows per token, Shazeer 2019).
One sequence, one thread: decode steps are too tiny to split.
"""

from __future__ import annotations

import dataclasses
import math
import time

import pandas as pd
import torch

from core.config import Experiment, spec
from core.experiments.common import MixerSizes, Rows, copied, quartiles, tagged
from core.findings.answers_decode import decode_takeaways
from core.harness import cancel, guard
from core.harness.device import DEVICES, environment, resolve_device, synchronize, threads_used, torch_threads
from core.harness.memory_formulas import format_bytes
from core.models import registry
from core.models.mixers.base import state_bytes
from core.models.registry import ANSWERS, Spec
from core.store.results import tidy
from core.terms import status

COLUMNS = ("mixer", "family", "context_len", "state_bytes", "predicted_bytes", "ms_per_token", "ms_iqr",
           "d_model", "window", "kernel", "levels", "d_state", "device", "status", "note", "seed")  # fmt: skip
TEXT = ("mixer", "family")  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ()
PREFILL_FLOATS = 8  # floats per token and d_model a prefill holds at once (input, projections), for the guard
PREFILL_CHUNK = 1024  # tokens read per prefill call (exact in pieces: tests/test_mixers.py)


@dataclasses.dataclass(frozen=True)
class AnswersDecodeConfig(MixerSizes):
    mixers: tuple[str, ...] = tagged(ANSWERS, help="which mixers decode")
    context_lens: tuple[int, ...] = spec(
        (256, 1024, 4096, 16384, 32768),
        lo=1,
        hi=131072,
        help="context already read when the timed tokens are generated",
    )
    d_model: int = spec(128, lo=8, hi=1024, help="width of every mixer")
    gen_tokens: int = spec(16, lo=1, hi=1024, help="tokens generated (and timed) at each context length")
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")
    seed: int = spec(0, lo=0, hi=2**31 - 1)

    @property
    def mixer_spec(self) -> Spec:
        return Spec(self.d_model, self.window, self.kernel, self.levels, d_state=self.d_state)

    def check(self):
        self.check_sizes()
        device = resolve_device(self.device)
        n = max(self.context_lens)
        need = max(predicted_bytes(m, self, n) for m in self.mixers)
        if not guard.fits(need, device):
            raise ValueError(
                f"context_lens: reading {n:,} tokens would need about {format_bytes(need)}; this "
                f"device's budget is {format_bytes(guard.budget_bytes(device))}"
            )


PRESETS = {
    "quick": {"context_lens": (64, 256, 1024, 4096), "gen_tokens": 8},
    "tiny": {"context_lens": (4, 16), "gen_tokens": 2, "d_model": 16, "window": 4, "levels": 3},
    # scripts/gpu_reference.sh's preset, for its limit of 30 s (sizing: docs/GPU.md)
    "gpu": {"context_lens": (256, 1024, 4096, 16384, 65536), "gen_tokens": 32},
    "full": {"context_lens": (64, 256, 1024, 4096, 16384, 32768), "gen_tokens": 32},
}


def predicted_bytes(m: str, cfg: AnswersDecodeConfig, context: int) -> float:
    """The state after `context` tokens, the whole input sequence and one prefill's working memory."""
    total = context + cfg.gen_tokens * len(cfg.context_lens)
    state = registry.get(m).state_floats(total, cfg.mixer_spec)
    return 4.0 * (state + (1 + PREFILL_FLOATS) * total * cfg.d_model)


def _decode(m: str, cfg: AnswersDecodeConfig, device: torch.device):
    """Yields (context length read, bytes kept after reading it, the next tokens' times in ms), per length."""
    torch.manual_seed(cfg.seed)
    layer = registry.get(m).mixer(cfg.mixer_spec).to(device).eval()
    contexts = sorted(cfg.context_lens)
    gen = torch.Generator().manual_seed(cfg.seed)
    x = torch.randn(1, contexts[-1] + cfg.gen_tokens * len(contexts), cfg.d_model, generator=gen).to(device)
    with torch.no_grad(), torch_threads(1):
        state, pos = layer.init_state(1, x), 0
        for c in contexts:
            for start in range(pos, c, PREFILL_CHUNK):  # in pieces, so a page's Stop is seen within one
                state = layer.prefill(x[:, start : min(c, start + PREFILL_CHUNK)], state)
                cancel.check()
            pos = max(pos, c)
            read, held, times = pos, state_bytes(state), []  # what is kept once the context is read
            for _ in range(cfg.gen_tokens):
                synchronize(device)
                t0 = time.perf_counter()
                _, state = layer.step(x[:, pos], state)
                synchronize(device)
                times.append((time.perf_counter() - t0) * 1e3)
                pos += 1
                cancel.check()
            yield read, held, times


def run(cfg: AnswersDecodeConfig, on_progress=None) -> pd.DataFrame:
    """One row per (mixer, context length)."""
    device = resolve_device(cfg.device)
    env = {**environment(device), "threads": threads_used(device, 1)}
    out = Rows(len(cfg.mixers) * len(cfg.context_lens), on_progress)
    for m in cfg.mixers:
        mixer = registry.get(m)
        sizes = copied(cfg, "d_model", "window", "kernel", "levels", "d_state", "seed")
        base = {**dict.fromkeys(COLUMNS, math.nan), "mixer": m, "family": mixer.family, **sizes, "note": ""}
        try:
            for read, held, times in _decode(m, cfg, device):
                q25, q50, q75 = quartiles(times)
                row = {
                    **base,
                    "context_len": read,
                    "state_bytes": held,
                    "status": status.OK,
                    "predicted_bytes": 4 * mixer.state_floats(read, cfg.mixer_spec),
                    "ms_per_token": q50,
                    "ms_iqr": q75 - q25,
                    **env,
                }
                out.add(row, f"{m}: {read:,} tokens read")
        except (RuntimeError, MemoryError) as err:
            if not guard.is_oom(err):
                raise
            guard.free(device)
            done = sum(r["mixer"] == m for r in out.rows)
            row = {**base, "context_len": sorted(cfg.context_lens)[done], **guard.oom_fields(err), **env}
            out.add(row, f"{m}: out of memory")
    return tidy(out.rows, COLUMNS)


EXPERIMENT = Experiment(
    "answers_decode",
    AnswersDecodeConfig,
    run,
    PRESETS,
    "token-by-token decoding: bytes kept per sequence and ms per token vs the context read, recurrent states "
    "vs the Transformer's KV cache",
    decode_takeaways,
    point=("mixer", "context_len"),
)
