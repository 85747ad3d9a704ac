"""Page 5's mixers: every form computes the same function as the reference form (forward and gradients, in
float64), every form is causal, decoding one token at a time reproduces the forward pass, and what a mixer keeps
between tokens is exactly what its record says — each at 1, 2 and 4 heads and at two widths, since a mixer that
splits its width into heads can be right at one head and wrong at more (a toy at the end is, and is caught). The
checks are functions of a record and a Spec, so tests/test_toy_mixer.py runs them on a mixer it registers itself.
Last, a mixer's words: the recall page's sentence about its state, its own or built from its facts."""

import math

import pytest
import torch

from core.findings.recall_frontier import state_words
from core.harness.memory_formulas import KV_PAGE, kv_cache_bytes, tokens_held
from core.models import registry
from core.models.layers import loop
from core.models.mixers.base import LinearRecurrence, log_scan, scan, state_bytes
from core.models.registry import LOOP, SCAN, Spec
from core.terms.i18n import catalogue, translator

SIZES = {"window": 4, "kernel": 2, "levels": 3, "chunk": 4, "d_state": 4}  # small: several chunks and windows
SPEC = Spec(16, **SIZES)  # one head, for the tests that are not about heads
WIDTHS, HEADS = (8, 16), (1, 2, 4)
SHAPES = [(d, h) for d in WIDTHS for h in HEADS]  # (width, heads): heads of 2 to 16 channels
FORMS = [(m, f) for m in registry.names("answers") for f in registry.get(m).forms]


def spec_of(d_model: int, heads: int) -> Spec:
    return Spec(d_model, n_heads=heads, **SIZES)


def where(model, spec: Spec, form: str = "") -> str:
    return f"{model.name} {form} at width {spec.d_model}, {spec.heads} heads".replace("  ", " ")


def said(model, spec: Spec, form: str, what: str = ""):
    """assert_close's message: where it failed, then its own account of the mismatch."""
    return lambda mismatch: f"{where(model, spec, form)}{': ' + what if what else ''}\n{mismatch}"


def _layer(model, spec: Spec, form: str, dtype=torch.float64):
    torch.manual_seed(1)  # every form of one mixer starts from the same weights
    return model.mixer(spec, form).to(dtype)


def _x(d_model: int, T: int = 13) -> torch.Tensor:
    return torch.randn(2, T, d_model, generator=torch.Generator().manual_seed(2), dtype=torch.float64)


def reference_form(model) -> str:
    return model.reference_form or model.forms[0]


def _forward_and_gradients(layer, x: torch.Tensor) -> dict:
    """The output, and the gradients of a fixed weighting of it with respect to the input and every parameter."""
    x = x.clone().requires_grad_(True)
    y = layer(x)
    w = torch.randn(y.shape, generator=torch.Generator().manual_seed(3), dtype=y.dtype)
    names, params = zip(*layer.named_parameters())
    grads = torch.autograd.grad((y * w).sum(), [x, *params])
    return {"output": y.detach(), "input gradient": grads[0], **dict(zip(names, grads[1:]))}


def forms_agree(model, spec: Spec, forms=None) -> None:
    """Each of `forms` (every form by default) gives the reference form's output and gradients, in float64."""
    x = _x(spec.d_model)
    want = _forward_and_gradients(_layer(model, spec, reference_form(model)), x)
    for form in forms or model.forms:
        got = _forward_and_gradients(_layer(model, spec, form), x)
        for key, value in want.items():
            tol = (1e-9, 1e-10) if key in ("output", "input gradient") else (1e-8, 1e-10)
            torch.testing.assert_close(got[key], value, rtol=tol[0], atol=tol[1], msg=said(model, spec, form, key))


def causal(model, spec: Spec, form: str) -> None:
    """No output depends on a later input."""
    layer = _layer(model, spec, form)
    x = _x(spec.d_model, T=11)
    later = x.clone()
    later[:, 6:] = torch.randn_like(later[:, 6:])
    with torch.no_grad():
        torch.testing.assert_close(
            layer(later)[:, :6], layer(x)[:, :6], rtol=0, atol=1e-12, msg=said(model, spec, form)
        )


