"""Page 5's token mixers — the field's answers to attention's price — one record each, as zoology's mixers/ are.

A record (`Mixer`) holds everything that differs between mixers: how to build its layer in each of its forms,
its family, the dependent steps a form takes for n tokens, what it keeps per sequence while decoding, which row of
Vaswani et al.'s Table 1 it belongs to, its source and its colour. Experiments, findings, charts and the page ask
the record, never a mixer's name. The chapter's own models (the fused LSTM and GRU, the SDPA Transformer block)
have records too, built by core.models.registry, so every experiment of the page treats all of them alike.

Torch-free until a layer is built: the home page and the findings read the records without it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.memory_formulas import tokens_held
from core.models.registry import ATTENTION, RECURRENT, LayerSpec, n_heads_for

if TYPE_CHECKING:
    from torch import nn

CONVOLUTION = "convolution"  # neither a state nor attention: a fixed receptive field
LOOP, SCAN, CHUNKED, FUSED = "loop", "scan", "chunked", "fused"
FORMS = (LOOP, SCAN, CHUNKED, FUSED)
# Vaswani et al. 2017, Table 1, maximum path length per row (and the page's new row: a linear recurrence as a scan)
PATHS = {"self_attention": "O(1)", "recurrent": "O(n)", "convolutional": "O(log_k n)", "restricted": "O(n/r)",
         "scan": "O(n)"}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class MixerSpec:
    """What a mixer is built from: width and the size parameters some mixers have."""

    d_model: int
    window: int = 32  # sliding window: tokens each query sees (itself included)
    kernel: int = 2  # dilated convolution: kernel size k (dilations k^i: doubling for k = 2)
    levels: int = 6  # dilated convolution: layers, so the receptive field is k^levels tokens
    chunk: int = 64  # linear attention, chunked form: tokens per chunk
    d_state: int = 16  # selective SSM: state numbers per channel (Mamba's N)
    n_heads: int = 0  # attention kinds' heads; 0 = heads of 32 channels (core.models.registry.n_heads_for)

    @property
    def heads(self) -> int:
        return self.n_heads or n_heads_for(self.d_model)


@dataclasses.dataclass(frozen=True)
class Mixer:
    name: str
    family: str  # RECURRENT, ATTENTION or CONVOLUTION
    forms: tuple[str, ...]  # the forms it offers; the first is the reference the others are tested against
    make: Callable[[MixerSpec, str], nn.Module]  # one layer in one form, (B, T, d) → (B, T, d), with step()
    steps: Callable[[int, str, MixerSpec], int]  # dependent steps on the critical path of one forward pass
    state_floats: Callable[[int, MixerSpec], int]  # numbers kept per sequence between tokens, after n tokens
    saved_floats: Callable[[str, MixerSpec], int]  # a generous count of floats per token kept for backward
    table1: str  # its row of Table 1: self_attention, recurrent, convolutional, restricted, or scan (the new row)
    source: str  # the paper the layer follows
    color: str
    kind: str | None = None  # the core.models.registry kind it is (the chapter's own models)
    reach_depth: int = 1  # layers stacked when its gradient reach is measured (restricted attention: steps of r)
    reference: str | None = None  # the form its others are checked against in float64 (default: its first form)
    reference_max_len: int = 1 << 20  # the longest sequence that check runs at (a dense reference costs n²)
    traditional: str | None = None  # the mixer it simplifies (minGRU: the GRU), as Feng et al. compare them
    # does what it keeps or forgets depend on the token read (a gate or step computed from the input: Mamba's
    # "selection")? False: a fixed decay or kernel, the same at every position (time-invariant); None: attention,
    # which keeps every token and chooses among them by content
    selective: bool | None = None

    @property
    def path(self) -> str:
        """Table 1's maximum path length for its row."""
        return PATHS[self.table1]

    @property
    def reference_form(self) -> str | None:
        return self.reference or (self.forms[0] if len(self.forms) > 1 else None)

    def layer(self, spec: MixerSpec, form: str | None = None) -> nn.Module:
        form = form or self.forms[-1]
        if form not in self.forms and form != self.reference:  # a reference form is built for checks only
            raise ValueError(f"forms: {self.name} has no {form!r} form (it has {', '.join(self.forms)})")
        return self.make(spec, form)

    def build(self, vocab_size: int, spec: MixerSpec, form: str | None = None) -> nn.Module:
        """A one-layer language model: embedding → this mixer → head (the registry's own model for a kind)."""
        from core.models import registry

        if self.kind is not None:
            return registry.get(self.kind).build(vocab_size, spec.d_model, 1)
        from core.models.layers import LanguageModel

        return LanguageModel(vocab_size, spec.d_model, 1, lambda: self.layer(spec, form))

    def stack(self, vocab_size: int, spec: MixerSpec, n_layers: int, form: str | None = None) -> nn.Module:
        """A deep language model: `n_layers` residual blocks of this mixer with a short convolution in front
        (core.models.mixers.stack), the same block for every mixer so the mixer is the only difference: the
        chapter's fused LSTM as it is, its Transformer as causal softmax attention (sinusoidal positions added)."""
        from core.models import registry
        from core.models.layers import LanguageModel, SelfAttention
        from core.models.mixers.stack import MixerBlock

        if self.kind is None:
            make = lambda: self.layer(spec, form)
        elif self.family == ATTENTION:
            make = lambda: SelfAttention(spec.d_model, spec.heads)
        else:
            make = lambda: registry.get(self.kind).layer(LayerSpec(spec.d_model))
        block = lambda: MixerBlock(spec.d_model, make())
        positions = self.kind is not None and self.family == ATTENTION  # attention alone has no order
        return LanguageModel(vocab_size, spec.d_model, n_layers, block, positions=positions, final_norm=True)

    def stack_state_floats(self, n: int, spec: MixerSpec, n_layers: int) -> int:
        """Numbers a `stack` keeps per sequence between tokens after n tokens: every layer's state (for attention
        its KV cache), plus the last kernel − 1 inputs of each short convolution."""
        from core.models.mixers.stack import CONV_KERNEL

        return n_layers * (self.state_floats(n, spec) + (CONV_KERNEL - 1) * spec.d_model)

    def reach_layer(self, d_model: int) -> nn.Module:
        """What its gradient reach is measured on: `reach_depth` layers of its first form, default sizes. The first
        form, the sequential one where there is one: the log-space scan's backward has a float32 floor (its decay
        gradients are 1 − Σ weights), ~1e-6 of the largest, where the true gradient keeps falling."""
        from torch import nn

        spec = MixerSpec(d_model)
        return nn.Sequential(*(self.layer(spec, self.forms[0]) for _ in range(self.reach_depth)))


