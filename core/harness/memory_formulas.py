"""Memory formulas for attention and the KV cache: the analytic side that the measurements are checked against.

The KV cache of multi-head (MHA), grouped-query (GQA, Ainslie et al. 2023) and multi-query attention (MQA,
Shazeer 2019) holds one key and one value vector per layer, per *KV* head, per token:
    bytes = 2 · n_layers · n_kv_heads · head_dim · seq_len · batch_size · bytes_per_elem.
Calculators that use the number of *query* heads overstate GQA/MQA caches (8× for Llama-2-70B).

Pure Python on purpose: `from core import kv_cache_bytes` must not import torch.
"""

from __future__ import annotations

import dataclasses
import math

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float8": 1, "int8": 1, "int4": 0.5}


def _positive(name: str, value, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name}: {value!r} is not a finite number")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name}: {value} must be {'>= 0' if allow_zero else '> 0'}")


def kv_cache_bytes(
    n_layers: int, n_kv_heads: int, head_dim: int, seq_len: int, batch_size: int = 1, bytes_per_elem: float = 2
) -> int:
    """Bytes of a KV cache: 2 (K and V) · layers · KV heads · head size · tokens · batch · bytes per element."""
    sizes = (n_layers, n_kv_heads, head_dim, batch_size, bytes_per_elem)
    for name, value in zip(("n_layers", "n_kv_heads", "head_dim", "batch_size", "bytes_per_elem"), sizes):
        _positive(name, value)
    _positive("seq_len", seq_len, allow_zero=True)
    return int(2 * n_layers * n_kv_heads * head_dim * seq_len * batch_size * bytes_per_elem)


KV_PAGE = 16  # tokens per page of a KV cache: vLLM's default block size (Kwon et al. 2023, PagedAttention)


def tokens_held(n: int, page: int = KV_PAGE) -> int:
    """Tokens a cache that grows a page at a time has room for after n tokens: whole pages, ⌈n / page⌉ · page."""
    return -(-n // page) * page


@dataclasses.dataclass(frozen=True)
class ModelShape:
    """The numbers of a decoder that set its KV cache and attention cost, copied from its published config."""

    name: str
    n_layers: int
    n_heads: int  # query heads
    n_kv_heads: int  # key/value heads: = n_heads for MHA, 1 for MQA, in between for GQA
    head_dim: int
    max_context: int  # the context length the model was released with
    source: str  # where the numbers come from

    @property
    def scheme(self) -> str:
        if self.n_kv_heads == self.n_heads:
            return "mha"
        return "mqa" if self.n_kv_heads == 1 else "gqa"


# Numbers from each model's config.json on the Hugging Face Hub (num_hidden_layers, num_attention_heads,
# num_key_value_heads, hidden_size / num_attention_heads, max_position_embeddings).
MODEL_PRESETS = {m.name: m for m in (
    ModelShape("GPT-2 small", 12, 12, 12, 64, 1024,
               "huggingface.co/openai-community/gpt2 config.json (n_layer, n_head, n_embd=768)"),
    ModelShape("Llama-2-7B", 32, 32, 32, 128, 4096, "huggingface.co/meta-llama/Llama-2-7b-hf config.json"),
    ModelShape("Llama-2-70B", 80, 64, 8, 128, 4096, "huggingface.co/meta-llama/Llama-2-70b-hf config.json"),
    ModelShape("Llama-3-8B", 32, 32, 8, 128, 8192, "huggingface.co/meta-llama/Meta-Llama-3-8B config.json"),
    ModelShape("Mistral-7B-v0.1", 32, 32, 8, 128, 32768, "huggingface.co/mistralai/Mistral-7B-v0.1 config.json"),
    ModelShape("Qwen2-7B", 28, 28, 4, 128, 131072, "huggingface.co/Qwen/Qwen2-7B config.json (hidden_size 3584)"),
    ModelShape("Falcon-7B", 32, 71, 1, 64, 2048,
               "huggingface.co/tiiuae/falcon-7b config.json (multi_query, hidden_size 4544)"),
)}  # fmt: skip


def model_kv_bytes_per_token(shape: ModelShape, bytes_per_elem: float = 2) -> int:
    return kv_cache_bytes(shape.n_layers, shape.n_kv_heads, shape.head_dim, 1, 1, bytes_per_elem)


# ---- attention during training: what one layer keeps for backward (exact for fp32 on CPU; see tests) ----


def score_bytes(batch_size: int, n_heads: int, seq_len: int, bytes_per_elem: float = 4) -> int:
    """One copy of the B·H·n·n score (or probability) matrix."""
    return int(batch_size * n_heads * seq_len * seq_len * bytes_per_elem)


def format_bytes(n: float) -> str:
    if n is None or not math.isfinite(n):
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"
