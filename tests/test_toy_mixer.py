"""Recipe 1 of CONTRIBUTING.md, "Add a mixer", followed step by step. The toy's one file is written into a folder of
core.models.mixers and found by the package's own loader; its name goes into the two catalogues; nothing else is
edited. Each test checks one step of the recipe with the checks tests/test_mixers.py runs on every shipped mixer, so
a step left out of the toy (or out of the recipe) fails one of them. The toy unregisters itself afterwards."""

import dataclasses
import importlib
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from test_mixers import causal, decodes, forms_agree, keeps_what_it_says, shapes, spec_of

from core.experiments import EXPERIMENTS
from core.findings import recall_frontier as recall_findings
from core.models import mixers, registry
from core.terms import status
from core.terms.i18n import LANGS, catalogue, translator

NAME = "toy_ema"
RECIPE = Path(__file__).resolve().parent.parent / "CONTRIBUTING.md"

# Steps 1–3: core/models/mixers/toy_ema.py, the whole of the toy's code
TOY = '''
"""A toy mixer: an exponential moving average of a linear map of the input, with a fixed decay per channel,
h_t = a ⊙ h_{t−1} + (1 − a) ⊙ W x_t and y_t = W_o h_t."""

import torch
from torch import nn

from core.models.layers import loop
from core.models.mixers.base import LOOP, LinearRecurrence, answers_tags, mixer, per_form, scan
from core.models.registry import TIME_INVARIANT, Spec


@mixer
class ToyEMA(LinearRecurrence):
    """A fixed decay per channel: the state is h, d numbers per sequence."""

    # step 1: its facts (LinearRecurrence brings its family, loop and scan forms, their steps and Table 1's row)
    name, color, source = "toy_ema", "#000000", "a test"
    tags, saved = answers_tags(TIME_INVARIANT), per_form(6, 8)

    @staticmethod
    def state_floats(n: int, s: Spec) -> int:
        return s.d_model

    def __init__(self, d_model: int, form: str = LOOP):
        super().__init__(form)
        self.inp, self.out = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.decay = nn.Parameter(torch.linspace(-2.0, 2.0, d_model))  # a = σ(decay): slow to fast channels

    # step 2: what every form shares, around the recurrence in each form
    def recurrence_inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.sigmoid(self.decay).expand_as(x)
        return a, (1 - a) * self.inp(x)

    def read_out(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.out(h)

    def recur_loop(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return loop(lambda h, a_t, b_t: (a_t * h + b_t,) * 2, self.init_state(a.shape[0], a)[0], a, b)

    def recur_scan(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return scan(a, b)

    # step 3: decoding, one token at a time from a state (prefill: base's loop of steps)
    def init_state(self, batch: int, like: torch.Tensor) -> tuple:
        return (like.new_zeros(batch, self.decay.shape[0]),)

    def step(self, x_t: torch.Tensor, state: tuple) -> tuple[torch.Tensor, tuple]:
        a, b = self.recurrence_inputs(x_t)
        h = a * state[0] + b
        return self.read_out(x_t, h), (h,)
'''
# Step 5: `model.toy_ema` in core/locales/en/answers.json and core/locales/zh/answers.json
WORDS = {"en": "toy moving average", "zh": "玩具滑动平均"}


@pytest.fixture
def toy(tmp_path):
    """The toy's file in a folder of core.models.mixers, loaded as the package loads its own, and its name in both
    catalogues; all removed again afterwards."""
    assert NAME not in registry.MODELS  # so the checks below can fail
    (tmp_path / f"{NAME}.py").write_text(TOY, encoding="utf-8")
    importlib.invalidate_caches()
    mixers.__path__.append(str(tmp_path))
    words = {lang: catalogue(lang) for lang in LANGS}
    try:
        assert mixers.load() == (NAME,)  # no import line: a module in the folder is a mixer
        for lang, cat in words.items():
            cat[f"model.{NAME}"] = WORDS[lang]
        yield registry.get(NAME)
    finally:
        mixers.__path__.remove(str(tmp_path))
        registry.unregister(NAME)
        sys.modules.pop(f"{mixers.__name__}.{NAME}", None)
        for cat in words.values():
            cat.pop(f"model.{NAME}", None)