MIXERS: dict[str, Mixer] = {}


def register(mixer: Mixer) -> Mixer:
    if mixer.family not in (RECURRENT, ATTENTION, CONVOLUTION):
        raise ValueError(f"family: {mixer.family!r} is not one of {RECURRENT}, {ATTENTION}, {CONVOLUTION}")
    MIXERS[mixer.name] = mixer
    return mixer


def get(name: str) -> Mixer:
    if name not in MIXERS:
        raise ValueError(f"mixers: {name!r} is not one of {', '.join(MIXERS)}")
    return MIXERS[name]


def names(experiment: str | None = None) -> tuple[str, ...]:
    """Every mixer, in registration order; for gradient_reach only the new ones (the registry has the others)."""
    if experiment == "gradient_reach":
        return tuple(n for n, m in MIXERS.items() if m.kind is None)
    if experiment == "recall_frontier":  # page 5's mixers and the chapter's pair (the GRU adds nothing to recall)
        return tuple(n for n, m in MIXERS.items() if m.kind in (None, "lstm", "transformer"))
    return tuple(MIXERS)


def colors(mixers) -> tuple[list[str], list[str]]:
    """(domain, range) of a chart's colour scale over `mixers`."""
    from core.models import registry

    domain = list(dict.fromkeys(mixers))
    kinds = dict(zip(*registry.colors([m for m in domain if m not in MIXERS])))  # the registry's layers' colours
    return domain, [MIXERS[m].color if m in MIXERS else kinds[m] for m in domain]


def scan_depth(n: int) -> int:
    """Dependent steps of a parallel scan over n elements: an up-sweep and a down-sweep of ⌈log₂ n⌉ levels each
    (Blelloch 1990), the depth torch's cumsum and logcumsumexp would have on hardware with n lanes."""
    return 2 * max(1, math.ceil(math.log2(max(n, 2))))


# ---- the records ----------------------------------------------------------------------------------------------


def _recurrence_steps(n: int, form: str, s: MixerSpec) -> int:
    return n if form == LOOP else scan_depth(n)


def _saved(loop: int, parallel: int) -> Callable[[str, MixerSpec], int]:
    return lambda form, s: (loop if form == LOOP else parallel) * s.d_model


def _min_gru(s: MixerSpec, form: str):
    from core.models.mixers.gated import MinGRU

    return MinGRU(s.d_model, form)


def _min_lstm(s: MixerSpec, form: str):
    from core.models.mixers.gated import MinLSTM

    return MinLSTM(s.d_model, form)


def _rwkv(s: MixerSpec, form: str):
    from core.models.mixers.rwkv import RWKVTimeMix

    return RWKVTimeMix(s.d_model, form)


def _ssm(s: MixerSpec, form: str):
    from core.models.mixers.ssm import SelectiveSSM

    return SelectiveSSM(s.d_model, form, s.d_state)


