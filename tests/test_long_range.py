"""Long-range training: the tasks' worked examples, config errors, matched models, divergence, checkpoints."""

import doctest

import pandas as pd
import pytest
import torch
from conftest import app_test, unescaped

from core.cli import main
from core.config import make_config
from core.experiments import long_range as lr
from core.experiments import recall_map
from core.models import registry
from core.offline import checkpoints as ck
from core.terms.i18n import translator
from core.training import tasks

ROOT = __import__("os").path.dirname(__import__("os").path.dirname(__import__("os").path.abspath(__file__)))


def _cfg(**kw):
    base = {
        "device": "cpu",
        "models": "lstm,transformer",  # the chapter's two; a test that wants the hybrid names it
        "seq_len": 16,
        "distances": "2",
        "steps": 4,
        "eval_every": 2,
        "eval_size": 16,
        "d_model": 16,
        "batch_size": 8,
    }
    return make_config(lr.LongRangeConfig, {**base, **kw})


def test_worked_examples_in_the_task_docstrings():
    result = doctest.testmod(tasks)
    assert result.attempted >= 7 and result.failed == 0


def test_recall_batch_puts_one_name_d_before_the_query():
    T, d, K = 20, 7, 5
    x, y = tasks.recall_batch(64, T, d, K, torch.Generator().manual_seed(0))
    names = x < K
    assert (names.sum(1) == 1).all() and names[:, T - 1 - d].all()
    assert (x[:, -1] == K).all() and (y[:, -1] == x[:, T - 1 - d]).all()
    assert (y[:, :-1] == tasks.IGNORE).all()


def test_mqar_batch_targets_are_the_values_stored_with_each_key():
    T, d, K, P = 24, 5, 8, 3
    x, y = tasks.mqar_batch(32, T, d, K, P, torch.Generator().manual_seed(0))
    for row, tgt in zip(x.tolist(), y.tolist()):
        first_query = T - P
        assert row[first_query - d] >= K and row[first_query - d] < 2 * K  # the last value sits d before
        for t in range(first_query, T):
            key_pos = row.index(row[t])  # its first appearance, in the pairs
            assert key_pos < first_query - d and tgt[t] == row[key_pos + 1]
        assert all(v == tasks.IGNORE for v in tgt[:first_query])


@pytest.mark.parametrize(
    "override, field",
    [
        ({"distances": "4,16"}, "distances"),
        ({"n_keys": 1}, "n_keys"),
        ({"steps": 0}, "steps"),
        ({"tasks": "mqar", "distances": "12"}, "distances"),
        ({"tasks": "mqar", "n_pairs": 9}, "n_pairs"),
    ],
)
def test_bad_input_names_the_field(override, field):
    with pytest.raises(ValueError, match=f"^{field}"):
        _cfg(**override)


def test_cli_bad_input_exits_2(capsys):
    assert main(["run", "long_range", "--device", "cpu", "--set", "distances=64"]) == 2
    assert "distances: 64 must be < seq_len (64)" in capsys.readouterr().err


def test_models_have_matched_parameter_counts():
    cfg = _cfg(d_model=32)
    V = tasks.Layout("recall", cfg.seq_len, cfg.n_keys).vocab
    p = {m: sum(t.numel() for t in lr.build_model(m, cfg, V).parameters()) for m in registry.names("long_range")}
    assert abs(p["lstm"] - p["transformer"]) / p["transformer"] < 0.02
    lstm = lr.build_model("lstm", cfg, V)
    width = lstm.embed.embedding_dim
    assert width == lr.width_for("lstm", cfg, V) != cfg.d_model
    assert registry.get("lstm").n_params(V, width, 2) == p["lstm"]  # the closed form counts what torch builds
    for layer in lstm.layers:  # forget bias 1 in every layer (gate order i, f, g, o)
        assert layer.rnn.bias_ih_l0.view(4, -1)[1].eq(1.0).all()


