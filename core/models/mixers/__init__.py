"""Page 5's token mixers — the field's answers to attention's price — one record each in core.models.registry, as
zoology's mixers/ are: how to build each form, its family, the dependent steps a form takes for n tokens, what it
keeps per sequence while decoding, which row of Vaswani et al.'s Table 1 it belongs to, its source, colour and tags.
The chapter's LSTM, GRU and Transformer, page 5's baselines, are core.models.chapter's records (tagged ANSWERS too),
so every experiment of the page treats all of them alike. The layers are this package's modules.

Torch-free until a layer is built: the home page and the findings read the records without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

from core.models.registry import (
    ANSWERS,
    ATTENTION,
    CHUNKED,
    CONVOLUTION,
    FUSED,
    LOOP,
    RECURRENT,
    SCAN,
    SELECTIVE,
    TIME_INVARIANT,
    Model,
    Spec,
    register,
)


def scan_depth(n: int) -> int:
    """Dependent steps of a parallel scan over n elements: an up-sweep and a down-sweep of ⌈log₂ n⌉ levels each
    (Blelloch 1990), the depth torch's cumsum and logcumsumexp would have on hardware with n lanes."""
    return 2 * max(1, math.ceil(math.log2(max(n, 2))))


# ---- the records ----------------------------------------------------------------------------------------------


def _recurrence_steps(n: int, form: str, s: Spec) -> int:
    return n if form == LOOP else scan_depth(n)


def _saved(loop: int, parallel: int) -> Callable[[str, Spec], int]:
    return lambda form, s: (loop if form == LOOP else parallel) * s.d_model


def _layer(name: str, s: Spec, form: str):
    """Page 5's layer of model `name` in `form`, sized by the Spec; its module (torch) is imported when it is built."""
    from core.models.mixers import gated, linear, local, rwkv, ssm

    layers = {
        "min_gru": lambda: gated.MinGRU(s.d_model, form),
        "min_lstm": lambda: gated.MinLSTM(s.d_model, form),
        "rwkv": lambda: rwkv.RWKVTimeMix(s.d_model, form),
        "selective_ssm": lambda: ssm.SelectiveSSM(s.d_model, form, s.d_state),
        "linear_attention": lambda: linear.LinearAttention(s.d_model, s.heads, form, s.chunk),
        "sliding_window": lambda: local.SlidingWindow(s.d_model, s.heads, form, s.window),
        "dilated_conv": lambda: local.DilatedConv(s.d_model, form, s.kernel, s.levels),
    }
    return layers[name]()


def _tags(*tags: str) -> frozenset:
    """Page 5's, its gradient reach's and its recall frontier's (every preset but the quick one's four)."""
    return frozenset({ANSWERS, "gradient_reach", "answers_reach", "recall_frontier", *tags})


def _register(name: str, family: str, tags: frozenset, color: str, **facts) -> None:
    register(Model(name, family, partial(_layer, name), tags, color, **facts))


FENG = "Feng et al. 2024, Were RNNs All We Needed?"
_SCAN = {"forms": (LOOP, SCAN), "steps": _recurrence_steps, "table1": "scan"}  # a linear recurrence: loop or scan
_register("min_gru", RECURRENT, _tags(SELECTIVE, "recall_frontier:quick", "recall_frontier:tiny",
                                     "answers_speed.recurrence:quick"),
          "#e6550d", state_floats=lambda n, s: s.d_model, saved=_saved(10, 14), source=FENG, traditional="gru",
          **_SCAN)  # fmt: skip
_register("min_lstm", RECURRENT, _tags(SELECTIVE), "#fd8d3c", state_floats=lambda n, s: s.d_model,
          saved=_saved(12, 18), source=FENG, traditional="lstm", **_SCAN)  # fmt: skip
_register("rwkv", RECURRENT, _tags(TIME_INVARIANT), "#8c564b", state_floats=lambda n, s: 4 * s.d_model,
          saved=_saved(30, 40), source="Peng et al. 2023, RWKV (RWKV-4 time-mix)", **_SCAN)  # fmt: skip
_register("selective_ssm", RECURRENT, _tags(SELECTIVE), "#9467bd", state_floats=lambda n, s: s.d_model * s.d_state,
          saved=lambda form, s: (8 if form == LOOP else 24) * s.d_model * s.d_state,
          source="Gu & Dao 2023, Mamba (S6, minimal reimplementation)", **_SCAN)  # fmt: skip
_register("linear_attention", ATTENTION, _tags(TIME_INVARIANT, "recall_frontier:quick", "real_text"), "#17becf",
          forms=(LOOP, CHUNKED), steps=lambda n, form, s: n if form == LOOP else math.ceil(n / s.chunk),
          state_floats=lambda n, s: s.d_model * (s.d_model // s.heads) + s.d_model,
          saved=lambda form, s: (3 * s.d_model // s.heads + 12 if form == LOOP else 2 * s.chunk + 16) * s.d_model,
          table1="scan", source="Katharopoulos et al. 2020, Transformers are RNNs")  # fmt: skip
_register("sliding_window", ATTENTION, _tags(), "#2ca02c", forms=(CHUNKED,), steps=lambda n, form, s: 1,
          state_floats=lambda n, s: 2 * min(n, s.window) * s.d_model,
          saved=lambda form, s: 16 * s.d_model + 4 * s.window * s.heads, table1="restricted",
          source="Vaswani et al. 2017, restricted self-attention (Table 1)",
          reach_depth=4, reference="banded", reference_max_len=2048)  # fmt: skip
_register("dilated_conv", CONVOLUTION, _tags(TIME_INVARIANT), "#7f7f7f", forms=(FUSED,),
          steps=lambda n, form, s: s.levels, state_floats=lambda n, s: (s.kernel**s.levels - 1) * s.d_model,
          saved=lambda form, s: 3 * s.levels * s.d_model, table1="convolutional",
          source="Kalchbrenner et al. 2016 (ByteNet); van den Oord et al. 2016 (WaveNet)")  # fmt: skip
