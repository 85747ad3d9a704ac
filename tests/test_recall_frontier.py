"""Page 5's recall frontier: selective copying's sequences, the cross of runs, the state each model keeps (exact
bytes, checked against the tensors it holds), causal blocks, the takeaways and the verdict read from the rows, and
a small training run in which attention recalls what a fixed element-wise state cannot."""

import math

import pandas as pd
import pytest
import torch

from core.experiments import recall_frontier as experiment
from core.findings import recall_frontier as findings
from core.findings import verdicts
from core.models import registry
from core.models.mixers.base import state_bytes
from core.models.registry import Spec
from core.models.stack import CONV_KERNEL
from core.terms import status
from core.terms.i18n import translator
from core.training import tasks as task_lib

EN = translator("en")


def test_selective_copying_scatters_the_data_among_blanks_and_asks_for_it_in_order():
    K, T, M = 6, 20, 5
    x, y = task_lib.copy_batch(64, T, M, K, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (64, T) and task_lib.copy_vocab(K) == K + 2
    assert (x[:, T - M :] == K + 1).all() and (y[:, : T - M] == task_lib.IGNORE).all()
    for tokens, targets in zip(x.tolist(), y.tolist()):
        data = [t for t in tokens[: T - M] if t < K]
        assert data == targets[T - M :] and tokens[: T - M].count(K) == T - 2 * M
    assert len({tuple(r) for r in x.tolist()}) > 60  # the positions and the data change from sequence to sequence
    with pytest.raises(ValueError, match="n_pairs"):
        task_lib.copy_batch(2, 8, 5, K, torch.Generator())


def test_few_pairs_ask_as_many_questions_each_key_in_turn():
    P, Q, T, K = 2, 8, 32, 16
    x, y = task_lib.mqar_batch(64, T, task_lib.mqar_max_distance(T, P, Q), K, P, torch.Generator().manual_seed(0), Q)
    for tokens, targets in zip(x.tolist(), y.tolist()):
        pairs = dict(
            zip(tokens[0 : 2 * P : 2], tokens[1 : 2 * P : 2])
        )  # the pairs open the sequence at the longest gap
        asked = tokens[T - Q :]
        assert [targets[T - Q + i] for i in range(Q)] == [pairs[k] for k in asked]  # each answer is its key's value
        for r in range(0, Q, P):  # round by round, every key asked once
            assert sorted(asked[r : r + P]) == sorted(pairs)
    assert (y[:, : T - Q] == task_lib.IGNORE).all()
    cfg = experiment.EXPERIMENT.config("train", {"n_pairs": (2, 4)})
    assert cfg.queries == 4  # every run of the cross asks as many questions as the one with the most pairs


def test_every_number_of_pairs_is_asked_across_the_same_gap():
    cfg = experiment.EXPERIMENT.config("train", {"n_pairs": (2, 4), "seq_len": 32, "n_keys": 16})
    assert cfg.distance == 32 - 2 * 4 - 4 + 1  # the room the most pairs leave
    for pairs in cfg.n_pairs:
        x, _ = experiment.layout(cfg, "mqar", pairs).batch(16, torch.Generator().manual_seed(0))
        first_query = 32 - cfg.queries
        last_value = first_query - cfg.distance
        assert (x[:, last_value] >= 16).all() and (x[:, last_value] < 32).all()  # a value token, the gap after it
        assert (x[:, last_value + 1 : first_query] >= 32).all()  # filler only
        assert (x[:, last_value - 2 * pairs] >= 32).all() or last_value - 2 * pairs < 0  # filler before the pairs


def test_the_runs_form_a_cross_of_widths_and_pairs():
    cfg = experiment.EXPERIMENT.config("train", {"tasks": experiment.TASKS, "d_models": (16, 32, 64),
                                                 "n_pairs": (2, 4, 8), "pairs_width": 32})  # fmt: skip
    assert experiment.runs(cfg) == [("mqar", 16, 8), ("mqar", 32, 8), ("mqar", 64, 8), ("mqar", 32, 2),
                                    ("mqar", 32, 4), ("selective_copy", 32, cfg.copy_tokens)]  # fmt: skip
    cfg = experiment.EXPERIMENT.config("train", {"d_models": (16, 32), "n_pairs": (2, 8), "pairs_width": 0})
    assert experiment.runs(cfg) == [("mqar", 16, 8), ("mqar", 32, 8), ("mqar", 16, 2)]


@pytest.mark.parametrize("name", registry.names("recall_frontier"))
def test_the_state_bytes_are_what_the_layers_keep_after_reading_the_sequence(name):
    d, T, L = 32, 40, 2
    cfg = experiment.EXPERIMENT.config("train", {"d_models": (d,), "seq_len": T, "n_layers": L, "n_pairs": (2,)})
    spec = cfg.mixer_spec(d)
    layer = registry.get(name).mixer(spec)
    x = torch.randn(3, T, d)
    with torch.no_grad():
        kept = state_bytes(layer.prefill(x, layer.init_state(3, x))) // 3  # per sequence
    assert experiment.state_bytes(name, d, cfg) == L * (kept + (CONV_KERNEL - 1) * d * 4)


def test_the_state_sizes_are_the_formulas_a_learner_can_check():
    d, T, L = 32, 64, 2
    cfg = experiment.EXPERIMENT.config("train", {"d_models": (d,), "seq_len": T, "n_layers": L})
    conv = (CONV_KERNEL - 1) * d
    assert experiment.state_bytes("transformer", d, cfg) == L * (2 * T * d + conv) * 4  # every token's key and value
    assert experiment.state_bytes("lstm", d, cfg) == L * (2 * d + conv) * 4  # h and c
    assert experiment.state_bytes("min_gru", d, cfg) == L * (d + conv) * 4
    assert experiment.state_bytes("linear_attention", d, cfg) == L * (d * d + d + conv) * 4  # one head: S and z
    longer = experiment.EXPERIMENT.config("train", {"d_models": (d,), "seq_len": 2 * T, "n_layers": L})
    grown = experiment.state_bytes("transformer", d, longer) - experiment.state_bytes("transformer", d, cfg)
    assert grown == L * 2 * T * d * 4  # T more tokens: T more keys and values per layer
    assert experiment.state_bytes("linear_attention", d, longer) == experiment.state_bytes("linear_attention", d, cfg)


@pytest.mark.parametrize("name", registry.names("recall_frontier"))
def test_every_stack_is_causal(name):
    torch.manual_seed(0)
    model = registry.get(name).stack(20, Spec(16, n_heads=1), 2).eval()
    tokens = torch.randint(20, (2, 24))
    later = tokens.clone()
    later[:, 12:] = torch.randint(20, (2, 12))
    with torch.no_grad():
        torch.testing.assert_close(model(tokens)[:, :12], model(later)[:, :12])


def test_a_config_out_of_range_names_its_field():
    exp = experiment.EXPERIMENT
    with pytest.raises(ValueError, match="n_pairs"):
        exp.config("train", {"n_pairs": (2, 40), "n_keys": 32})
    with pytest.raises(ValueError, match="n_pairs"):
        exp.config("train", {"n_pairs": (30,), "seq_len": 64})
    with pytest.raises(ValueError, match="copy_tokens"):
        exp.config("train", {"tasks": ("selective_copy",), "copy_tokens": 40, "seq_len": 64})
    with pytest.raises(ValueError, match="d_models"):
        exp.config("train", {"d_models": (24,), "heads": 16})


def test_a_tiny_run_has_the_issues_columns_and_final_rows():
    cfg = experiment.EXPERIMENT.config("tiny", {"device": "cpu"})
    df = experiment.run(cfg)
    need = {"task", "mixer", "d_model", "n_pairs", "seq_len", "state_bytes", "params", "step", "accuracy", "chance",
            "seed", "device", "status"}  # fmt: skip
    assert need <= set(df.columns) and set(df["task"]) == set(experiment.TASKS)
    assert (df["status"] == status.OK).all() and df.groupby(["task", "mixer"])["step"].max().eq(cfg.steps).all()
    assert (df["chance"] == 1 / cfg.n_keys).all()


@pytest.mark.slow
def test_attention_recalls_what_an_element_wise_state_cannot():
    """The physics of the page in a few seconds: a 2-layer Transformer learns a small MQAR; a minGRU, whose state
    is a vector of independent channels, stays near chance with the same steps and batches."""
    cfg = experiment.EXPERIMENT.config("train", {"mixers": ("transformer", "min_gru"), "d_models": (32,),
                                                 "n_pairs": (4,), "seq_len": 24, "n_keys": 16, "steps": 300,
                                                 "batch_size": 32, "lr": 3e-3, "eval_every": 100, "device": "cpu",
                                                 "stop_when_solved": True})  # fmt: skip
    final = findings.final(experiment.run(cfg)).set_index("mixer")["accuracy"]
    assert final["transformer"] >= 0.9
    assert final["min_gru"] < 1 / 16 + 0.15


def _rows(acc: dict, task="mqar", seeds=(0,), chance=1 / 32, T=64) -> pd.DataFrame:
    """Final rows: acc maps (mixer, d_model, n_pairs) → accuracy."""
    rows = []
    for (m, d, p), a in acc.items():
        for s in seeds:
            floats = registry.get(m).stack_state_floats(T, Spec(d, n_heads=1), 2)
            rows.append({"task": task, "mixer": m, "d_model": d, "n_pairs": p, "seq_len": T, "state_bytes": 4 * floats,
                         "params": 1000, "n_layers": 2, "step": 500, "loss": 1.0, "accuracy": a, "chance": chance, "seed": s,
                         "device": "cpu · test", "status": status.OK})  # fmt: skip
    return pd.DataFrame(rows)


FRONTIER = {("transformer", 32, 8): 1.0, ("transformer", 64, 8): 1.0, ("linear_attention", 32, 8): 0.3,
            ("linear_attention", 64, 8): 0.95, ("min_gru", 32, 8): 0.04, ("min_gru", 64, 8): 0.05,
            ("linear_attention", 32, 2): 0.97, ("transformer", 32, 2): 1.0, ("min_gru", 32, 2): 0.05}  # fmt: skip


def test_the_takeaways_name_the_smallest_recalling_state_and_who_stayed_at_chance():
    lines = findings.takeaways(_rows(FRONTIER), EN)
    text = " ".join(lines)
    la = next(s for s in lines if s.startswith("**linear attention**"))
    assert "width 64" in la and "34.0 KiB" in la  # 2 × (64² + 64 + 3·64) floats × 4 bytes
    assert any(s.startswith("**minGRU** stayed at chance") for s in lines)
    assert "32.8 KiB after 64 tokens" in text  # the Transformer's at width 32: 2 layers × (2 × 64 × 32 + 3 × 32) × 4
    assert "512 B per token" in text and "320.8 KiB after 640" in text
    assert "linear attention 97% → 30%" in text and "minGRU 5% → 4%" in text


@pytest.mark.parametrize("lo, hi, option", [(0.97, 0.3, 1), (0.97, 0.95, 0), (0.04, 0.03, 2), (0.97, 0.8, None)])
def test_the_verdict_reads_linear_attentions_fall_with_more_pairs(lo, hi, option):
    acc = {**FRONTIER, ("linear_attention", 32, 2): lo, ("linear_attention", 32, 8): hi}
    v = verdicts.recall(_rows(acc))
    assert v.option == option and v.values["lo"] == f"{100 * lo:.0f}%" and v.values["hi_p"] == 8


@pytest.mark.parametrize("sel, fixed, split", [(0.9, 0.3, True), (0.5, 0.4, False)])
def test_selective_copying_is_split_by_what_decides_the_state(sel, fixed, split):
    acc = {("selective_ssm", 32, 8): sel, ("min_gru", 32, 8): sel, ("linear_attention", 32, 8): fixed,
           ("dilated_conv", 32, 8): fixed, ("transformer", 32, 8): 1.0}  # fmt: skip
    g = findings.copy_groups(_rows(acc, task="selective_copy"))
    assert g["separated"] is split and math.isclose(g["gap"], sel - fixed)
    assert set(g["selective"]["mixer"]) == {"selective_ssm", "min_gru"}
    line = findings.takeaways(_rows(acc, task="selective_copy"), EN)[-1]
    assert ("did not separate" in line) is not split and f"{100 * (sel - fixed):.0f} points higher" in line


def test_the_charts_draw_reference_and_live_rows():
    from core.charts import recall_frontier as charts

    ref = _rows(FRONTIER).assign(source="reference", run="reference")
    live = _rows({k: v for k, v in FRONTIER.items() if k[1] == 32}).assign(source="live", run="live")
    both = pd.concat([ref, live, _rows({("min_gru", 32, 8): 0.9}, task="selective_copy").assign(source="reference",
                                                                                              run="reference")])  # fmt: skip
    for chart in (charts.frontier_chart(both, EN), charts.pairs_chart(both, EN), charts.copy_chart(both, EN)):
        spec = chart.to_dict()
        assert spec["title"]["text"]
    assert len(findings.frontier(both)) == 6 + 3  # each run at its own largest number of pairs


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_groups_and_tasks_are_named_in_both_languages(lang):
    from core.terms.i18n import catalogue

    words = catalogue(lang)
    assert all(f"recall.group.{g}" in words for g in ("selective", "fixed", "attention"))
    assert all(f"answers.task.{t}" in words for t in experiment.TASKS)