@pytest.mark.slow
def test_transformer_learns_recall_at_a_distance_where_the_lstm_stays_near_chance():
    """... and attention over the LSTM's own states learns it too (#17): the one-step path, not the recurrence."""
    cfg = _cfg(seq_len=32, distances="28", steps=120, eval_every=40, eval_size=128, batch_size=32, d_model=32,
               models="lstm,transformer,lstm_attention")  # fmt: skip
    seen = []
    df = lr.run(cfg, on_progress=seen.append)
    assert [p.done for p in seen] == list(range(1, 10)) and seen[-1].total == 9
    last = lr.final(df).set_index("model")
    assert last.loc["transformer", "accuracy"] >= 0.9
    assert last.loc["lstm", "accuracy"] < 0.4  # chance is 1/8
    assert last.loc["lstm_attention", "accuracy"] >= last.loc["transformer", "accuracy"] - 0.1
    assert set(lr.COLUMNS) <= set(df.columns) and (df["status"] == "ok").all()
    assert any("reached at least 90% while the LSTM did not" in s for s in lr.takeaways(df, translator("en")))


def test_a_nan_loss_stops_that_run_as_diverged_and_the_others_continue(monkeypatch):
    real = lr.build_model

    def poisoned(name, cfg, V, impl="sdpa"):
        model = real(name, cfg, V, impl)
        if name == "lstm":
            with torch.no_grad():
                model.head.bias.fill_(float("nan"))
        return model

    monkeypatch.setattr(lr, "build_model", poisoned)
    seen = []
    df = lr.run(_cfg(distances="2,5", steps=6), on_progress=seen.append)
    bad, good = df[df["model"] == "lstm"], df[df["model"] == "transformer"]
    assert list(bad["status"]) == ["diverged", "diverged"] and bad["accuracy"].isna().all()
    assert list(bad["step"]) == [1, 1] and "nan" in bad["note"].iloc[0]
    assert (good["status"] == "ok").all() and list(good["step"]) == [2, 4, 6, 2, 4, 6]
    assert seen[-1].done == seen[-1].total == 12  # the progress bar still ends full, its total unchanged
    assert any("diverged" in s for s in lr.takeaways(df, translator("en")))


def _final_rows(lstm_acc, tfm_acc, distances=(4, 60)):
    rows = []
    for model, accs in (("lstm", lstm_acc), ("transformer", tfm_acc)):
        for d, a in zip(distances, accs):
            rows.append(
                {
                    "task": "recall",
                    "model": model,
                    "distance": d,
                    "step": 150,
                    "accuracy": a,
                    "chance": 0.125,
                    "params": 1000,
                    "status": "ok",
                }
            )
    return pd.DataFrame(rows)


def test_takeaways_are_computed_from_the_numbers_and_honest_when_the_effect_is_absent():
    tr = translator("en")
    lines = lr.takeaways(_final_rows((1.0, 0.13), (1.0, 1.0)), tr)
    assert any(
        "at distance 60 the Transformer reached at least 90% while the LSTM did not" in s and "13%" in s for s in lines
    )
    held = lr.takeaways(_final_rows((0.95, 0.92), (1.0, 1.0)), tr)
    assert any("the effect does not show" in s for s in held)
    assert not any("while the LSTM did not" in s for s in held)


def test_shipped_checkpoints_load_with_weights_only_and_attention_finds_the_name():
    for name in ck.MODELS:
        blob = torch.load(ck.path_for(name), map_location="cpu", weights_only=True)
        assert set(blob) == {"state_dict", "meta"} and ck.path_for(name).stat().st_size < 400_000
    tfm, meta = ck.load("transformer")
    lstm, _ = ck.load("lstm")
    assert min(meta["accuracy_by_distance"]) >= 0.9
    T, K = meta["seq_len"], meta["n_keys"]
    tokens = recall_map.random_example(T, T - 3, K, seed=7)
    att = recall_map.attention_from_query(tfm, tokens)  # (layers, heads, T)
    assert torch.allclose(att.sum(-1), torch.ones(att.shape[:2]), atol=1e-5)
    assert int(att[-1, 0].argmax()) == 2  # the name, T−3 positions before the query at T−1
    assert recall_map.predict(tfm, tokens)[0] == tokens[2]
    frame = recall_map.map_frame(tokens, tfm, lstm, K)
    assert len(frame) == (att.shape[0] * att.shape[1] + 1) * T
    assert frame[frame["kind"] == "saliency"]["share"].sum() == pytest.approx(1.0, rel=1e-5)
    lines = recall_map.map_takeaways(frame, tokens, tfm, lstm, K, translator("en"))
    assert any("of the query's attention lands on" in s for s in lines)