def decodes(model, spec: Spec) -> None:
    """`step` token by token gives the forward pass of its last form; `prefill` of two chunks gives the state that
    stepping through them does."""
    layer = _layer(model, spec, model.forms[-1])
    x = _x(spec.d_model, T=10)
    with torch.no_grad():
        want = layer(x)
        state, got = layer.init_state(2, x), []
        for x_t in x.unbind(1):
            y_t, state = layer.step(x_t, state)
            got.append(y_t)
        torch.testing.assert_close(torch.stack(got, 1), want, rtol=1e-9, atol=1e-10, msg=said(model, spec, "step"))
        stepped = layer.init_state(2, x)
        for x_t in x[:, :7].unbind(1):
            _, stepped = layer.step(x_t, stepped)
        read = layer.prefill(x[:, 3:7], layer.prefill(x[:, :3], layer.init_state(2, x)))  # two chunks
        for a, b in zip(read, stepped):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10, msg=said(model, spec, "prefill"))


def keeps_what_it_says(model, spec: Spec) -> None:
    """The bytes of the state after n tokens are its record's `state_floats(n, spec)` in float32."""
    layer = model.mixer(spec).eval()
    x = torch.randn(1, 40, spec.d_model)
    with torch.no_grad():
        for n in (1, 9, 40):
            state = layer.prefill(x[:, :n], layer.init_state(1, x))
            assert state_bytes(state) == 4 * model.state_floats(n, spec), (where(model, spec), n)


def reads_heads(model) -> bool:
    """Does splitting the width into 2 heads change what any of its forms, or its first decoding step, computes?
    If not, 1 head stands for all."""
    x = _x(WIDTHS[0])

    def computed(heads: int, form: str) -> tuple[torch.Tensor, torch.Tensor]:
        layer = _layer(model, spec_of(WIDTHS[0], heads), form)
        return layer(x), layer.step(x[:, 0], layer.init_state(2, x))[0]

    with torch.no_grad():
        return any(not all(map(torch.equal, computed(1, f), computed(2, f))) for f in model.forms)


def shapes(model) -> list[tuple[int, int]]:
    """(width, heads) to check `model` at: both widths, at every head count where heads change what it computes."""
    return SHAPES if reads_heads(model) else [(d, 1) for d in WIDTHS]


SHAPES_OF = {m: shapes(registry.get(m)) for m in registry.names("answers")}
OTHER_FORMS = [(m, f) for m, f in FORMS if f != reference_form(registry.get(m))]  # a reference agrees with itself


@pytest.mark.parametrize("name, form, d, heads", [(m, f, *s) for m, f in OTHER_FORMS for s in SHAPES_OF[m]])
def test_every_form_matches_the_reference_forward_and_gradients(name, form, d, heads):
    forms_agree(registry.get(name), spec_of(d, heads), [form])


@pytest.mark.parametrize("name, form, d, heads", [(m, f, *s) for m, f in FORMS for s in SHAPES_OF[m]])
def test_every_form_is_causal(name, form, d, heads):
    causal(registry.get(name), spec_of(d, heads), form)


@pytest.mark.parametrize("name, d, heads", [(m, *s) for m in SHAPES_OF for s in SHAPES_OF[m]])
def test_decoding_token_by_token_reproduces_the_forward_pass(name, d, heads):
    decodes(registry.get(name), spec_of(d, heads))


@pytest.mark.parametrize("name, d, heads", [(m, *s) for m in SHAPES_OF for s in SHAPES_OF[m]])
def test_the_state_kept_is_what_the_record_says(name, d, heads):
    keeps_what_it_says(registry.get(name), spec_of(d, heads))


def test_the_mixers_that_split_their_width_into_heads_are_checked_at_each_number_of_heads():
    assert {"linear_attention", "sliding_window", "transformer"} <= {m for m, s in SHAPES_OF.items() if s == SHAPES}
    assert SHAPES_OF["min_gru"] == [(8, 1), (16, 1)]  # one decay per channel: heads change nothing
    assert shapes(MIXED_UP) == SHAPES


