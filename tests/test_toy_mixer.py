"""A new mixer is one module: its layer class carries its facts and `@mixer` registers it. Written here to a file,
imported, and then offered, with no list of names edited anywhere, in the serial experiment's quick preset and in
page 5's (answers_speed), and built and run by the serial experiment's own model builder. Its only other lines are
its name in the two catalogues. It unregisters itself afterwards."""

import importlib.util
import sys

import pytest
import torch

from core.experiments import answers_speed, serial
from core.models import registry
from core.terms.i18n import catalogue

TOY = '''
"""A toy mixer: a causal running mean of a linear map of the input (a fixed decay of 1/t)."""

import torch

from core.models.mixers.base import FUSED, MixerLayer, mixer
from core.models.registry import ANSWERS, RECURRENT, TIME_INVARIANT


@mixer
class RunningMean(MixerLayer):
    name, family, color, table1, source = "toy_mean", RECURRENT, "#000000", "recurrent", "a test"
    tags = frozenset({"serial", ANSWERS, TIME_INVARIANT})
    forms, activation_floats = (FUSED,), 4

    @staticmethod
    def steps(n, form, s):
        return n

    @staticmethod
    def state_floats(n, s):
        return s.d_model

    @staticmethod
    def layer_flops(B, T, d, causal=True):
        return 2 * B * T * d * d + 2 * B * T * d

    @staticmethod
    def layer_params(d):
        return d * d + d

    def __init__(self, d_model: int, form: str = FUSED):
        super().__init__(form)
        self.proj = torch.nn.Linear(d_model, d_model)

    def forward_fused(self, x):
        steps = torch.arange(1, x.shape[1] + 1, device=x.device, dtype=x.dtype)[None, :, None]
        return self.proj(x).cumsum(1) / steps
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
