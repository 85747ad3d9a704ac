"""The depth experiment: per-layer gradient norms by hand, vanishing gradients in plain stacks, divergence,
determinism, the guard, bad input, computed takeaways, the charts and the page."""

import itertools
import math
import os
import subprocess
import sys

import pandas as pd
import pytest
import torch
from conftest import app_test, unescaped
from torch import nn

from core.experiments import depth
from core.findings import depth as findings
from core.harness import guard
from core.models import registry
from core.models.layers import n_params
from core.terms.i18n import translator
from core.training import loop as train_loop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIRED = (
    "model",
    "n_layers",
    "layer",
    "step",
    "grad_norm",
    "loss",
    "lr",
    "warmup_steps",
    "clip",
    "seed",
    "device",
    "status",
)
TINY = {"d_model": "16", "seq_len": "8", "batch_size": "4", "init_depths": "1", "device": "cpu", "log_every": "1"}


def tiny(**overrides):
    return depth.EXPERIMENT.config("quick", {**TINY, **{k: str(v) for k, v in overrides.items()}})


# ---- the measurement itself -----------------------------------------------------------------------------------
def test_layer_grad_norms_match_a_hand_computed_two_layer_model():
    # y = W2 W1 x, loss = sum(y). With x = (1, 2), W1 = diag(1, 2), W2 = diag(3, 1):
    # h = W1 x = (1, 4); dL/dW2 = 1 hᵀ = [[1, 4], [1, 4]] → ‖·‖ = √34; dL/dh = W2ᵀ 1 = (3, 1);
    # dL/dW1 = (3, 1) xᵀ = [[3, 6], [1, 2]] → ‖·‖ = √50.
    l1, l2 = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        l1.weight.copy_(torch.diag(torch.tensor([1.0, 2.0])))
        l2.weight.copy_(torch.diag(torch.tensor([3.0, 1.0])))
    l2(l1(torch.tensor([1.0, 2.0]))).sum().backward()
    idle = nn.Linear(2, 2)  # no gradient reached it
    assert depth.layer_grad_norms([l1, l2, idle]) == pytest.approx([math.sqrt(50), math.sqrt(34), 0.0])
    assert depth.total_grad_norm([l1.weight, l2.weight]) == pytest.approx(math.sqrt(84))


@pytest.mark.parametrize("name", registry.names("depth"))
def test_layers_partition_the_weights_and_the_guard_counts_them_exactly(name):
    model = depth.build_model(name, vocab_size=10, d_model=16, n_layers=3)
    layers = list(model.layers)
    assert len(layers) == 3
    assert registry.get(name).n_params(10, 16, 3) == n_params(model)
    tokens = torch.randint(10, (2, 5))
    torch.nn.functional.cross_entropy(model(tokens).flatten(0, 1), tokens.flatten()).backward()
    in_layers = {id(p) for layer in layers for p in layer.parameters()}
    rest = [p for p in model.parameters() if id(p) not in in_layers]  # embedding, head, final norm
    total_sq = sum(n**2 for n in depth.layer_grad_norms(layers)) + depth.total_grad_norm(rest) ** 2
    assert math.sqrt(total_sq) == pytest.approx(depth.total_grad_norm(list(model.parameters())), rel=1e-5)


def test_gradient_fades_through_plain_stacks_but_not_residual_ones():
    cfg = tiny(d_model=32, seq_len=16)
    cpu = torch.device("cpu")

    def first_layer(name, L):
        with depth.torch_threads(depth.CPU_THREADS):  # as run() does
            return depth.measure_init(name, cfg, L, 0, cpu)[0]["grad_norm"]

    assert first_layer("lstm", 8) < first_layer("lstm", 1) / 100  # measured here: ~4e4× smaller
    assert first_layer("lstm_residual", 8) > first_layer("lstm_residual", 1) / 3
    assert first_layer("no_residual", 16) < first_layer("no_residual", 1) / 4  # measured here: ~10× smaller


def test_chain_task_and_its_loss_bounds():
    perm = torch.tensor([2, 0, 3, 1])
    tokens, targets = depth.make_batch(perm, 3, 6, 0.0, torch.Generator().manual_seed(0))
    assert torch.equal(targets, perm[tokens]) and torch.equal(tokens[:, 1:], targets[:, :-1])
    assert depth.chain_entropy(16, 0.0) == 0.0
    assert depth.chain_entropy(16, 1.0) == pytest.approx(math.log(16))  # all noise: a uniform guess is optimal


def test_warmup_schedule():
    assert [train_loop.lr_at(s, 1.0, 4) for s in (1, 2, 4, 5, 100)] == [0.25, 0.5, 1.0, 1.0, 1.0]
    assert train_loop.lr_at(1, 0.3, 0) == 0.3


