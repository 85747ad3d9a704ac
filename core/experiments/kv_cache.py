"""The KV cache at inference: multi-head (MHA) vs grouped-query (GQA) vs multi-query attention (MQA).

A decoder generating token t attends to the keys and values of all earlier tokens, so it keeps them: per layer and
per KV head, two head_dim vectors per token. The cache grows linearly with the context and, for a large model and
a long context, outgrows the weights. GQA (Ainslie et al. 2023) and MQA (Shazeer 2019) share each K/V head among
several query heads, shrinking the cache by n_heads / n_kv_heads. An RNN keeps a fixed-size state instead.

Rows of three kinds: `formula` (real open models' configs, `core.kv_cache_bytes`), `measured` (a tiny decoder
with n_kv_heads ∈ {H, H/4, 1} generating tokens with a real cache, whose tensors are counted byte by byte) and the
`measured` state of an LSTM of the same width on the same tokens.
"""

from __future__ import annotations

import dataclasses
import math
import time

import pandas as pd
import torch
from torch import nn

from core.config import Experiment, spec
from core.experiments.common import Rows
from core.findings.kv_cache import STATE, takeaways
from core.harness.device import DEVICES, environment, one_thread, resolve_device, synchronize, threads_used
from core.harness.memory_formulas import DTYPE_BYTES, MODEL_PRESETS, ModelShape, kv_cache_bytes
from core.models.decoder import TinyDecoder
from core.store.results import tidy

SCHEMES = ("mha", "gqa", "mqa")
DTYPES = ("float32", "bfloat16", "float16")
COLUMNS = ("model", "scheme", "hypothetical", "kind", "n_layers", "n_heads", "n_kv_heads", "head_dim", "seq_len",
           "batch_size", "bytes_per_elem", "cache_bytes", "measured_bytes", "ms_per_token", "device", "status", "note",
           "seed")  # fmt: skip
TEXT = ("model", "scheme", "kind")  # COLUMNS that hold words; FLAGS yes or no; the rest numbers
FLAGS = ("hypothetical",)


@dataclasses.dataclass(frozen=True)
class KVCacheConfig:
    schemes: tuple[str, ...] = spec(SCHEMES, choices=SCHEMES, help="mha: H KV heads, gqa: H/4, mqa: 1")
    models: tuple[str, ...] = spec(
        ("Llama-2-7B", "Llama-2-70B", "Llama-3-8B", "Falcon-7B"),
        choices=tuple(MODEL_PRESETS),
        help="real model configs for the formula rows",
    )
    contexts: tuple[int, ...] = spec(
        (1024, 4096, 32768, 131072, 1048576), lo=1, hi=2**24, help="context lengths for the formula rows"
    )
    model_dtype: str = spec("bfloat16", choices=tuple(DTYPE_BYTES), help="cache precision of the real models")
    n_layers: int = spec(2, lo=1, hi=16, help="tiny decoder: layers")
    n_heads: int = spec(8, lo=1, hi=64, help="tiny decoder: query heads")
    head_dim: int = spec(16, lo=1, hi=256, help="tiny decoder: head size")
    gen_tokens: int = spec(256, lo=1, hi=16384, help="tokens the tiny decoder generates")
    record_every: int = spec(32, lo=1, hi=16384, help="measure the cache every this many tokens")
    batch_size: int = spec(1, lo=1, hi=64)
    dtype: str = spec("float32", choices=DTYPES, help="tiny decoder's precision")
    vocab_size: int = spec(64, lo=2, hi=65536)
    device: str = spec("auto", choices=DEVICES)
    seed: int = spec(0, lo=0, hi=2**31 - 1)

    def check(self):
        if "gqa" in self.schemes and (self.n_heads % 4 or self.n_heads < 4):
            raise ValueError(f"n_heads: {self.n_heads} must be a multiple of 4 for gqa (H/4 KV heads)")
        if self.record_every > self.gen_tokens:
            raise ValueError(f"record_every: {self.record_every} must be <= gen_tokens ({self.gen_tokens})")


