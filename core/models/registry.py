"""The model registry: one record per model (the chapter's and page 5's mixers alike) holds everything that
differs between models.

How to build its layer in each of its forms, whether it is recurrent, how many dependent steps a layer takes for
n tokens, its analytic forward FLOPs and parameter count, what it keeps for backward and between tokens, its row of
Vaswani et al.'s Table 1, its source, colour and tags: the record answers, so no experiment, chart or page asks a
model's name (zoology's mixers/, lm-evaluation-harness's task registry). Experiments choose models by tag
(`names(tag)`): an experiment's name offers a model there, `<experiment>:<preset>` puts it in that preset's run
where the preset runs fewer than it offers. core.models.chapter holds the chapter's records; each of page 5's
mixers is a module of core.models.mixers whose layer class declares its facts (`@mixer`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from core.harness import flops as fl

if TYPE_CHECKING:
    from torch import nn

    from core.models.layers import LanguageModel

RECURRENT, ATTENTION = "recurrent", "attention"  # the two families the chapter compares
CONVOLUTION = "convolution"  # neither a state nor attention: a fixed receptive field (page 5's dilated convolution)
LOOP, SCAN, CHUNKED, FUSED = "loop", "scan", "chunked", "fused"
FORMS = (LOOP, SCAN, CHUNKED, FUSED)
# Vaswani et al. 2017, Table 1, maximum path length per row, page 5's new row (a linear recurrence as a scan) and
# the home page's row beyond the chapter's pair: attention over a recurrence's states, one step between tokens
PATHS = {"self_attention": "O(1)", "recurrent": "O(n)", "convolutional": "O(log_k n)", "restricted": "O(n/r)",
         "scan": "O(n)", "recurrent_attention": "O(1)"}  # fmt: skip
CHAPTER, ANSWERS = "chapter", "answers"  # tags: the chapter's own models; page 5's mixer interface (its models)
SELECTIVE, TIME_INVARIANT = "selective", "time_invariant"  # tags: what it keeps depends on the token read, or not


@dataclasses.dataclass(frozen=True)
class Spec:
    """What a layer is built from: width, heads, attention path, causality, forget-gate bias, and the size
    parameters some of page 5's mixers have."""

    d_model: int
    window: int = 32  # sliding window: tokens each query sees (itself included)
    kernel: int = 2  # dilated convolution: kernel size k (dilations k^i: doubling for k = 2)
    levels: int = 6  # dilated convolution: layers, so the receptive field is k^levels tokens
    chunk: int = 64  # linear attention, chunked form: tokens per chunk
    d_state: int = 16  # selective SSM: state numbers per channel (Mamba's N)
    n_heads: int | None = None  # None or 0: heads of size 32 where d_model allows (n_heads_for)
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
class Model:
    """A model: its layer in each form and the facts about it that experiments, FLOP counts and charts need."""

    name: str
    family: str  # RECURRENT (information flows through a state, step by step), ATTENTION or CONVOLUTION
    make: Callable[[Spec, str], nn.Module]  # one layer in one form, (B, T, d) → (B, T, d)
    tags: frozenset  # where it is offered and run (see the module's docstring), CHAPTER, ANSWERS, SELECTIVE…
    color: str | None = None  # its colour on every chart (recurrent models warm, attention cool); None: a default
    layer_flops: Callable[..., int] | None = None  # forward FLOPs of one layer for (batch, seq_len, d, causal=True)
    layer_params: Callable[[int], int] | None = None  # parameters of one layer at width d_model
    activation_floats: int = 0  # a generous count of floats per token and d_model kept per layer (memory guard)
    forms: tuple[str, ...] = (FUSED,)  # the forms it offers; the first is the reference the others are tested against
    steps: Callable[[int, str, Spec], int] | None = None  # dependent steps of one layer's forward pass, per form
    state_floats: Callable[[int, Spec], int] | None = None  # numbers kept per sequence between tokens, after n
    saved: Callable[[str, Spec], int] | None = None  # floats per token kept for backward; None: activation_floats·d
    decoder: Callable[[nn.Module], nn.Module] | None = None  # wraps its layer so it reads one token at a time
    table1: str | None = None  # its row of Table 1 (PATHS): self_attention, recurrent, convolutional, restricted…
    source: str = ""  # the paper the layer follows
    positions: bool = False  # sinusoidal positions added to the embedding (attention has no order of its own)
    final_norm: bool = False  # a LayerNorm before the head (Pre-LN stacks)
    fused: bool = True  # a library kernel (cuDNN/oneDNN, SDPA); False: an explicit Python loop
    twin: str | None = None  # the fused model that computes the same function (for the explicit loop)
    traditional: str | None = None  # the model it simplifies (minGRU: the GRU), as Feng et al. compare them
    representative: bool = False  # the family's model in the chapter's comparison (the LSTM, the Transformer)
    forget_gate: bool = False  # an LSTM forget gate whose bias Spec.forget_bias sets
    residual: bool = False  # a skip connection around each layer
    norm: str = "none"  # LayerNorm placement: 'pre', 'post' or 'none'
    recurrent_weight: Callable[[nn.Module], object] | None = None  # a tanh RNN's W_hh, whose spectral radius matters
    reach_depth: int = 1  # layers stacked when its gradient reach is measured (restricted attention: steps of r)
    reference: str | None = None  # the form its others are checked against in float64 (default: its first form)
    reference_max_len: int = 1 << 20  # the longest sequence that check runs at (a dense reference costs n²)
    # (keys, values, queries) → what its state returns for each query after the pairs are written straight into it,
    # with no training (page 5's written recall); None: no key–value state to write
    recall: Callable[..., object] | None = None

    @property
    def recurrent(self) -> bool:
        return self.family == RECURRENT

    @property
    def selective(self) -> bool | None:
        """Does what it keeps or forgets depend on the token read (a gate or step computed from the input: Mamba's
        "selection")? False: a fixed decay or kernel, the same at every position (time-invariant); None: neither
        tag (attention, which keeps every token and chooses among them by content)."""
        return True if SELECTIVE in self.tags else False if TIME_INVARIANT in self.tags else None

    @property
    def path(self) -> str:
        """Table 1's maximum path length for its row."""
        return PATHS[self.table1]

    @property
    def reference_form(self) -> str | None:
        return self.reference or (self.forms[0] if len(self.forms) > 1 else None)

    def layer(self, spec: Spec, form: str | None = None) -> nn.Module:
        """One layer in one form (its last by default) at initialisation, its forget-gate bias set if asked."""
        form = form or self.forms[-1]
        if form not in self.forms and form != self.reference:  # a reference form is built for checks only
            raise ValueError(f"forms: {self.name} has no {form!r} form (it has {', '.join(self.forms)})")
        layer = self.make(spec, form)
        if self.forget_gate and spec.forget_bias is not None:
            from torch import nn

            from core.models.layers import set_forget_bias

            for m in layer.modules():
                if isinstance(m, (nn.LSTM, nn.LSTMCell)):
                    set_forget_bias(m, spec.forget_bias)
        return layer

    def mixer(self, spec: Spec, form: str | None = None) -> nn.Module:
        """Its layer as page 5 runs it: one that can also decode a token at a time (`step`, `prefill`)."""
        layer = self.layer(spec, form)
        return self.decoder(layer) if self.decoder is not None else layer

    def build(
        self, vocab_size: int, d_model: int | Spec, n_layers: int = 1, form: str | None = None, **spec
    ) -> LanguageModel:
        """The language model: embedding → n_layers layers → head (a Spec, or a width and Spec fields)."""
        from core.models.layers import LanguageModel

        s = d_model if isinstance(d_model, Spec) else Spec(d_model, **spec)
        make = lambda: self.layer(s, form)
        return LanguageModel(vocab_size, s.d_model, n_layers, make, self.positions, self.final_norm)

    def stack(
        self, vocab_size: int, spec: Spec, n_layers: int, form: str | None = None, rope: bool = False
    ) -> nn.Module:
        """A deep language model: `n_layers` residual blocks of this mixer with a short convolution in front
        (core.models.stack), the same block for every mixer so the mixer is the only difference: the chapter's
        fused LSTM as it is, its Transformer as causal softmax attention (sinusoidal positions added, or with
        `rope` rotary positions inside attention)."""
        from core.models.layers import LanguageModel, SelfAttention
        from core.models.stack import MixerBlock

        if self.positions:  # the chapter's attention: attention alone, which has no order of its own
            make = lambda: SelfAttention(spec.d_model, spec.heads, rope=rope)
        else:
            make = lambda: self.layer(spec, form)
        block = lambda: MixerBlock(spec.d_model, make())
        sinusoids = self.positions and not rope
        return LanguageModel(vocab_size, spec.d_model, n_layers, block, positions=sinusoids, final_norm=True)

    def stack_state_floats(self, n: int, spec: Spec, n_layers: int) -> int:
        """Numbers a `stack` keeps per sequence between tokens after n tokens: every layer's state (for attention
        its KV cache), plus the last kernel − 1 inputs of each short convolution."""
        from core.models.stack import CONV_KERNEL

        return n_layers * (self.state_floats(n, spec) + (CONV_KERNEL - 1) * spec.d_model)

    def saved_floats(self, form: str, spec: Spec) -> int:
        """A generous count of floats per token kept for backward by one layer in `form`."""
        return self.saved(form, spec) if self.saved is not None else self.activation_floats * spec.d_model

    def reach_layer(self, d_model: int) -> nn.Module:
        """What page 5's gradient reach is measured on: `reach_depth` layers of its first form, default sizes. The
        first form, the sequential one where there is one: the log-space scan's backward has a float32 floor (its
        decay gradients are 1 − Σ weights), ~1e-6 of the largest, where the true gradient keeps falling."""
        from torch import nn

        spec = Spec(d_model)
        return nn.Sequential(*(self.layer(spec, self.forms[0]) for _ in range(self.reach_depth)))

    def seq_steps(self, seq_len: int, n_layers: int) -> int:
        """Dependent steps on the critical path of one forward pass: n per recurrent layer, 1 per attention layer."""
        return (seq_len if self.recurrent else 1) * n_layers

    def n_params(self, vocab_size: int, d_model: int, n_layers: int) -> int:
        """Parameters without building the model (equals core.models.n_params of `build`, tested)."""
        outer = 2 * vocab_size * d_model + vocab_size + (2 * d_model if self.final_norm else 0)
        return n_layers * self.layer_params(d_model) + outer

    def forward_flops(
        self, batch_size: int, seq_len: int, d_model: int, n_layers: int, vocab_size: int, causal: bool = True
    ) -> int:
        """Forward FLOPs of the whole model as performed (causal attention: half the square; embedding: none).
        `causal=False` counts the whole square, as an unfused path (SDPA's math backend) computes it."""
        body = n_layers * self.layer_flops(batch_size, seq_len, d_model, causal=causal)
        return body + fl.head_forward(batch_size, seq_len, d_model, vocab_size)


