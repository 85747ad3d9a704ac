"""The registries answer for the model kinds and attention implementations: no code outside them asks a name, and
a new kind is one record (plus its catalogue strings) away from running on the serial page's experiment."""

import ast
import pathlib

import pytest

from core.experiments import serial
from core.models import attention, registry
from core.models.layers import Recurrent
from core.terms.i18n import catalogue

ROOT = pathlib.Path(__file__).resolve().parent.parent
REGISTRIES = ROOT / "core" / "models"  # the model and attention registries and the layers they build
ASKING_CALLS = {"isin", "get", "startswith", "endswith", "index"}


def _names() -> set[str]:
    backends = {b for b in attention.BACKENDS if b != attention.AUTO}  # 'auto' is also a device choice
    return set(registry.MODELS) | set(attention.IMPLS) | backends


def _asked(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) wherever a string constant that is a registered name is compared, indexed with, or passed to
    .isin / .get / .startswith: the places where code branches on a kind instead of asking its record."""

    def literals(node):
        if isinstance(node, ast.Constant) and node.value in names:
            yield node
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for elt in node.elts:
                yield from literals(elt)

    hits = []
    for node in ast.walk(tree):
        asked = []
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                asked += literals(side)
        elif isinstance(node, ast.Subscript):
            asked += literals(node.slice)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ASKING_CALLS:
            for arg in node.args:
                asked += literals(arg)
        hits += [(n.lineno, n.value) for n in asked]
    return hits


def test_no_code_outside_the_registries_asks_a_kind_by_name():
    names = _names()
    found = []
    for folder in ("core", "ui", "pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if REGISTRIES in path.parents:
                continue
            for line, name in _asked(ast.parse(path.read_text(encoding="utf-8")), names):
                found.append(f"{path.relative_to(ROOT)}:{line} asks {name!r}")
    assert not found, "\n".join(found)


def test_the_scan_finds_what_it_looks_for():
    """The test above can fail: each way of asking a name is caught."""
    code = 'a == "lstm"\nb in ("x", "naive")\nc["transformer"]\nd.isin(["sdpa"])\ne.get("gru")\nf = {"rnn": 1}\n'
    assert [n for _, n in _asked(ast.parse(code), _names())] == ["lstm", "naive", "transformer", "sdpa", "gru"]


@pytest.fixture
def toy_kind():
    """A new model kind — a fused tanh RNN twice as wide inside — registered for the serial experiment, with its
    catalogue strings; removed again afterwards."""

    def make_layer(spec, form):
        import torch

        class Wide(torch.nn.Module):
            def __init__(self, d):
                super().__init__()
                self.inner = Recurrent(torch.nn.RNN(d, 2 * d, batch_first=True))
                self.out = torch.nn.Linear(2 * d, d)

            def forward(self, x):
                return self.out(self.inner(x))

        return Wide(spec.d_model)

    kind = registry.Model(
        name="toy_wide_rnn",
        family=registry.RECURRENT,
        make=make_layer,
        layer_flops=lambda B, T, d, causal=True: 2 * B * T * (2 * d) * (d + 2 * d) + 2 * B * T * 2 * d * d,
        layer_params=lambda d: (2 * d) * d + (2 * d) ** 2 + 2 * (2 * d) + 2 * d * d + d,
        activation_floats=24,
        tags=frozenset({"serial"}),
    )
    registry.register(kind)
    strings = {lang: catalogue(lang) for lang in ("en", "zh")}
    for lang, cat in strings.items():
        cat["model.toy_wide_rnn"] = "toy wide RNN" if lang == "en" else "玩具宽 RNN"
    yield kind
    registry.unregister("toy_wide_rnn")
    for cat in strings.values():
        cat.pop("model.toy_wide_rnn", None)


@pytest.mark.slow
def test_a_new_kind_is_one_record_away_from_the_serial_experiment(toy_kind):
    from core.models.layers import n_params
    from core.terms.i18n import translator

    assert "toy_wide_rnn" in registry.names("serial")
    # width 16, one timed round and no warm-up: what is checked here is counted (statuses, steps, parameters, kept
    # bytes), not timed; the quick preset's width 128 and 1 + 5 rounds took 4× the CPU time
    cfg = serial.EXPERIMENT.config("quick", {"models": "toy_wide_rnn,lstm,transformer", "seq_lens": "16,32,64",
                                             "d_model": "16", "repeats": "1", "warmup": "0"})  # fmt: skip
    df = serial.run(cfg)
    toy = df[df["model"] == "toy_wide_rnn"]
    assert list(toy["status"]) == ["ok"] * 3
    assert list(toy["seq_steps"]) == [16, 32, 64]  # recurrent: n dependent steps per layer, from its record
    assert toy["params"].iloc[0] == toy_kind.n_params(cfg.vocab_size, cfg.d_model, 1)
    assert toy["params"].iloc[0] == n_params(toy_kind.build(cfg.vocab_size, cfg.d_model, 1))
    assert (toy["saved_bytes"].diff().dropna() > 0).all()  # BPTT keeps every step's state
    lines = serial.EXPERIMENT.takeaways(df, translator("en"))
    assert lines and all("«" not in line for line in lines)


def test_an_unknown_kind_is_refused_by_name():
    with pytest.raises(ValueError, match="models"):
        serial.EXPERIMENT.config("quick", {"models": "no_such_kind"})


def test_every_module_fits_in_a_readers_head():
    """One question per module: no file in core/, ui/ or pages/ is over 350 lines."""
    long = [f"{p.relative_to(ROOT)}: {n}" for folder in ("core", "ui", "pages") for p in sorted((ROOT / folder).rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 350]  # fmt: skip
    assert not long, long
