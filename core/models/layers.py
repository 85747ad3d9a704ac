"""The layers every model is built from, behind one interface: `model(tokens) -> logits`.

A language model here is always embedding → a stack of layers, each (B, T, d) → (B, T, d) → vocabulary head
(`LanguageModel`); what differs between kinds is the layer, and `core.models.registry` says which. Recurrent layers
start from a zero state inside `forward`, so training and benchmark code never branch on model type.
The fast path and the explicit path sit side by side: a fused `nn.LSTM` beside an `nn.LSTMCell` step loop,
`scaled_dot_product_attention` beside the materialised softmax(QKᵀ)V.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel


def loop(update: Callable, state, *inputs: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """A recurrence one token after another, n dependent steps: `update(state, *inputs_t)` → (y_t, state) for each
    token of `inputs` along `dim`, the y_t stacked along it. unbind, not x[:, t]: the backward of one index op
    writes a zero tensor as large as x (O(n) per step)."""
    ys = []
    for inputs_t in zip(*(t.unbind(dim) for t in inputs)):
        y, state = update(state, *inputs_t)
        ys.append(y)
    return torch.stack(ys, dim=dim)


def merge_heads(z: torch.Tensor) -> torch.Tensor:
    """(B, H, T, hs) → (B, T, H·hs)."""
    B, H, T, hs = z.shape
    return z.transpose(1, 2).reshape(B, T, H * hs)


def split_heads(qkv: torch.Tensor, n_heads: int) -> tuple[torch.Tensor, ...]:
    """(B, T, 3d) → q, k, v, each (B, H, T, d/H)."""
    B, T, C = qkv.shape
    return tuple(z.view(B, T, n_heads, C // 3 // n_heads).transpose(1, 2) for z in qkv.chunk(3, dim=-1))


class Recurrent(nn.Module):
    """One fused recurrent layer (nn.RNN / nn.LSTM / nn.GRU: cuDNN or oneDNN where available) from a zero state."""

    def __init__(self, rnn: nn.Module):
        super().__init__()
        self.rnn = rnn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[0]  # (B, T, d): the output sequence; the final state is not needed


class LoopLSTM(nn.Module):
    """The recurrence made literal: one nn.LSTMCell call per time step, in a Python loop."""

    def __init__(self, d_model: int):
        super().__init__()
        self.cell = nn.LSTMCell(d_model, d_model)

    def _update(self, state: tuple, x_t: torch.Tensor) -> tuple[torch.Tensor, tuple]:
        h, c = self.cell(x_t, state)  # h_t = f(h_{t-1}, x_t)
        return h, (h, c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        zeros = x.new_zeros(x.shape[0], x.shape[2])  # (batch, channels)
        return loop(self._update, (zeros, zeros), x)  # T dependent steps


class Residual(nn.Module):
    """x + f(x): the skip connection GNMT (Wu et al. 2016) put between its LSTM layers."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.inner(x)


class RecurrentAttention(nn.Module):
    """An LSTM whose output at step t attends over its own hidden states 1…t (causal multi-head attention), with a
    residual around the attention: y_t = h_t + Attn(LN(h)_t; LN(h)_1…LN(h)_t). The decoder-side pattern of
    Bahdanau et al. (2015) and Luong et al. (2015) in a language model: attention gives every pair of tokens a
    one-step path, but each h_t still waits for h_{t−1}, so the n dependent steps of the recurrence stay.

    The LayerNorm is the Transformer block's pre-LN, put where attention reads: the LSTM's states are small at
    initialisation (|h| < 1 and mostly near 0), so without it every score is near 0, attention spreads evenly and
    its gradient is weak. On the long-range page's quick recall task (d = 60, width 32, lr 3e-3) the hybrid solved
    the fact in 100–150 steps with it in three seeds; without it, in 200 and 275 steps, and not within 500 in one."""

    def __init__(self, d_model: int, n_heads: int, impl: str = "sdpa", causal: bool = True):
        super().__init__()
        self.rnn = Recurrent(nn.LSTM(d_model, d_model, batch_first=True))
        self.norm = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_heads, impl, causal)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rnn(x)
        return h + self.attn(self.norm(h))


def set_forget_bias(lstm: nn.LSTM | nn.LSTMCell, value: float) -> None:
    """Forget-gate bias = `value` in every layer (gate order i, f, g, o; the two biases add, so one holds it)."""
    h = lstm.hidden_size
    suffixes = [f"_l{k}" for k in range(lstm.num_layers)] if isinstance(lstm, nn.LSTM) else [""]
    with torch.no_grad():
        for sfx in suffixes:
            getattr(lstm, f"bias_ih{sfx}")[h : 2 * h] = value
            getattr(lstm, f"bias_hh{sfx}")[h : 2 * h] = 0.0


