"""Analytic FLOP formulas match torch's FlopCounterMode exactly on the unfused paths."""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from core.harness import flops
from core.models import registry


def counted_forward(model, tokens) -> int:
    with FlopCounterMode(display=False) as counter:
        model(tokens)
    return counter.get_total_flops()


@pytest.mark.parametrize("name", registry.names("chapter"))
@pytest.mark.parametrize("n_layers", [1, 2])
def test_model_forward_flops_match_the_counter(name, n_layers):
    """Every registered kind's record counts its own FLOPs: the formula equals the counter on the unfused path."""
    kind = registry.get(name)
    model = kind.build(16, 32, n_layers)
    tokens = torch.randint(16, (2, 24))
    with torch.backends.mkldnn.flags(enabled=False), sdpa_kernel(SDPBackend.MATH):
        counted = counted_forward(model, tokens)
    assert counted == kind.forward_flops(2, 24, 32, n_layers, 16, causal=False)  # the math path computes the square


def test_fused_kernels_hide_their_flops_from_the_counter():
    """Why the formulas exist: the counter sees 0 inside the fused oneDNN LSTM."""
    lstm = torch.nn.LSTM(32, 32, batch_first=True)
    x = torch.randn(2, 24, 32)
    with FlopCounterMode(display=False) as counter:
        lstm(x)
    if counter.get_total_flops() != 0:
        pytest.skip("this build runs an unfused LSTM on CPU")
    assert flops.recurrent_forward(4, 2, 24, 32, 32) == 8 * 32 * 64 * 48


def test_training_is_three_forwards_and_attention_term():
    assert flops.training_step(10) == 30
    assert flops.attention_forward(2, 100, 64) == 4 * 2 * 100 * 100 * 64
    assert flops.attention_forward(2, 100, 64, causal=True) == 2 * 2 * 100 * 100 * 64  # as the fused kernels do it
