"""The model registry: one record per model kind holds everything that differs between kinds.

How to build a kind's layer, whether it is recurrent, how many dependent steps a layer takes for n tokens, its
analytic forward FLOPs and parameter count, what it keeps for backward, its initialisation: the record answers, so
no experiment, chart or page asks a kind's name (zoology's mixers/, lm-evaluation-harness's task registry).
Adding a kind is one `register(ModelKind(...))` call plus its catalogue strings (`model.<name>` in core/locales).

Torch is imported only when a layer is built: the home page and the findings read the records without it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from core import flops as fl

if TYPE_CHECKING:
    from torch import nn

    from core.models.layers import LanguageModel

RECURRENT, ATTENTION = "recurrent", "attention"  # the two families the chapter compares


@dataclasses.dataclass(frozen=True)
class LayerSpec:
    """What a layer is built from: width, heads, attention path, causality, LSTM forget-gate bias."""

    d_model: int
    n_heads: int | None = None  # None: heads of size 32 where d_model allows (n_heads_for)
    impl: str = "sdpa"  # attention: 'sdpa' (fused kernels) or 'naive' (explicit, its probabilities readable)
    causal: bool = True
    forget_bias: float | None = None  # None: PyTorch's own init

    @property
    def heads(self) -> int:
        return self.n_heads or n_heads_for(self.d_model)


def n_heads_for(d_model: int) -> int:
    """Heads of size 32 where d_model allows (at least one head)."""
    for h in (max(1, d_model // 32), 4, 2, 1):
        if d_model % h == 0:
            return h
    return 1


@dataclasses.dataclass(frozen=True)
class ModelKind:
    """A model kind: its layer and the facts about it that experiments, FLOP counts and charts need."""

    name: str
    family: str  # RECURRENT (information flows through a state, step by step) or ATTENTION
    make_layer: Callable[[LayerSpec], nn.Module]  # one layer, (B, T, d) → (B, T, d)
    layer_flops: Callable[..., int]  # forward FLOPs of one layer for (batch, seq_len, d_model, causal=True)
    layer_params: Callable[[int], int]  # parameters of one layer at width d_model
    activation_floats: int  # a generous count of floats per token and d_model kept per layer (memory guard)
    experiments: frozenset  # the experiments that offer this kind
    positions: bool = False  # sinusoidal positions added to the embedding (attention has no order of its own)
    final_norm: bool = False  # a LayerNorm before the head (Pre-LN stacks)
    fused: bool = True  # a library kernel (cuDNN/oneDNN, SDPA); False: an explicit Python loop
    twin: str | None = None  # the fused kind that computes the same function (for the explicit loop)
    representative: bool = False  # the family's model in the chapter's comparison (the LSTM, the Transformer)
    forget_gate: bool = False  # an LSTM forget gate whose bias LayerSpec.forget_bias sets
    residual: bool = False  # a skip connection around each layer
    norm: str = "none"  # LayerNorm placement: 'pre', 'post' or 'none'
    recurrent_weight: Callable[[nn.Module], object] | None = None  # a tanh RNN's W_hh, whose spectral radius matters
    color: str | None = None  # its colour on every chart (recurrent models warm, attention cool); None: a default
    table1_row: str | None = None  # the home page's Table 1 row it fills beyond the chapter's pair, if any

    @property
    def recurrent(self) -> bool:
        return self.family == RECURRENT

    def layer(self, spec: LayerSpec) -> nn.Module:
        """One layer at initialisation, its forget-gate bias set if asked."""
        layer = self.make_layer(spec)
        if self.forget_gate and spec.forget_bias is not None:
            from torch import nn

            from core.models.layers import set_forget_bias

            for m in layer.modules():
                if isinstance(m, (nn.LSTM, nn.LSTMCell)):
                    set_forget_bias(m, spec.forget_bias)
        return layer

    def build(self, vocab_size: int, d_model: int, n_layers: int, **spec) -> LanguageModel:
        """The language model of this kind: embedding → n_layers layers → head (LayerSpec fields as keywords)."""
        from core.models.layers import LanguageModel

        s = LayerSpec(d_model, **spec)
        return LanguageModel(vocab_size, d_model, n_layers, lambda: self.layer(s), self.positions, self.final_norm)

    def seq_steps(self, seq_len: int, n_layers: int) -> int:
        """Dependent steps on the critical path of one forward pass: n per recurrent layer, 1 per attention layer."""
        return (seq_len if self.recurrent else 1) * n_layers

    def n_params(self, vocab_size: int, d_model: int, n_layers: int) -> int:
        """Parameters without building the model (equals core.models.n_params of `build`, tested)."""
        outer = 2 * vocab_size * d_model + vocab_size + (2 * d_model if self.final_norm else 0)
        return n_layers * self.layer_params(d_model) + outer

    def forward_flops(self, batch_size: int, seq_len: int, d_model: int, n_layers: int, vocab_size: int,
                      causal: bool = True) -> int:  # fmt: skip
        """Forward FLOPs of the whole model as performed (causal attention: half the square; embedding: none).
        `causal=False` counts the whole square, as an unfused path (SDPA's math backend) computes it."""
        body = n_layers * self.layer_flops(batch_size, seq_len, d_model, causal=causal)
        return body + fl.head_forward(batch_size, seq_len, d_model, vocab_size)


KINDS: dict[str, ModelKind] = {}


def register(kind: ModelKind) -> ModelKind:
    if kind.family not in (RECURRENT, ATTENTION):
        raise ValueError(f"family: {kind.family!r} is not one of {RECURRENT}, {ATTENTION}")
    KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    KINDS.pop(name, None)


def get(name: str) -> ModelKind:
    if name not in KINDS:
        raise ValueError(f"model: {name!r} is not one of {', '.join(KINDS)}")
    return KINDS[name]


def family_of(name: str) -> str | None:
    """A model's family; None for a name no record knows (a row from another version of the lab)."""
    kind = KINDS.get(name)
    return kind.family if kind is not None else None


FALLBACK_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#bcbd22", "#17becf", "#7f7f7f")


def colors(models) -> tuple[list[str], list[str]]:
    """(domain, range) of a chart's colour scale over `models`: each kind's own colour, others from a palette."""
    domain = list(dict.fromkeys(models))
    spare = iter(FALLBACK_COLORS * (1 + len(domain) // len(FALLBACK_COLORS)))
    return domain, [(KINDS[m].color if m in KINDS and KINDS[m].color else next(spare)) for m in domain]


def names(experiment: str) -> tuple[str, ...]:
    """The kinds an experiment offers, in registration order."""
    return tuple(n for n, k in KINDS.items() if experiment in k.experiments)


def representative(family: str, among: Iterable[str] | None = None) -> str | None:
    """The family's model in the chapter's comparison among `among` (any registered kind if None), else its first."""
    pool = [n for n in (KINDS if among is None else dict.fromkeys(among)) if n in KINDS and KINDS[n].family == family]
    chosen = [n for n in pool if KINDS[n].representative]
    return (chosen or pool or [None])[0]


def find(among: Iterable[str], **facts) -> str | None:
    """The first kind among `among` whose record has every fact given (e.g. family=RECURRENT, residual=True)."""
    for n in dict.fromkeys(among):
        k = KINDS.get(n)
        if k is not None and all(getattr(k, f) == v for f, v in facts.items()):
            return n
    return None


# ---- the kinds ---------------------------------------------------------------------------------------------


def _fused(cls: str) -> Callable[[LayerSpec], nn.Module]:
    """A fused torch.nn.RNN / LSTM / GRU layer."""

    def make(s: LayerSpec):
        from torch import nn

        from core.models.layers import Recurrent

        return Recurrent(getattr(nn, cls)(s.d_model, s.d_model, batch_first=True))

    return make


def _loop_lstm(s: LayerSpec):
    from core.models.layers import LoopLSTM

    return LoopLSTM(s.d_model)


def _residual_lstm(s: LayerSpec):
    from core.models.layers import Residual

    return Residual(_fused("LSTM")(s))


def _lstm_attention(s: LayerSpec):
    from core.models.layers import RecurrentAttention

    return RecurrentAttention(s.d_model, s.heads, impl=s.impl, causal=s.causal)


def _lstm_attention_flops(B: int, T: int, d: int, causal: bool = True) -> int:
    """The LSTM's gates, then attention over its states: QKV and output projections 8·d² per token, plus QKᵀ and
    (probabilities)V (halved when causal)."""
    return fl.recurrent_forward(4, B, T, d, d) + B * T * 8 * d * d + fl.attention_forward(B, T, d, causal=causal)


def _recurrent_flops(gates: int) -> Callable[..., int]:
    return lambda B, T, d, causal=True: fl.recurrent_forward(gates, B, T, d, d)  # a recurrence is causal anyway


def _recurrent_params(gates: int) -> Callable[[int], int]:
    return lambda d: gates * (2 * d * d + 2 * d)  # gates × (W_ih, W_hh, b_ih, b_hh)


def _block(norm: str, residual: bool) -> Callable[[LayerSpec], nn.Module]:
    def make(s: LayerSpec):
        from core.models.layers import Block

        return Block(s.d_model, s.heads, norm=norm, residual=residual, impl=s.impl, causal=s.causal)

    return make


def _block_params(norm: str) -> Callable[[int], int]:
    return lambda d: 12 * d * d + 9 * d + (4 * d if norm != "none" else 0)  # qkv, proj, MLP (4d), two LayerNorms


_LSTM_FACTS = {"family": RECURRENT, "layer_flops": _recurrent_flops(4), "layer_params": _recurrent_params(4),
               "activation_floats": 12, "forget_gate": True}  # fmt: skip
_BLOCK_FACTS = {"family": ATTENTION, "layer_flops": fl.transformer_layer_forward, "activation_floats": 40,
                "positions": True}  # fmt: skip
_EVERYWHERE = frozenset({"serial", "gradient_reach", "long_range", "depth"})

register(ModelKind("rnn", RECURRENT, _fused("RNN"), _recurrent_flops(1), _recurrent_params(1), 12,
                   frozenset({"serial", "scaling", "checkpoint", "gradient_reach"}),
                   recurrent_weight=lambda layer: layer.rnn.weight_hh_l0,
                   color="#ff7f0e"))  # fmt: skip
register(ModelKind("lstm", make_layer=_fused("LSTM"), experiments=_EVERYWHERE | {"scaling", "checkpoint"},
                   representative=True,
                   color="#d62728", **_LSTM_FACTS))  # fmt: skip
register(ModelKind("gru", RECURRENT, _fused("GRU"), _recurrent_flops(3), _recurrent_params(3), 12,
                   frozenset({"serial", "scaling", "checkpoint", "gradient_reach"}), color="#e377c2"))  # fmt: skip
register(ModelKind("lstm_loop", make_layer=_loop_lstm, experiments=frozenset({"serial", "scaling"}),
                   fused=False, twin="lstm", **_LSTM_FACTS))  # fmt: skip
register(ModelKind("transformer", make_layer=_block("pre", True), layer_params=_block_params("pre"),
                   experiments=frozenset({"serial", "scaling", "long_range"}), final_norm=True, representative=True,
                   residual=True, norm="pre", color="#1f77b4", **_BLOCK_FACTS))  # fmt: skip
# attention bolted onto a recurrence: attention's one-step path between tokens, the LSTM's n dependent steps
register(ModelKind("lstm_attention", RECURRENT, _lstm_attention, _lstm_attention_flops,
                   lambda d: _recurrent_params(4)(d) + 4 * d * d + 6 * d, 24,  # LSTM, LayerNorm, attention
                   frozenset({"serial", "scaling", "gradient_reach", "long_range"}), forget_gate=True,
                   color="#9467bd", table1_row="recurrent_attention"))  # fmt: skip
# gradient reach probes one layer alone: a whole Pre-LN Transformer block (attention + MLP, residual)
register(ModelKind("attention", make_layer=_block("pre", True), layer_params=_block_params("pre"),
                   experiments=frozenset({"gradient_reach"}), final_norm=True, representative=True, residual=True,
                   norm="pre", color="#1f77b4", **_BLOCK_FACTS))  # fmt: skip
# the depth page's variants: the LSTM stack with GNMT's residuals, and Transformers with LayerNorm moved or removed
register(ModelKind("lstm_residual", make_layer=_residual_lstm,
                   experiments=frozenset({"depth"}), residual=True, **_LSTM_FACTS))  # fmt: skip
for _name, _norm, _residual in (("post_ln", "post", True), ("pre_ln", "pre", True), ("no_residual", "pre", False),
                                ("no_norm", "none", True)):  # fmt: skip
    register(ModelKind(_name, make_layer=_block(_norm, _residual), layer_params=_block_params(_norm),
                       experiments=frozenset({"depth"}), final_norm=_norm == "pre", residual=_residual, norm=_norm,
                       representative=_name == "pre_ln", **_BLOCK_FACTS))  # fmt: skip