# ---- runs: columns, progress, determinism, divergence, the guard ---------------------------------------------
@pytest.fixture(scope="module")
def small():
    cfg = tiny(models="lstm,post_ln", depths="1,2", steps=6, warmup_steps="0,3", clip=0.5)
    progress = []
    return cfg, depth.run(cfg, on_progress=progress.append), progress


def test_columns_rows_and_progress(small):
    cfg, df, progress = small
    assert set(REQUIRED) <= set(df.columns)
    assert (df["status"] == "ok").all()
    init = df[df["phase"] == "init"]
    assert (init["step"] == 0).all() and set(init["n_layers"]) == {1, 2}
    runs = df[(df["phase"] == "train") & df["layer"].isna()]
    assert len(runs) == 2 * 2 * 2 * cfg.steps  # models × depths × warm-ups × logged steps (every step)
    per_layer = df[(df["phase"] == "train") & df["layer"].notna()]
    assert len(per_layer) == 2 * 2 * cfg.steps * (1 + 2)  # one row per layer and step
    assert runs["clipped"].astype(bool).eq(runs["grad_norm"] > 0.5).all()
    assert progress[-1].done == progress[-1].total and sum(len(p.rows) for p in progress) == len(df)
    assert all(b.done >= a.done for a, b in itertools.pairwise(progress))


def test_same_seed_same_numbers(small):
    cfg, df, _ = small
    again = depth.run(cfg)
    cols = ["model", "n_layers", "layer", "step", "grad_norm", "loss", "lr_now", "warmup_steps", "seed"]
    pd.testing.assert_frame_equal(df[cols], again[cols])
    other = depth.run(
        depth.EXPERIMENT.config(
            "quick", {**TINY, "models": "lstm", "depths": "1", "steps": "2", "warmup_steps": "0", "seed": "7"}
        )
    )
    assert not df[df["model"] == "lstm"]["loss"].head(3).equals(other["loss"].head(3))


@pytest.mark.parametrize("what", ["loss", "gradient norm"])
def test_a_nan_ends_only_that_run_as_diverged(monkeypatch, what):
    real = depth.build_model

    def poisoned(name, *args):
        model = real(name, *args)
        if name != "post_ln":
            return model
        calls = {"n": 0}

        def forward_hook(module, inputs, output):
            calls["n"] += 1
            if calls["n"] == 3 and torch.is_grad_enabled():  # the 3rd forward of this model = training step 3
                if what == "loss":
                    return output * float("nan")
                output.register_hook(lambda g: g * float("inf"))
            return output

        model.head.register_forward_hook(forward_hook)
        return model

    monkeypatch.setattr(depth, "build_model", poisoned)
    cfg = tiny(models="post_ln,lstm", depths="2", init_depths="2", steps=5, warmup_steps="0")
    df = depth.run(cfg)
    bad = df[df["status"] == "diverged"]
    assert len(bad) == 1 and bad["model"].iloc[0] == "post_ln" and bad["step"].iloc[0] == 3
    assert what in bad["note"].iloc[0]
    post = df[(df["model"] == "post_ln") & (df["phase"] == "train")]
    assert post["step"].max() == 3  # stopped there
    lstm = df[(df["model"] == "lstm") & (df["phase"] == "train") & df["layer"].isna()]
    assert (lstm["status"] == "ok").all() and lstm["step"].max() == 5  # the other run went on
    summary = findings.summarize(df).set_index("model")
    assert summary.loc["post_ln", "outcome"] == "diverged" and summary.loc["post_ln", "diverged_step"] == 3
    assert any("diverged" in line for line in depth.takeaways(df, translator("en")))


def test_guard_refuses_the_deep_run_with_its_predicted_size_and_the_rest_go_on(monkeypatch):
    cfg = tiny(models="pre_ln", depths="1,4", steps=2, warmup_steps="0")
    small, big = depth.predicted_bytes("pre_ln", cfg, 1), depth.predicted_bytes("pre_ln", cfg, 4)
    monkeypatch.setattr(guard, "budget_bytes", lambda device, fraction=0.5: int((small + big) / 2))
    df = depth.run(cfg)
    refused = df[df["status"] == "skipped_memory"]
    assert set(refused["n_layers"]) == {4} and set(refused["phase"]) == {"init", "train"}
    assert refused["note"].str.contains(f"would need {guard.format_bytes(big)}").all()
    assert refused["grad_norm"].isna().all()
    assert (df[df["n_layers"] == 1]["status"] == "ok").all()
    assert findings.summarize(df).set_index("n_layers").loc[4, "outcome"] == "skipped_memory"


