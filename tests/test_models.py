"""The fast and the explicit paths compute the same function; every kind's record matches the model it builds."""

import pytest
import torch
import torch.nn.functional as F

from core.models import registry
from core.models.layers import SelfAttention, n_params, naive_attention


def test_step_loop_lstm_equals_fused_lstm():
    fused = registry.get("lstm").build(20, 16, 2)
    loop = registry.get("lstm_loop").build(20, 16, 2)
    loop.embed.load_state_dict(fused.embed.state_dict())
    loop.head.load_state_dict(fused.head.state_dict())
    for layer, twin in zip(loop.layers, fused.layers):
        layer.cell.weight_ih.data.copy_(twin.rnn.weight_ih_l0)
        layer.cell.weight_hh.data.copy_(twin.rnn.weight_hh_l0)
        layer.cell.bias_ih.data.copy_(twin.rnn.bias_ih_l0)
        layer.cell.bias_hh.data.copy_(twin.rnn.bias_hh_l0)
    tokens = torch.randint(20, (3, 11))
    torch.testing.assert_close(loop(tokens), fused(tokens), rtol=1e-4, atol=1e-5)


def test_naive_attention_equals_sdpa_and_is_causal():
    q, k, v = (torch.randn(2, 3, 10, 8) for _ in range(3))
    out, probs = naive_attention(q, k, v, causal=True)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), rtol=1e-5, atol=1e-5)
    assert torch.all(probs.triu(1) == 0)
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, 3, 10))


def test_attention_module_paths_agree():
    a = SelfAttention(16, 2, impl="sdpa")
    b = SelfAttention(16, 2, impl="naive")
    b.load_state_dict(a.state_dict())
    x = torch.randn(2, 7, 16)
    torch.testing.assert_close(a(x), b(x), rtol=1e-5, atol=1e-5)
    assert b.last_probs.shape == (2, 2, 7, 7)


@pytest.mark.parametrize("name", registry.names("chapter"))
def test_every_kind_builds_a_causal_model_its_record_describes(name):
    """Parameter formula = counted parameters; `.layers` holds the stack; output at t ignores tokens after t."""
    kind = registry.get(name)
    model = kind.build(12, 16, 3).eval()
    assert kind.n_params(12, 16, 3) == n_params(model)
    assert len(model.layers) == 3
    assert kind.seq_steps(50, 3) == (150 if kind.recurrent else 3)
    x = torch.randint(12, (2, 9))
    y = x.clone()
    y[:, 5:] = (y[:, 5:] + 1) % 12
    with torch.no_grad():
        torch.testing.assert_close(model(x)[:, :5], model(y)[:, :5])


def test_forget_bias_is_set_once_for_every_kind_with_a_forget_gate():
    for name, kind in ((n, registry.get(n)) for n in registry.names("chapter")):
        if not kind.forget_gate:
            continue
        layer = kind.layer(registry.Spec(8, forget_bias=1.5))
        biases = {n: p for n, p in layer.named_parameters() if "bias_ih" in n or "bias_hh" in n}
        assert biases, name
        for n, p in biases.items():
            assert torch.all(p[8:16] == (1.5 if "bias_ih" in n else 0.0)), (name, n)


def test_a_seed_gives_the_same_weights_whatever_the_stack_is_called():
    """The registry's stacks create their parts in the order the earlier model classes did (embed, layers, head)."""
    torch.manual_seed(0)
    reference = torch.nn.Embedding(10, 8).weight.detach().clone()
    torch.manual_seed(0)
    model = registry.get("lstm").build(10, 8, 2)
    torch.testing.assert_close(model.embed.weight.detach(), reference)


def test_the_step_loop_reads_each_token_without_a_full_size_backward():
    """x[:, t] in the loop made backward write a zero tensor of the whole sequence per step (O(n²)); the loop reads
    the tokens through one unbind, so its graph holds no per-step select."""
    from core.models.layers import LoopLSTM

    x = torch.randn(2, 6, 4, requires_grad=True)
    seen, todo = set(), [LoopLSTM(4)(x).sum().grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        todo += [n for n, _ in node.next_functions]
    names = {type(n).__name__ for n in seen}
    assert "UnbindBackward0" in names and not any(n.startswith("SelectBackward") for n in names)
