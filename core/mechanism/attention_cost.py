"""Page 4's instant view: exact bytes, at n tokens, for a model of L layers and H heads of size head_dim, against
this device's memory: the n × n scores a naive layer keeps for backward, what FlashAttention keeps instead, and a
decoder's KV cache with every head, grouped heads (GQA) and one shared head (MQA)."""

from __future__ import annotations

import pandas as pd

from core.harness.memory_formulas import format_bytes, kv_cache_bytes
from core.models import attention
from core.models.attention import NO_BACKEND, Shape

HEAD_DIM = 64  # the head size of the view's model (GPT-2's, Llama's is 128)
GROUP = 4  # query heads per KV head in the GQA bar (Llama-3-8B: 32 query heads, 8 KV heads)
KV_BYTES = 2  # a KV cache in bf16, as served
BYTES = 4  # training in fp32, as the page measures


FUSED = attention.BACKENDS[1]  # FlashAttention's backend of scaled_dot_product_attention


def _saved(s: Shape, memory_exponent: int, backend: str) -> float:
    """Bytes kept for backward by the exact-softmax implementation whose memory grows as n^memory_exponent."""
    name = attention.find(attention.IMPLS, computes="softmax", memory_exponent=memory_exponent)
    return attention.get(name).saved_formula(s, backend)


def kv_heads(n_heads: int) -> dict[str, int]:
    """KV heads of each scheme for n_heads query heads: MHA all, GQA n_heads ÷ GROUP (at least 1), MQA one."""
    return {"mha": n_heads, "gqa": max(1, n_heads // GROUP), "mqa": 1}


def bars(n: int, n_heads: int, n_layers: int, batch_size: int = 1) -> pd.DataFrame:
    """One row per bar: kind ('train' kept for backward, or 'decode' KV cache), what, bytes. Exact formulas."""
    s = Shape(batch_size, n_heads, n, HEAD_DIM, BYTES)
    rows = [
        ("train", "scores", n_layers * _saved(s, memory_exponent=2, backend=NO_BACKEND)),
        ("train", "fused", n_layers * _saved(s, memory_exponent=1, backend=FUSED)),
    ]
    for scheme, h in kv_heads(n_heads).items():
        rows.append(("decode", f"kv_{scheme}", kv_cache_bytes(n_layers, h, HEAD_DIM, n, batch_size, KV_BYTES)))
    return pd.DataFrame(rows, columns=["kind", "what", "bytes"]).astype({"bytes": float})


def wall(frame: pd.DataFrame, memory_bytes: float) -> dict[str, bool]:
    """Which bars fit in memory_bytes."""
    return {r.what: bool(r.bytes <= memory_bytes) for r in frame.itertuples()}


def first_over(n_heads: int, n_layers: int, memory_bytes: float, what: str, lengths) -> int | None:
    """The shortest of `lengths` at which bar `what` exceeds memory_bytes (None if none does)."""
    for n in lengths:
        if float(bars(n, n_heads, n_layers).set_index("what").loc[what, "bytes"]) > memory_bytes:
            return n
    return None


def lines(frame: pd.DataFrame, n: int, n_heads: int, n_layers: int, memory_bytes: float, tr) -> list[str]:
    b = frame.set_index("what")["bytes"]
    out = [tr("attention_cost.instant.scores", n=f"{n:,}", H=n_heads, L=n_layers, naive=format_bytes(b["scores"]),
              flash=format_bytes(b["fused"]), ratio=f"{b['scores'] / b['fused']:,.0f}")]  # fmt: skip
    out.append(tr("attention_cost.instant.kv", mha=format_bytes(b["kv_mha"]), gqa=format_bytes(b["kv_gqa"]),
                  mqa=format_bytes(b["kv_mqa"]), groups=kv_heads(n_heads)["gqa"]))  # fmt: skip
    over = [w for w, fits in wall(frame, memory_bytes).items() if not fits]
    key = "attention_cost.instant.wall_over" if over else "attention_cost.instant.wall_fits"
    out.append(
        tr(key, memory=format_bytes(memory_bytes), over=", ".join(tr(f"attention_cost.instant.bar.{w}") for w in over))
    )
    return out