def test_guard_prediction_is_gigabytes_for_the_widest_deepest_stack():
    cfg = depth.EXPERIMENT.config("quick", {"d_model": "1024", "depths": "64"})
    assert depth.predicted_bytes("pre_ln", cfg, 64) > 12 * 2**30  # 64 × 12.6M weights × 16 bytes alone


# ---- bad input ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "field, value",
    [
        ("depths", "0"),
        ("depths", "2,65"),
        ("lr", "0"),
        ("models", "gru"),
        ("steps", "0"),
        ("seeds", "0"),
        ("clip", "-1"),
        ("d_model", "abc"),
        ("warmup_steps", "60"),
    ],
)
def test_bad_input_names_the_field(field, value):
    with pytest.raises(ValueError, match=f"^{field}:"):
        depth.EXPERIMENT.config("quick", {field: value})


@pytest.mark.slow
def test_cli_exit_2_on_bad_depth():
    code = "import sys; from core.cli import main; sys.exit(main(sys.argv[1:]))"
    r = subprocess.run(
        [sys.executable, "-c", code, "run", "depth", "--set", "depths=0"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stderr.strip().startswith("error: depths:")
    assert len(r.stderr.strip().splitlines()) == 1


# ---- takeaways are computed from the rows ---------------------------------------------------------------------
def fake_runs(final: dict, steps: int = 10, V: int = 16, noise: float = 0.2) -> pd.DataFrame:
    """Whole-model training rows whose loss falls linearly from log V to `final[(model, warmup)]`."""
    rows = []
    for (model, warmup), end in final.items():
        for s in range(1, steps + 1):
            loss = math.log(V) + (end - math.log(V)) * s / steps
            rows.append(
                {
                    "model": model,
                    "n_layers": 8,
                    "layer": pd.NA,
                    "step": s,
                    "phase": "train",
                    "loss": loss,
                    "grad_norm": 1.0,
                    "lr": 0.02,
                    "warmup_steps": warmup,
                    "clip": 0.0,
                    "clipped": False,
                    "seed": 0,
                    "vocab_size": V,
                    "noise": noise,
                    "status": "ok",
                    "device": "cpu",
                }
            )
    return pd.DataFrame(rows)


def test_warmup_takeaway_follows_the_data():
    tr = translator("en")
    floor, ceiling = depth.chain_entropy(16, 0.2), math.log(16)
    shown = depth.takeaways(fake_runs({("post_ln", 0): ceiling, ("pre_ln", 0): floor, ("post_ln", 20): floor}), tr)
    assert any(
        "Post-LN runs stalled or diverged in **1/1 at 8 layers**; Pre-LN runs in **0/1 at 8 layers**" in s
        for s in shown
    )
    assert any("let Post-LN train at 8 layers" in s for s in shown)
    flat = depth.takeaways(fake_runs({("post_ln", 0): floor, ("pre_ln", 0): floor}), tr)
    assert any("did not show" in s for s in flat)
    summary = findings.summarize(fake_runs({("post_ln", 0): ceiling, ("pre_ln", 0): floor}))
    assert list(summary["outcome"]) == ["stalled", "trained"]
    assert summary["gap_closed"].tolist() == pytest.approx([0.0, 0.95])  # mean of the last 20% of steps


def test_takeaways_in_chinese_and_on_init_only_data(small):
    _, df, _ = small
    init_only = df[df["phase"] == "init"]
    lines = depth.takeaways(init_only, translator("zh"))
    assert lines and "«" not in "".join(lines)
    assert lines[-1] == translator("zh")("depth.take.no_training")


# ---- charts ---------------------------------------------------------------------------------------------------
def test_charts_encode_the_measurements(small):
    from core.charts import depth as charts

    cfg, df, _ = small
    tr = translator("en")
    run = df[(df["n_layers"] == 2) & (df["warmup_steps"] == 0)]
    heat = charts.grad_heatmap_chart(run, tr).to_dict()
    spec = heat["spec"]
    assert spec["mark"]["type"] == "rect" and spec["encoding"]["y"]["field"] == "layer"
    assert spec["encoding"]["color"]["scale"]["type"] == "log"
    first = charts.first_layer_chart(df, tr).to_dict()
    assert first["encoding"]["y"]["scale"]["type"] == "log" and first["encoding"]["x"]["field"] == "n_layers"

    def data(spec):
        return spec["datasets"][spec["data"]["name"]]

    init = charts.init_layers_chart(df, tr).to_dict()
    assert init["encoding"]["x"]["field"] == "layer" and init["encoding"]["y"]["scale"]["type"] == "log"
    assert {r["layer"] for r in data(init)} == {1, 2} and all(r["grad_norm"] > 0 for r in data(init))
    loss = charts.loss_chart(df, tr).to_dict()
    assert loss["facet"]["field"] == "n_layers" and loss["spec"]["layer"][0]["encoding"]["y"]["field"] == "loss"
    ceilings = [r["ceiling"] for r in data(loss)]
    assert ceilings and all(c == pytest.approx(math.log(cfg.vocab_size)) for c in ceilings)  # a uniform guess's loss
    grad = charts.grad_norm_chart(df, tr).to_dict()
    assert grad["spec"]["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
    assert any(r["clipped"] for r in data(grad))  # clip 0.5 at lr 2e-2: some steps were clipped, drawn as points
    out = charts.outcomes_chart(df, tr).to_dict()
    assert out["spec"]["encoding"]["x"]["aggregate"] == "count"
    runs = data(out)
    assert len(runs) == 2 * 2 * 2  # variants × depths × warm-ups, one seed
    assert {r["outcome"] for r in runs} <= {"trained", "stalled", "diverged"}


# ---- the page -------------------------------------------------------------------------------------------------
APP = os.path.join(ROOT, "dashboard.py")


@pytest.mark.slow
def test_page_runs_live_with_heat_map_takeaways_and_bad_input():

    at = app_test(default_timeout=90).run()
    at.switch_page("pages/depth.py").run()
    assert not at.exception, at.exception
    at.multiselect(key="w:depth:models").set_value(["lstm", "pre_ln"])
    at.text_input(key="w:depth:depths").set_value("1, 2")
    at.text_input(key="w:depth:warmup_steps").set_value("0")
    at.number_input(key="w:depth:steps").set_value(4)
    at.number_input(key="w:depth:d_model").set_value(16)
    at.selectbox(key="w:depth:device").set_value("cpu")
    at.button(key="FormSubmitter:form:depth-Run").click().run(timeout=120)
    assert not at.exception, at.exception
    assert not at.error
    charts = [c.proto.spec for c in at.get("vega_lite_chart")]
    assert len(charts) >= 6 and any('"rect"' in c for c in charts)  # the layer × step heat map is drawn
    takeaways = [m.value for m in at.markdown if "plain LSTM stack" in m.value]
    assert takeaways  # computed from the live rows
    assert at.query_params["depths"] == "1,2"
    at.text_input(key="w:depth:depths").set_value("2, 99")
    at.button(key="FormSubmitter:form:depth-Run").click().run()
    assert not at.exception
    assert [unescaped(e.value) for e in at.error] == ["Cannot run: depths: 99 is out of range; allowed 1..64"]


def test_page_shows_the_rows_of_a_stopped_run(small):
    from core.server.jobs import Job

    _, _, progress = small
    half = progress[: len(progress) // 2]  # as if Stop was pressed mid-way through training
    at = app_test(default_timeout=60).run()
    at.switch_page("pages/depth.py")
    rows = [r for p in half for r in p.rows]
    job = Job(1, "test", "depth", {}, None, state="stopped", rows=rows, done=half[-1].done, total=half[-1].total,
              kept=half[-1].done)  # fmt: skip
    at.session_state["live:depth"] = {"rows": rows, "job": job}  # a run stopped after it sent these rows
    at.run()
    assert not at.exception, at.exception
    assert any("Stopped after" in w.value for w in at.warning)
    assert at.get("vega_lite_chart")


def test_per_layer_rows_only_for_the_first_layer_seeds():
    df = depth.run(tiny(models="pre_ln", depths="2", steps=2, warmup_steps="0", seeds=2, layer_seeds=1))
    train = df[df["phase"] == "train"]
    assert set(train[train["layer"].isna()]["seed"]) == {0, 1}  # loss and global norm for every seed
    assert set(train[train["layer"].notna()]["seed"]) == {0}


def test_page_draws_shipped_reference_results_at_once(small, tmp_path, monkeypatch):

    import core.store.results
    from ui import common

    _, df, _ = small
    df.to_csv(tmp_path / "depth-cpu-test.csv", index=False)  # read back as a reference file would be
    monkeypatch.setattr(core.store.results, "REFERENCE_DIR", tmp_path)
    common.reference_ui_data.clear()
    try:
        at = app_test(default_timeout=60).run()
        at.switch_page("pages/depth.py").run()
        assert not at.exception, at.exception
        assert len(at.get("vega_lite_chart")) >= 6 and not at.info  # charts at once, no "press Run"
        assert any("plain LSTM stack" in m.value for m in at.markdown)
    finally:
        common.reference_ui_data.clear()