def test_naive_attention_checkpoint_matches_the_fused_path():
    tfm, meta = ck.load("transformer")
    blob = torch.load(ck.path_for("transformer"), map_location="cpu", weights_only=True)
    fused = lr.build_model("transformer", ck._config(meta), meta["vocab_size"])
    fused.load_state_dict(blob["state_dict"])
    x = torch.tensor([recall_map.random_example(meta["seq_len"], 5, meta["n_keys"], seed=1)])
    with torch.no_grad():
        assert torch.allclose(tfm(x), fused.eval()(x), atol=1e-5)


def test_checkpoints_command_writes_loadable_files(tmp_path, capsys):
    assert main(["checkpoints", "--out-dir", str(tmp_path), "--steps", "2"]) == 0
    for name in ck.MODELS:
        _, meta = ck.load(name, tmp_path)
        assert meta["steps"] == 2 and len(meta["accuracy_by_distance"]) == meta["seq_len"] - 1
    assert main(["checkpoints", "--steps", "0"]) == 2
    assert "--steps" in capsys.readouterr().err


def test_typed_examples_are_parsed_and_bad_words_named():
    assert recall_map.parse_example("Alice the cat", 8) == [0, 9, 11, 8]
    assert recall_map.parse_example("Beth sat she", 8) == [1, 12, 8]
    with pytest.raises(ValueError, match="^example: unknown word.*'dog'"):
        recall_map.parse_example("Alice dog she", 8)
    with pytest.raises(ValueError, match="^example"):
        recall_map.parse_example("", 8)


def _page():

    at = app_test(default_timeout=90).run()
    return at.switch_page("pages/long_range.py").run()


@pytest.mark.slow
def test_page_draws_the_attention_map_at_once_and_reacts_to_a_typed_example():
    at = _page()
    assert not at.exception and not at.error
    specs = [c.proto.spec for c in at.get("vega_lite_chart")]
    assert any("attention" in s and '"rect"' in s for s in specs)  # the map, before any Run
    assert any('"log"' in s and "grad_norm" in s for s in specs)  # the gradient reach, measured at once
    shown = " ".join(m.value for m in at.markdown)
    assert "of the query's attention lands on" in shown and "O(n) versus O(1)" in shown
    at.text_input(key="long_range:map:typed").set_value("Beth the cat sat on the mat").run()
    assert not at.exception and "answers **Beth**" in " ".join(m.value for m in at.markdown)
    at.text_input(key="long_range:map:typed").set_value("Beth dog").run()
    assert next(unescaped(e.value) for e in at.error).startswith(
        "Cannot read this sentence: example: unknown word(s) 'dog'"
    )


@pytest.mark.slow
def test_page_runs_live_and_reports_bad_input():
    at = _page()
    at.text_input(key="w:long_range:distances").set_value("2")
    at.number_input(key="w:long_range:seq_len").set_value(8)
    at.number_input(key="w:long_range:steps").set_value(4)
    at.number_input(key="w:long_range:d_model").set_value(8)
    at.button(key="FormSubmitter:form:long_range-Run").click().run()
    assert not at.exception and not at.error
    assert any("4 steps): d=2:" in m.value for m in at.markdown)  # takeaways computed from this run
    at.text_input(key="w:long_range:distances").set_value("2, 8")
    at.button(key="FormSubmitter:form:long_range-Run").click().run()
    assert not at.exception
    assert [unescaped(e.value) for e in at.error] == ["Cannot run: distances: 8 must be < seq_len (8)"]