MODELS: dict[str, Model] = {}


def register(model: Model) -> Model:
    if model.family not in (RECURRENT, ATTENTION, CONVOLUTION):
        raise ValueError(f"family: {model.family!r} is not one of {RECURRENT}, {ATTENTION}, {CONVOLUTION}")
    if other := [f for f in model.forms if f not in FORMS]:  # the forms page 5 times, charts and counts steps for
        raise ValueError(
            f"forms: {model.name}'s {', '.join(other)} is not one of {', '.join(FORMS)}; a form of another kind (a "
            "masked n × n matrix) can only be its `reference`, built for the checks"
        )
    MODELS[model.name] = model
    return model


def unregister(name: str) -> None:
    MODELS.pop(name, None)


def get(name: str) -> Model:
    if name not in MODELS:
        raise ValueError(f"model: {name!r} is not one of {', '.join(MODELS)}")
    return MODELS[name]


def has(name: str, tag: str) -> bool:
    """Is `name` a registered model with `tag` (False for a name no record knows: a row from another version)?"""
    return name in MODELS and tag in MODELS[name].tags


def family_of(name: str) -> str | None:
    """A model's family; None for a name no record knows (a row from another version of the lab)."""
    model = MODELS.get(name)
    return model.family if model is not None else None


FALLBACK_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#bcbd22", "#17becf", "#7f7f7f")