def _offered_by(preset: str) -> set[str]:
    """The experiments whose `preset` config names the toy in one of its fields."""
    out = set()
    for name, exp in EXPERIMENTS.items():
        if preset in exp.presets:
            cfg = exp.config(preset)
            if any(isinstance(v, tuple) and NAME in v for v in dataclasses.asdict(cfg).values()):
                out.add(name)
    return out


def test_the_toy_is_absent_before_it_is_registered():
    assert NAME not in registry.MODELS and not _offered_by("full")


def test_step_1_its_facts_offer_it_in_every_page_5_experiment(toy):
    assert toy.forms == (registry.LOOP, registry.SCAN) and toy.table1 == "scan" and toy.selective is False
    assert NAME in registry.names(registry.ANSWERS) and toy.steps(1024, registry.SCAN, spec_of(8, 1)) == 20
    assert {"answers_speed", "answers_decode", "answers_reach", "recall_frontier"} <= _offered_by("full")
    assert toy.saved_floats(registry.LOOP, spec_of(8, 1)) == 6 * 8


def test_step_2_its_forms_compute_one_function_around_one_recurrence(toy):
    for d, heads in shapes(toy):
        spec = spec_of(d, heads)
        forms_agree(toy, spec)
        for form in toy.forms:
            causal(toy, spec, form)
    layer = toy.layer(spec_of(8, 1)).double()
    x = torch.randn(2, 9, 8, dtype=torch.float64)
    inputs = layer.recurrence_inputs(x)  # what page 5 times alone (rec_ms): the recurrence without the rest
    loop, scanned = (layer.recurrence(form)(*inputs) for form in toy.forms)
    torch.testing.assert_close(scanned, loop)
    torch.testing.assert_close(layer.read_out(x, loop), layer(x))


def test_step_3_it_decodes_a_token_at_a_time_keeping_what_its_record_says(toy):
    for d, heads in shapes(toy):
        decodes(toy, spec_of(d, heads))
        keeps_what_it_says(toy, spec_of(d, heads))


def test_step_4_a_masked_matrix_form_can_only_be_its_reference(toy):
    with pytest.raises(ValueError, match="reference"):
        registry.register(dataclasses.replace(toy, name=f"{NAME}_masked", forms=(registry.LOOP, "masked")))
    assert f"{NAME}_masked" not in registry.MODELS


def _recall_rows(model: str) -> pd.DataFrame:
    """One final MQAR row of `model` that stayed at chance: the recall page's sentence about its state."""
    return pd.DataFrame([{"task": "mqar", "mixer": model, "d_model": 16, "n_pairs": 4, "seq_len": 32,
                          "state_bytes": 256, "params": 1, "n_layers": 2, "step": 10, "loss": 1.0, "accuracy": 0.0,
                          "chance": 0.25, "seed": 0, "device": "cpu", "status": status.OK}])  # fmt: skip


@pytest.mark.parametrize("lang", LANGS)
def test_step_5_its_name_in_both_catalogues_and_every_other_sentence_from_its_facts(toy, lang):
    tr = translator(lang)
    assert tr(f"model.{NAME}") == WORDS[lang]
    own = tr(
        "recall.state_default", size=tr("recall.state_default.fixed"), how=tr("recall.state_default.time_invariant")
    )
    assert recall_findings.state_words(NAME, tr) == own  # built from its facts: a fixed state, a fixed decay
    (line,) = recall_findings.takeaways(_recall_rows(NAME), tr)
    assert WORDS[lang] in line and own in line and "«" not in line and "{" not in line


def test_step_6_the_recipe_names_the_experiments_whose_reference_it_joins(toy):
    recipe = RECIPE.read_text(encoding="utf-8").split("**1 · Add a mixer**")[1].split("**2 ·")[0]
    (named,) = re.findall(r"python -m core reference --only ([a-z_ ]+)`", recipe)
    assert set(named.split()) == _offered_by("full")  # regenerate exactly these, whose full preset now runs it
    assert "python -m core.home.summary" in recipe


def test_the_toy_is_gone_afterwards():
    assert NAME not in registry.MODELS and not _offered_by("full")