def test_the_kv_cache_is_written_in_place_and_copied_only_when_a_page_fills():
    layer = registry.get("transformer").mixer(SPEC).eval()
    x = torch.randn(1, 3 * KV_PAGE + 1, SPEC.d_model)
    with torch.no_grad():
        state = layer.prefill(x[:, :KV_PAGE], layer.init_state(1, x))
        assert state_bytes(state) == kv_cache_bytes(1, 1, SPEC.d_model, KV_PAGE, 1, 4)  # a full page: the formula
        homes = []
        for t in range(KV_PAGE, 3 * KV_PAGE + 1):
            _, state = layer.step(x[:, t], state)
            homes.append(state[0].data_ptr())
            assert state[0].shape[2] == t + 1
            assert state_bytes(state) == kv_cache_bytes(1, 1, SPEC.d_model, tokens_held(t + 1), 1, 4)
    assert len(set(homes)) == 3  # 33 tokens written: one copy into each new page, none between
    assert homes[:KV_PAGE] == [homes[0]] * KV_PAGE and homes[KV_PAGE] != homes[0]


def test_recurrent_states_stay_fixed_and_attentions_cache_grows():
    grows = {
        m
        for m in registry.names("answers")
        if registry.get(m).state_floats(100, SPEC) > registry.get(m).state_floats(50, SPEC)
    }
    assert {registry.get(m).table1 for m in grows} == {"self_attention"}
    window = next(m for m in registry.names("answers") if registry.get(m).table1 == "restricted")
    assert registry.get(window).state_floats(10**6, SPEC) == 2 * SPEC.window * SPEC.d_model


def test_the_scans_agree_with_a_loop_and_stay_finite_in_float32_at_32k_tokens():
    g = torch.Generator().manual_seed(0)
    a = torch.rand(2, 37, 3, 4, generator=g, dtype=torch.float64)
    b = torch.randn(2, 37, 3, 4, generator=g, dtype=torch.float64)
    h, want = torch.zeros(2, 3, 4, dtype=torch.float64), []
    for a_t, b_t in zip(a.unbind(1), b.unbind(1)):
        h = a_t * h + b_t
        want.append(h)
    want = torch.stack(want, 1)
    a_before, b_before = a.clone(), b.clone()
    torch.testing.assert_close(scan(a, b), want)  # odd length: padded and cut
    assert torch.equal(a, a_before) and torch.equal(b, b_before)  # the sweep works on copies
    torch.testing.assert_close(log_scan(a.log(), b.abs().log()).exp(), scan(a, b.abs()))
    for name in registry.names("answers"):
        mixer = registry.get(name)
        if mixer.table1 != "scan":
            continue
        torch.manual_seed(0)
        layer = mixer.mixer(Spec(8, d_state=2))  # its parallel form, float32
        with torch.no_grad():
            y = layer(torch.randn(1, 32768, 8))
        assert torch.isfinite(y).all(), name


@pytest.mark.parametrize("T", [1, 2, 3, 8, 13, 64])
def test_the_scans_own_backward_is_the_gradient(T):
    # the scan's backward is written by hand (the adjoint recurrence run backwards): checked against finite
    # differences, at lengths that are and are not powers of 2
    g = torch.Generator().manual_seed(T)
    a = torch.rand(2, T, 3, generator=g, dtype=torch.float64).requires_grad_(True)
    b = torch.randn(2, T, 3, generator=g, dtype=torch.float64).requires_grad_(True)
    assert torch.autograd.gradcheck(scan, (a, b))


def test_dependent_steps_are_counted_per_form():
    for name, form in FORMS:
        steps = registry.get(name).steps
        if form == registry.LOOP:
            assert steps(4096, form, SPEC) == 4096
        if form == registry.SCAN:
            assert steps(4096, form, SPEC) == 2 * 12 and steps(1024, form, SPEC) == 2 * 10  # ~2·log₂ n
    linear = next(m for m in registry.names("answers") if registry.CHUNKED in registry.get(m).forms and registry.LOOP in
                  registry.get(m).forms)  # fmt: skip
    assert registry.get(linear).steps(4096, registry.CHUNKED, SPEC) == math.ceil(4096 / SPEC.chunk)


