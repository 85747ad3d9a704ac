"""A new mixer is one module declaring one record: written here to a file, imported, and then offered — with no
list of names edited anywhere — in the serial experiment's quick preset and in page 5's (answers_speed), and built
and run by the serial experiment's own model builder. It unregisters itself afterwards."""

import importlib.util
import sys

import pytest
import torch

from core.experiments import answers_speed, serial
from core.models import registry
from core.terms.i18n import catalogue

TOY = '''
"""A toy mixer: a causal running mean of a linear map of the input (a fixed decay of 1/t), one record."""

import torch

from core.models import registry


class RunningMean(torch.nn.Module):
    def __init__(self, d_model: int):
        super().__init__()
        self.proj = torch.nn.Linear(d_model, d_model)

    def forward(self, x):
        steps = torch.arange(1, x.shape[1] + 1, device=x.device, dtype=x.dtype)[None, :, None]
        return self.proj(x).cumsum(1) / steps


registry.register(registry.Model(
    "toy_mean", registry.RECURRENT, lambda s, form: RunningMean(s.d_model),
    frozenset({"serial", registry.ANSWERS, registry.TIME_INVARIANT}), "#000000",
    layer_flops=lambda B, T, d, causal=True: 2 * B * T * d * d + 2 * B * T * d,
    layer_params=lambda d: d * d + d, activation_floats=4, steps=lambda n, form, s: n,
    state_floats=lambda n, s: s.d_model, table1="recurrent", source="a test"))
'''


@pytest.fixture
def toy(tmp_path):
    """The toy's module written and imported, with its catalogue strings; removed again afterwards."""
    assert "toy_mean" not in registry.MODELS  # so the checks below can fail
    path = tmp_path / "toy_mixer.py"
    path.write_text(TOY)
    spec = importlib.util.spec_from_file_location("toy_mixer", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["toy_mixer"] = module
    strings = {lang: catalogue(lang) for lang in ("en", "zh")}
    try:
        spec.loader.exec_module(module)
        for lang, cat in strings.items():
            cat["model.toy_mean"] = "toy running mean" if lang == "en" else "玩具滑动平均"
        yield registry.get("toy_mean")
    finally:
        registry.unregister("toy_mean")
        sys.modules.pop("toy_mixer", None)
        for cat in strings.values():
            cat.pop("model.toy_mean", None)


def test_the_toy_is_absent_before_it_is_registered():
    assert "toy_mean" not in serial.EXPERIMENT.config("quick").models
    assert "toy_mean" not in answers_speed.EXPERIMENT.config("quick").mixers


def test_a_new_mixer_is_one_module_away_from_the_serial_and_page_5_presets(toy):
    assert "toy_mean" in serial.EXPERIMENT.config("quick").models
    assert "toy_mean" in answers_speed.EXPERIMENT.config("quick").mixers
    assert "toy_mean" in registry.names(registry.ANSWERS) and registry.get("toy_mean").selective is False
    cfg = serial.EXPERIMENT.config("quick", {"models": "toy_mean", "d_model": "16", "seq_lens": "8"})
    model = serial.build_model("toy_mean", cfg)
    out = model(torch.randint(0, cfg.vocab_size, (2, 8)))
    assert out.shape == (2, 8, cfg.vocab_size) and torch.isfinite(out).all()
    assert sum(p.numel() for p in model.parameters()) == toy.n_params(cfg.vocab_size, cfg.d_model, cfg.n_layers)


def test_the_toy_is_gone_afterwards():
    assert "toy_mean" not in registry.MODELS and "toy_mean" not in serial.EXPERIMENT.config("quick").models