@pytest.mark.slow
def test_charts_encode_the_physics():
    from core.charts import long_range as charts
    from core.experiments import gradient_reach as gr

    tr = translator("en")
    reach = gr.run(make_config(gr.GradientReachConfig, {"device": "cpu", "seq_len": 40, "d_model": 8}))
    reach.loc[30, "grad_norm"] = 0.0  # as float32 underflow leaves it
    spec = charts.reach_chart(reach, tr).to_dict()
    assert spec["encoding"]["y"]["scale"]["type"] == "log"
    plotted = next(iter(spec["datasets"].values()))
    assert min(r["grad_norm"] for r in plotted) > 0 and len(plotted) == len(reach) - 1  # zeros left off the log axis
    acc = charts.accuracy_chart(_final_rows((1.0, 0.13), (1.0, 1.0)), tr).to_dict()
    marks = [layer["mark"]["type"] for layer in acc["spec"]["layer"]]
    # a covered line's band, the median accuracy, the seeds' range, chance
    assert marks == ["line", "line", "rule", "rule"] and acc["spec"]["layer"][0]["transform"] == [
        {"filter": "datum.covered"}
    ]
    assert acc["spec"]["layer"][2]["encoding"]["y2"]["field"] == "hi_pct"
    tfm, meta = ck.load("transformer")
    lstm, _ = ck.load("lstm")
    tokens = recall_map.random_example(meta["seq_len"], 5, meta["n_keys"], seed=3)
    heat = charts.attention_map_chart(recall_map.map_frame(tokens, tfm, lstm, meta["n_keys"]), tr).to_dict()
    assert heat["layer"][0]["mark"]["type"] == "rect"
    assert heat["layer"][0]["encoding"]["x"]["sort"][-1].endswith("she")  # positions in reading order


def test_the_training_curves_leave_no_row_of_empty_axes():
    from core.charts import long_range as charts

    assert charts.curve_columns(6, 3) == 3  # two tasks × three distances: a task per row, not 4 + 2
    assert charts.curve_columns(3, 3) == 3 and charts.curve_columns(2, 1) == 2  # all in one row when they fit
    assert charts.curve_columns(5, 5) == 4  # one task, many distances: at most 4 wide
    from core.store.results import load_reference

    ref = load_reference("long_range")[0]
    spec = charts.curves_chart(ref, translator("en")).to_dict()
    order, cols = spec["facet"]["sort"], spec["columns"]
    assert len(order) == ref[ref["status"] == "ok"].groupby(["task", "distance"]).ngroups
    tasks = [panel.split(" · ")[0] for panel in order]
    firsts = [i for i, t in enumerate(tasks) if i == 0 or t != tasks[i - 1]]
    assert all(i % cols == 0 for i in firsts), (order, cols)  # each task starts a row of its own


def test_seeds_are_read_by_their_median_and_their_range_is_said():
    """Three seeds at one distance: the takeaway states the median and the lowest and highest seed."""
    rows = []
    for seed, (tf, lstm) in enumerate(((1.0, 0.10), (0.96, 0.14), (0.2, 0.12))):
        for model, acc in (("transformer", tf), ("lstm", lstm)):
            rows.append({"task": "mqar", "model": model, "distance": 36, "step": 3000, "accuracy": acc,
                         "chance": 0.125, "params": 1000, "seed": seed, "status": "ok"})  # fmt: skip
    lines = lr.takeaways(pd.DataFrame(rows), translator("en"))
    text = " ".join(lines)
    assert "d=36: 96% (3 seeds: 20%–100%)" in text and "d=36: 12% (3 seeds: 10%–14%)" in text
    assert "the LSTM did not" in text  # the median Transformer solved it, the median LSTM did not


def test_a_layout_names_an_unknown_task():
    with pytest.raises(ValueError, match="task: 'copy' is not one of recall, mqar, selective_copy"):
        tasks.Layout("copy", seq_len=32, n_keys=8)