def sinusoidal_positions(T: int, d: int, device, dtype) -> torch.Tensor:
    """(T, d) fixed sinusoidal position codes (Vaswani et al. 2017, §3.5); no length limit."""
    pos = torch.arange(T, device=device, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(T, d, device=device)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div[: d // 2])
    return pe.to(dtype)


def naive_attention(q, k, v, causal: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(QKᵀ/√d)V with the (B, H, T, T) score matrix materialised; returns (output, probabilities)."""
    T, S = q.shape[-2], k.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (B, H, T, S)
    if causal:
        mask = torch.ones(T, S, dtype=torch.bool, device=q.device).tril(S - T)
        scores = scores.masked_fill(~mask, float("-inf"))
    probs = scores.softmax(dim=-1)
    return probs @ v, probs


# the backends sdpa_kernel can force; 'auto' leaves the choice to SDPA
SDP_BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}  # fmt: skip


def linear_attention(q, k, v, causal: bool = False, eps: float = 1e-6) -> torch.Tensor:
    """Katharopoulos et al. 2020: φ(q)·(Σ φ(k)ᵀv) / φ(q)·Σ φ(k), φ = elu + 1. O(n) memory and time, not softmax."""
    fq, fk = F.elu(q) + 1, F.elu(k) + 1  # (B, H, n, d), positive feature maps
    if causal:
        kv = torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), dim=2)  # (B, H, n, d, d): prefix sums, O(n·d²)
        num = torch.einsum("bhnd,bhnde->bhne", fq, kv)
        den = torch.einsum("bhnd,bhnd->bhn", fq, fk.cumsum(dim=2))
    else:
        kv = torch.einsum("bhnd,bhne->bhde", fk, v)  # (B, H, d, d): the whole sequence summed once
        num = torch.einsum("bhnd,bhde->bhne", fq, kv)
        den = torch.einsum("bhnd,bhd->bhn", fq, fk.sum(dim=2))
    return num / (den.unsqueeze(-1) + eps)


def sdpa(q, k, v, backend: str = "auto", causal: bool = False) -> torch.Tensor:
    """scaled_dot_product_attention with the device's choice ('auto') or one backend forced via sdpa_kernel."""
    if backend == "auto":  # SDPA chooses
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    with sdpa_kernel([SDP_BACKENDS[backend]]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def cache_recall(keys: torch.Tensor, values: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """Pairs (B, n, d) kept one by one in a KV cache, read by softmax attention (SDPA): a state that grows with n."""
    return F.scaled_dot_product_attention(queries, keys, values)


def rotary(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding (Su et al. 2021, RoFormer) of (B, H, T, hs) queries or keys: each pair of channels
    turned by an angle proportional to its position, so q·k depends on the positions' difference alone."""
    T, hs = x.shape[-2], x.shape[-1]
    inv = base ** (-torch.arange(0, hs, 2, device=x.device, dtype=torch.float32) / hs)  # (hs/2,)
    ang = torch.arange(T, device=x.device, dtype=torch.float32)[:, None] * inv  # (T, hs/2)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class SelfAttention(nn.Module):
    """Multi-head causal self-attention; `impl` is 'sdpa' (fused kernels) or 'naive' (explicit, keeps probs);
    `rope` turns queries and keys by their positions (relative positions, no codes added to the input)."""

    def __init__(self, d_model: int, n_heads: int, impl: str = "sdpa", causal: bool = True, rope: bool = False):
        super().__init__()
        assert d_model % n_heads == 0, "d_model must be divisible by n_heads"
        self.n_heads, self.causal, self.rope = n_heads, causal, rope
        self.keeps_probs = impl == "naive"  # the explicit path; its probabilities can be read after a forward
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.last_probs: torch.Tensor | None = None  # (B, H, T, T) after a forward with impl='naive'

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = split_heads(self.qkv(x), self.n_heads)  # (B, H, T, hs)
        if self.rope:
            q, k = rotary(q), rotary(k)
        if self.keeps_probs:
            y, probs = naive_attention(q, k, v, self.causal)
            self.last_probs = probs.detach()
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(merge_heads(y))


class Block(nn.Module):
    """A Transformer block. norm='pre' (GPT-2 style), 'post' (2017 original) or 'none'; residual on or off."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        norm: str = "pre",
        residual: bool = True,
        impl: str = "sdpa",
        causal: bool = True,
    ):
        super().__init__()
        self.post_norm, self.residual = norm == "post", residual
        self.ln1 = nn.LayerNorm(d_model) if norm != "none" else nn.Identity()
        self.ln2 = nn.LayerNorm(d_model) if norm != "none" else nn.Identity()
        self.attn = SelfAttention(d_model, n_heads, impl, causal)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def _sub(self, x, f, ln):
        if self.post_norm:
            return ln(x + f(x)) if self.residual else ln(f(x))
        return x + f(ln(x)) if self.residual else f(ln(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._sub(x, self.attn, self.ln1)
        return self._sub(x, self.mlp, self.ln2)


class LanguageModel(nn.Module):
    """Embedding (+ sinusoidal positions) → `n_layers` layers from `make_layer` (+ final LayerNorm) → head.

    Every model kind has this shape and its layers in `.layers`, input side first. The parts are created in this
    order (embedding, layers, final norm, head), so a seed gives the same weights whatever the kind's layer is.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_layers: int,
        make_layer: Callable[[], nn.Module],
        positions: bool = False,
        final_norm: bool = False,
    ):
        super().__init__()
        self.positions = positions
        self.embed = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(make_layer() for _ in range(n_layers))
        self.final_norm = nn.LayerNorm(d_model) if final_norm else nn.Identity()
        self.head = nn.Linear(d_model, vocab_size)

    def body(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d) embeddings → (B, T, d) features before the head."""
        if self.positions:
            x = x + sinusoidal_positions(x.shape[1], x.shape[2], x.device, x.dtype)
        for layer in self.layers:
            x = layer(x)
        return self.final_norm(x)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.embed(tokens)))


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