EVERY_MODEL = {"models": tuple(MODEL_PRESETS), "contexts": (1024, 2048, 4096, 8192, 32768, 131072, 524288, 1048576)}
PRESETS = {
    "quick": {"gen_tokens": 128, "record_every": 16},
    # for testing the command line and scripts/gpu_reference.sh
    "tiny": {"gen_tokens": 16, "record_every": 8, "n_layers": 1, "models": ("Llama-2-7B",), "contexts": (1024,)},
    # scripts/gpu_reference.sh's preset, for its limit of 20 s (sizing: docs/GPU.md)
    "gpu": {"gen_tokens": 1024, "record_every": 64, **EVERY_MODEL},
    "full": {"gen_tokens": 2048, "record_every": 128, **EVERY_MODEL},
}


def kv_heads(scheme: str, n_heads: int) -> int:
    return {"mha": n_heads, "gqa": max(1, n_heads // 4), "mqa": 1}[scheme]


def crossing_tokens(shape: ModelShape, bytes_per_elem: float, batch_size: int, memory_bytes: float) -> float:
    """Context length at which the cache alone fills `memory_bytes` (formula)."""
    per_token = kv_cache_bytes(shape.n_layers, shape.n_kv_heads, shape.head_dim, 1, batch_size, bytes_per_elem)
    return memory_bytes / per_token


def cache_row(
    model: str,
    scheme: str,
    shape: tuple,
    seq_len: int,
    batch_size: int,
    bytes_per_elem: float,
    cache_bytes: float | None = None,
    **more,
) -> dict:
    """A row of a cache's size, by formula unless `cache_bytes` is given; `shape` = (layers, query heads, K/V heads,
    head size); `more` adds fields or replaces them (a measured row, the LSTM's state)."""
    n_layers, _, n_kv, head_dim = shape
    if cache_bytes is None:
        cache_bytes = kv_cache_bytes(n_layers, n_kv, head_dim, seq_len, batch_size, bytes_per_elem)
    return {
        "model": model,
        "scheme": scheme,
        "hypothetical": False,
        "kind": "formula",
        **dict(zip(("n_layers", "n_heads", "n_kv_heads", "head_dim"), shape)),
        "seq_len": seq_len,
        "batch_size": batch_size,
        "bytes_per_elem": bytes_per_elem,
        "cache_bytes": cache_bytes,
        **more,
    }


def calculator_frame(shape: ModelShape, bytes_per_elem: float, batch_size: int, contexts) -> pd.DataFrame:
    """Formula rows for one model shape under MHA (all heads), its own scheme, and MQA (one K/V head)."""
    variants = dict.fromkeys([shape.n_heads, shape.n_kv_heads, 1])  # ordered, without repeats
    rows = []
    for n_kv in variants:
        scheme = "mha" if n_kv == shape.n_heads else "mqa" if n_kv == 1 else "gqa"
        dims = (shape.n_layers, shape.n_heads, n_kv, shape.head_dim)
        rows += [cache_row(shape.name, scheme, dims, n, batch_size, bytes_per_elem) for n in contexts]
    return pd.DataFrame(rows)


# ---- a tiny decoder with a real KV cache ---------------------------------------------------------------------


def cache_storage_bytes(cache) -> int:
    """Bytes of the tensors the cache actually holds, each storage counted once."""
    storages = {}
    for pair in cache:
        for t in pair:
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return int(sum(storages.values()))


def _generate(cfg: KVCacheConfig, scheme: str, device: torch.device):
    """Greedy generation with the cache; yields (tokens so far, measured cache bytes, ms per token) every few steps."""
    torch.manual_seed(cfg.seed)
    dtype = getattr(torch, cfg.dtype)
    model = TinyDecoder(cfg.vocab_size, cfg.n_layers, cfg.n_heads, kv_heads(scheme, cfg.n_heads), cfg.head_dim)
    model = model.to(device, dtype).eval()
    token = torch.zeros(cfg.batch_size, 1, dtype=torch.long, device=device)
    cache = None
    t0 = time.perf_counter()
    with torch.no_grad(), one_thread():
        for step in range(1, cfg.gen_tokens + 1):
            logits, cache = model(token, cache)
            token = logits[:, -1:].argmax(-1)
            if step % cfg.record_every == 0 or step == cfg.gen_tokens:
                synchronize(device)
                ms = (time.perf_counter() - t0) * 1e3 / cfg.record_every
                yield step, cache_storage_bytes(cache), ms
                t0 = time.perf_counter()


def _rnn_states(cfg: KVCacheConfig, device: torch.device):
    """An LSTM as wide as the decoder reads the same number of tokens; yields its (h, c) state bytes."""
    torch.manual_seed(cfg.seed)
    d = cfg.n_heads * cfg.head_dim
    dtype = getattr(torch, cfg.dtype)
    embed = nn.Embedding(cfg.vocab_size, d).to(device, dtype)
    lstm = nn.LSTM(d, d, num_layers=cfg.n_layers, batch_first=True).to(device, dtype)
    token = torch.zeros(cfg.batch_size, 1, dtype=torch.long, device=device)
    state = None
    with torch.no_grad(), one_thread():
        for step in range(1, cfg.gen_tokens + 1):
            _, state = lstm(embed(token), state)  # the state is replaced each step, never appended to
            if step % cfg.record_every == 0 or step == cfg.gen_tokens:
                yield step, sum(s.untyped_storage().nbytes() for s in state)


def run(cfg: KVCacheConfig, on_progress=None) -> pd.DataFrame:
    device = resolve_device(cfg.device)
    env = environment(device)
    e_model, e_tiny, B = DTYPE_BYTES[cfg.model_dtype], DTYPE_BYTES[cfg.dtype], cfg.batch_size
    ok = {"status": "ok", "seed": cfg.seed, **env}
    formula = {"measured_bytes": math.nan, **ok}
    measured = {"kind": "measured", "note": "", **ok, "threads": threads_used(device, 1)}
    out = Rows(len(cfg.schemes) + 2, on_progress)  # formula rows, one generation per scheme, the LSTM
    new = []
    for name in cfg.models:
        m = MODEL_PRESETS[name]
        # the model as released, and (if it shares K/V heads) the same model as if every head kept its own K/V
        variants = [(m.scheme, m.n_kv_heads, False)] + ([("mha", m.n_heads, True)] if m.n_kv_heads != m.n_heads else [])
        for scheme, n_kv, hypothetical in variants:
            dims, known = (m.n_layers, m.n_heads, n_kv, m.head_dim), {"hypothetical": hypothetical, "note": m.source}
            new += [cache_row(name, scheme, dims, n, cfg.batch_size, e_model, **known, **formula) for n in cfg.contexts]
    out.add(new, "formula rows", advance=1)
    for scheme in cfg.schemes:
        dims = (cfg.n_layers, cfg.n_heads, kv_heads(scheme, cfg.n_heads), cfg.head_dim)
        new = [
            cache_row("tiny decoder", scheme, dims, step, B, e_tiny, measured_bytes=held, ms_per_token=ms, **measured)
            for step, held, ms in _generate(cfg, scheme, device)
        ]
        out.add(new, f"tiny decoder, {scheme}", advance=1)
    d = cfg.n_heads * cfg.head_dim
    dims, state = (cfg.n_layers, math.nan, math.nan, d), 2 * cfg.n_layers * B * d * e_tiny  # h and c per layer
    new = [
        cache_row("tiny LSTM", STATE, dims, step, B, e_tiny, cache_bytes=state, measured_bytes=held, **measured)
        for step, held in _rnn_states(cfg, device)
    ]
    out.add(new, "LSTM state", advance=1)
    return tidy(out.rows, COLUMNS)


EXPERIMENT = Experiment(
    "kv_cache",
    KVCacheConfig,
    run,
    PRESETS,
    "KV cache bytes vs context: MHA vs GQA vs MQA (real configs by formula, a tiny decoder measured) vs an RNN's state",
    takeaways,
    point=("scheme",),
)
