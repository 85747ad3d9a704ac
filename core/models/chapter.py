"""The chapter's own models, one record each in core.models.registry: the tanh RNN, the fused LSTM and GRU, the
LSTM as an explicit loop, the Pre-LN Transformer, attention over an LSTM, and the depth page's variants. The LSTM,
the GRU and the Transformer are page 5's baselines too: their records also say how they decode (a state, a KV
cache), what they keep between tokens and their row of Table 1.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from core.harness import flops as fl
from core.harness.memory_formulas import tokens_held
from core.models.registry import ANSWERS, ATTENTION, CHAPTER, RECURRENT, SELECTIVE, Model, Spec, register

if TYPE_CHECKING:
    from torch import nn


def _fused(cls: str, s: Spec, form: str, residual: bool = False) -> nn.Module:
    """A fused torch.nn.RNN / LSTM / GRU layer (with a skip connection around it if `residual`)."""
    from torch import nn

    from core.models.layers import Recurrent, Residual

    layer = Recurrent(getattr(nn, cls)(s.d_model, s.d_model, batch_first=True))
    return Residual(layer) if residual else layer


def _loop_lstm(s: Spec, form: str):
    from core.models.layers import LoopLSTM

    return LoopLSTM(s.d_model)


def _lstm_attention(s: Spec, form: str):
    from core.models.layers import RecurrentAttention

    return RecurrentAttention(s.d_model, s.heads, impl=s.impl, causal=s.causal)


def _lstm_attention_flops(B: int, T: int, d: int, causal: bool = True) -> int:
    """The LSTM's gates, then attention over its states: a Transformer layer's count without its MLP."""
    return fl.recurrent_forward(4, B, T, d, d) + fl.transformer_layer_forward(B, T, d, mlp_ratio=0, causal=causal)


def _recurrent_flops(gates: int) -> Callable[..., int]:
    return lambda B, T, d, causal=True: fl.recurrent_forward(gates, B, T, d, d)  # a recurrence is causal anyway


def _recurrent_params(gates: int) -> Callable[[int], int]:
    return lambda d: gates * (2 * d * d + 2 * d)  # gates × (W_ih, W_hh, b_ih, b_hh)


def _block(norm: str, residual: bool, s: Spec, form: str) -> nn.Module:
    from core.models.layers import Block

    return Block(s.d_model, s.heads, norm=norm, residual=residual, impl=s.impl, causal=s.causal)


def _block_params(norm: str) -> Callable[[int], int]:
    return lambda d: 12 * d * d + 9 * d + (4 * d if norm != "none" else 0)  # qkv, proj, MLP (4d), two LayerNorms


def _decoder(cls: str, layer: nn.Module) -> nn.Module:
    """The layer wrapped in core.models.mixers.baselines' `cls`, which decodes it a token at a time."""
    from core.models.mixers import baselines

    return getattr(baselines, cls)(layer)


def _tags(*tags: str) -> frozenset:
    return frozenset({CHAPTER, *tags})


# fmt: off
_LSTM_FACTS = {"family": RECURRENT, "layer_flops": _recurrent_flops(4), "layer_params": _recurrent_params(4),
               "activation_floats": 12, "forget_gate": True, "table1": "recurrent"}
_BLOCK_FACTS = {"family": ATTENTION, "layer_flops": fl.transformer_layer_forward, "activation_floats": 40,
                "positions": True, "table1": "self_attention"}
_PRE_LN = {"make": partial(_block, "pre", True), "layer_params": _block_params("pre"), "color": "#1f77b4",
           "final_norm": True, "representative": True, "residual": True, "norm": "pre", **_BLOCK_FACTS}
_REACH = ("gradient_reach", "gradient_reach:quick")  # offered on the gradient reach page and run by its presets
# the chapter's models on page 5: they read one token at a time through their state (or KV cache)
_PAGE5 = {"steps": lambda n, form, s: n, "decoder": partial(_decoder, "FusedRecurrent")}

register(Model("rnn", RECURRENT, partial(_fused, "RNN"), _tags("serial", "scaling", "checkpoint", *_REACH), "#ff7f0e",
               _recurrent_flops(1), _recurrent_params(1), 12, table1="recurrent",
               recurrent_weight=lambda layer: layer.rnn.weight_hh_l0))
register(Model("lstm", make=partial(_fused, "LSTM"), color="#d62728", representative=True,
               tags=_tags("serial", "scaling", "checkpoint", "checkpoint:quick", *_REACH, "long_range", "long_range:quick", "depth",
                          "depth:quick", ANSWERS, SELECTIVE, "answers_reach", "recall_frontier",
                          "recall_frontier:quick", "real_text"),
               state_floats=lambda n, s: 2 * s.d_model, source="Hochreiter & Schmidhuber 1997 (nn.LSTM)",
               **_PAGE5, **_LSTM_FACTS))
register(Model("gru", RECURRENT, partial(_fused, "GRU"),
               _tags("serial", "scaling", "checkpoint", *_REACH, ANSWERS, SELECTIVE), "#e377c2", _recurrent_flops(3),
               _recurrent_params(3), 12, table1="recurrent",
               state_floats=lambda n, s: s.d_model, source="Cho et al. 2014 (nn.GRU)", **_PAGE5))
register(Model("lstm_loop", make=_loop_lstm, tags=_tags("serial", "scaling"), fused=False, twin="lstm",
               **_LSTM_FACTS))
def _cache_recall(keys, values, queries):
    from core.models.layers import cache_recall

    return cache_recall(keys, values, queries)


register(Model("transformer", tags=_tags("serial", "scaling", "long_range", "long_range:quick", ANSWERS, "recall_frontier",
                                         "recall_frontier:quick", "recall_frontier:tiny", "real_text"),
               steps=lambda n, form, s: 1, state_floats=lambda n, s: 2 * tokens_held(n) * s.d_model,
               decoder=partial(_decoder, "CachedBlock"), source="Vaswani et al. 2017 (Pre-LN block, SDPA)",
               recall=_cache_recall, **_PRE_LN))
# gradient reach probes one layer alone: a whole Pre-LN Transformer block (attention + MLP, residual)
register(Model("attention", tags=_tags(*_REACH, "answers_reach"), **_PRE_LN))
# attention bolted onto a recurrence: attention's one-step path between tokens, the LSTM's n dependent steps
register(Model("lstm_attention", RECURRENT, _lstm_attention, _tags("serial", "scaling", *_REACH, "long_range"),
               "#9467bd", _lstm_attention_flops,
               lambda d: _recurrent_params(4)(d) + 4 * d * d + 6 * d, 24,  # LSTM, LayerNorm, attention
               forget_gate=True, table1="recurrent_attention"))
# the depth page's variants: the LSTM stack with GNMT's residuals, and Transformers with LayerNorm moved or removed
register(Model("lstm_residual", make=partial(_fused, "LSTM", residual=True), tags=_tags("depth", "depth:quick"),
               residual=True, **_LSTM_FACTS))
for _name, _norm, _residual in (("post_ln", "post", True), ("pre_ln", "pre", True), ("no_residual", "pre", False),
                                ("no_norm", "none", True)):
    register(Model(_name, make=partial(_block, _norm, _residual), layer_params=_block_params(_norm),
                   tags=_tags("depth", *(("depth:quick",) if _name != "no_norm" else ())), final_norm=_norm == "pre",
                   residual=_residual, norm=_norm, representative=_name == "pre_ln", **_BLOCK_FACTS))
# fmt: on