def colors(models) -> tuple[list[str], list[str]]:
    """(domain, range) of a chart's colour scale over `models`: each model's own colour, others from a palette."""
    domain = list(dict.fromkeys(models))
    spare = iter(FALLBACK_COLORS * (1 + len(domain) // len(FALLBACK_COLORS)))
    return domain, [(MODELS[m].color if m in MODELS and MODELS[m].color else next(spare)) for m in domain]


def names(tag: str) -> tuple[str, ...]:
    """The models with `tag` (an experiment that offers them, a preset that runs them, ANSWERS…), in registration
    order."""
    return tuple(n for n, m in MODELS.items() if tag in m.tags)


def tagged(tag: str) -> Callable[[], tuple[str, ...]]:
    """`names(tag)`, read when called: a config's default or choices, a preset's models (a model registered since
    is among them)."""
    return lambda: names(tag)


def representative(family: str, among: Iterable[str] | None = None) -> str | None:
    """The family's model in the chapter's comparison among `among` (any registered model if None), else its first."""
    pool = [n for n in (MODELS if among is None else dict.fromkeys(among)) if family_of(n) == family]
    chosen = [n for n in pool if MODELS[n].representative]
    return (chosen or pool or [None])[0]


def find(among: Iterable[str], **facts) -> str | None:
    """The first model among `among` whose record has every fact given (e.g. family=RECURRENT, residual=True)."""
    for n in dict.fromkeys(among):
        m = MODELS.get(n)
        if m is not None and all(getattr(m, f) == v for f, v in facts.items()):
            return n
    return None