def _linear(s: MixerSpec, form: str):
    from core.models.mixers.linear import LinearAttention

    return LinearAttention(s.d_model, s.heads, form, s.chunk)


def _window(s: MixerSpec, form: str):
    from core.models.mixers.local import SlidingWindow

    return SlidingWindow(s.d_model, s.heads, form, s.window)


def _conv(s: MixerSpec, form: str):
    from core.models.mixers.local import DilatedConv

    return DilatedConv(s.d_model, form, s.kernel, s.levels)


def _kind(name: str) -> Callable[[MixerSpec, str], nn.Module]:
    """A registry kind's layer, wrapped so it can also decode (state or KV cache)."""

    def make(s: MixerSpec, form: str):
        from core.models import registry
        from core.models.mixers.baselines import CachedBlock, FusedRecurrent

        layer = registry.get(name).layer(LayerSpec(s.d_model))
        return FusedRecurrent(layer) if registry.get(name).recurrent else CachedBlock(layer)

    return make


FENG = "Feng et al. 2024, Were RNNs All We Needed?"
register(Mixer("min_gru", RECURRENT, (LOOP, SCAN), _min_gru, _recurrence_steps, lambda n, s: s.d_model,
               _saved(10, 14), "scan", FENG, "#e6550d", traditional="gru", selective=True))  # fmt: skip
register(Mixer("min_lstm", RECURRENT, (LOOP, SCAN), _min_lstm, _recurrence_steps, lambda n, s: s.d_model,
               _saved(12, 18), "scan", FENG, "#fd8d3c", traditional="lstm", selective=True))  # fmt: skip
register(Mixer("rwkv", RECURRENT, (LOOP, SCAN), _rwkv, _recurrence_steps, lambda n, s: 4 * s.d_model,
               _saved(30, 40), "scan", "Peng et al. 2023, RWKV (RWKV-4 time-mix)", "#8c564b", selective=False))  # fmt: skip
register(Mixer("selective_ssm", RECURRENT, (LOOP, SCAN), _ssm, _recurrence_steps,
               lambda n, s: s.d_model * s.d_state, lambda form, s: (8 if form == LOOP else 24) * s.d_model * s.d_state,
               "scan", "Gu & Dao 2023, Mamba (S6, minimal reimplementation)", "#9467bd", selective=True))  # fmt: skip
register(Mixer("linear_attention", ATTENTION, (LOOP, CHUNKED), _linear,
               lambda n, form, s: n if form == LOOP else math.ceil(n / s.chunk),
               lambda n, s: s.d_model * (s.d_model // s.heads) + s.d_model,
               lambda form, s: (3 * s.d_model // s.heads + 12 if form == LOOP else 2 * s.chunk + 16) * s.d_model,
               "scan", "Katharopoulos et al. 2020, Transformers are RNNs", "#17becf", selective=False))  # fmt: skip
register(Mixer("sliding_window", ATTENTION, (CHUNKED,), _window, lambda n, form, s: 1,
               lambda n, s: 2 * min(n, s.window) * s.d_model, lambda form, s: 16 * s.d_model + 4 * s.window * s.heads,
               "restricted", "Vaswani et al. 2017, restricted self-attention (Table 1)", "#2ca02c",
               reach_depth=4, reference="banded", reference_max_len=2048))  # fmt: skip
register(Mixer("dilated_conv", CONVOLUTION, (FUSED,), _conv, lambda n, form, s: s.levels,
               lambda n, s: (s.kernel**s.levels - 1) * s.d_model, lambda form, s: 3 * s.levels * s.d_model,
               "convolutional", "Kalchbrenner et al. 2016 (ByteNet); van den Oord et al. 2016 (WaveNet)",
               "#7f7f7f", selective=False))  # fmt: skip
register(Mixer("lstm", RECURRENT, (FUSED,), _kind("lstm"), lambda n, form, s: n, lambda n, s: 2 * s.d_model,
               _saved(12, 12), "recurrent", "Hochreiter & Schmidhuber 1997 (nn.LSTM)", "#d62728", kind="lstm",
               selective=True))  # fmt: skip
register(Mixer("gru", RECURRENT, (FUSED,), _kind("gru"), lambda n, form, s: n, lambda n, s: s.d_model,
               _saved(12, 12), "recurrent", "Cho et al. 2014 (nn.GRU)", "#e377c2", kind="gru", selective=True))  # fmt: skip
register(Mixer("transformer", ATTENTION, (FUSED,), _kind("transformer"), lambda n, form, s: 1,
               lambda n, s: 2 * tokens_held(n) * s.d_model, _saved(40, 40), "self_attention",
               "Vaswani et al. 2017 (Pre-LN block, SDPA)", "#1f77b4", kind="transformer"))  # fmt: skip