def test_a_form_a_mixer_lacks_and_an_unknown_mixer_are_named():
    with pytest.raises(ValueError, match="forms"):
        registry.get(registry.names("answers")[0]).mixer(SPEC, "no_such_form")
    with pytest.raises(ValueError, match="model"):
        registry.get("no_such_mixer")


class PerHeadDecay(LinearRecurrence):
    """A toy with a bug on purpose: h_t = γ ⊙ h_{t−1} + W x_t with one decay γ per head (RetNet's decays differ by
    head). The loop gives channel c the decay of its own head, c // head_dim (`repeat_interleave`); the scan tiles
    the decays instead, c % heads (`repeat`): the same at one head, another head's decay for most channels at more."""

    def __init__(self, d_model: int, n_heads: int, form: str = LOOP):
        super().__init__(form)
        self.n_heads = n_heads
        self.proj = torch.nn.Linear(d_model, d_model)
        self.register_buffer("gamma", 1 - 2.0 ** -(1 + torch.arange(n_heads, dtype=torch.float32)))  # ½, ¾, ⅞…

    @classmethod
    def from_spec(cls, s: Spec, form: str) -> "PerHeadDecay":
        return cls(s.d_model, s.heads, form)

    def decays(self, tiled: bool) -> torch.Tensor:
        """One decay per channel (d,): its head's, or with `tiled` the bug's."""
        head_dim = self.proj.out_features // self.n_heads
        return self.gamma.repeat(head_dim) if tiled else self.gamma.repeat_interleave(head_dim)

    def recurrence_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor]:
        return (self.proj(x),)

    def recur_loop(self, b: torch.Tensor) -> torch.Tensor:
        a = self.decays(tiled=False)
        return loop(lambda h, b_t: (a * h + b_t,) * 2, self.init_state(b.shape[0], b)[0], b)

    def recur_scan(self, b: torch.Tensor) -> torch.Tensor:
        return scan(self.decays(tiled=True).expand_as(b), b)

    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        return (like.new_zeros(batch, self.proj.out_features),)

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        h = self.decays(tiled=False) * state[0] + self.proj(x_t)
        return h, (h,)


MIXED_UP = registry.Model("per_head_decay", registry.RECURRENT, PerHeadDecay.from_spec, frozenset(), forms=(LOOP, SCAN))


@pytest.mark.parametrize("d, heads", SHAPES)
def test_a_mixer_that_mixes_its_heads_up_passes_at_one_head_and_is_caught_at_more(d, heads):
    spec = spec_of(d, heads)
    causal(MIXED_UP, spec, SCAN)  # the bug is between heads, not in time
    if heads == 1:
        forms_agree(MIXED_UP, spec)
        decodes(MIXED_UP, spec)
        return
    with pytest.raises(AssertionError, match="per_head_decay scan"):
        forms_agree(MIXED_UP, spec)
    with pytest.raises(AssertionError, match="per_head_decay step"):
        decodes(MIXED_UP, spec)


# ---- a mixer's words --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_model_says_what_its_state_holds_in_both_languages(lang):
    """The recall page's sentence about a model's state: its own `recall.state.<name>` where the catalogue has one,
    else the default built from its facts; never a missing key."""
    words, tr = catalogue(lang), translator(lang)
    said = {m: state_words(m, tr) for m in registry.names("recall_frontier")}
    assert all(text and "«" not in text and "{" not in text for text in said.values()), said
    assert said["min_gru"] == words["recall.state.min_gru"]  # a mixer's own sentence, where it has one, comes first


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_model_without_a_sentence_of_its_own_is_described_by_its_facts(lang):
    words = translator(lang)
    tr = lambda key, **values: f"«{key}»" if key.startswith("recall.state.") else words(key, **values)  # none own one
    facts = {"min_gru": ("fixed", "selective"), "rwkv": ("fixed", "time_invariant"), "sliding_window":
             ("fixed", "attention"), "linear_attention": ("fixed", "keyed"), "transformer": ("grows", "keyed")}  # fmt: skip
    for m, (size, how) in facts.items():
        want = tr(
            "recall.state_default", size=tr(f"recall.state_default.{size}"), how=tr(f"recall.state_default.{how}")
        )
        assert state_words(m, tr) == want, m
