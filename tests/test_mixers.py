"""Page 5's mixers: every form computes the same function as the sequential reference (forward and gradients, in
float64), every form is causal, decoding one token at a time reproduces the forward pass, and what a mixer keeps
between tokens is exactly what its record says."""

import math

import pytest
import torch

from core.harness.memory_formulas import KV_PAGE, kv_cache_bytes, tokens_held
from core.models import registry
from core.models.mixers.base import log_scan, scan, state_bytes
from core.models.registry import Spec

SPEC = Spec(16, window=4, kernel=2, levels=3, chunk=4, d_state=4)  # small sizes: several chunks and windows
FORMS = [(m, f) for m in registry.names("answers") for f in registry.get(m).forms]


def _layer(name: str, form: str, dtype=torch.float64):
    torch.manual_seed(1)
    return registry.get(name).mixer(SPEC, form).to(dtype)


def _x(T: int = 13, dtype=torch.float64) -> torch.Tensor:
    return torch.randn(2, T, SPEC.d_model, generator=torch.Generator().manual_seed(2), dtype=dtype)


def _reference(name: str) -> str:
    return registry.get(name).reference_form or registry.get(name).forms[0]


@pytest.mark.parametrize("name, form", FORMS)
def test_every_form_matches_the_reference_forward_and_gradients(name, form):
    ref, layer = _layer(name, _reference(name)), _layer(name, form)
    x = _x().requires_grad_(True)
    y_ref = ref(x)
    w = torch.randn_like(y_ref)
    (g_ref,) = torch.autograd.grad((y_ref * w).sum(), x)
    x2 = x.detach().clone().requires_grad_(True)
    y = layer(x2)
    (g,) = torch.autograd.grad((y * w).sum(), x2)
    torch.testing.assert_close(y, y_ref, rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(g, g_ref, rtol=1e-9, atol=1e-10)
    for (pn, p), (_, q) in zip(ref.named_parameters(), layer.named_parameters()):
        (gp,) = torch.autograd.grad((ref(x.detach()) * w).sum(), p)
        (gq,) = torch.autograd.grad((layer(x.detach()) * w).sum(), q)
        torch.testing.assert_close(gq, gp, rtol=1e-8, atol=1e-10, msg=f"{name} {form}: gradient of {pn}")


@pytest.mark.parametrize("name, form", FORMS)
def test_every_form_is_causal(name, form):
    layer = _layer(name, form)
    x = _x(T=11)
    later = x.clone()
    later[:, 6:] = torch.randn_like(later[:, 6:])
    with torch.no_grad():
        torch.testing.assert_close(layer(later)[:, :6], layer(x)[:, :6], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", registry.names("answers"))
def test_decoding_token_by_token_reproduces_the_forward_pass(name):
    layer = _layer(name, registry.get(name).forms[-1])
    x = _x(T=10)
    with torch.no_grad():
        want = layer(x)
        state, got = layer.init_state(2, x), []
        for x_t in x.unbind(1):
            y_t, state = layer.step(x_t, state)
            got.append(y_t)
        torch.testing.assert_close(torch.stack(got, 1), want, rtol=1e-9, atol=1e-10)
        stepped = layer.init_state(2, x)
        for x_t in x[:, :7].unbind(1):
            _, stepped = layer.step(x_t, stepped)
        read = layer.prefill(x[:, 3:7], layer.prefill(x[:, :3], layer.init_state(2, x)))  # two chunks
        for a, b in zip(read, stepped):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", registry.names("answers"))
def test_the_state_kept_is_what_the_record_says(name):
    mixer = registry.get(name)
    layer = mixer.mixer(SPEC).eval()
    x = torch.randn(1, 40, SPEC.d_model)
    with torch.no_grad():
        for n in (1, 9, 40):
            state = layer.prefill(x[:, :n], layer.init_state(1, x))
            assert state_bytes(state) == 4 * mixer.state_floats(n, SPEC), (name, n)


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
