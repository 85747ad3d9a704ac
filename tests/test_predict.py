"""Predict, observe, confront: each question's verdict comes from the rows shown, and the results wait for an answer."""

import pandas as pd
import pytest
from conftest import app_test

from core.findings import verdicts
from core.home import scoreboard
from core.store.results import load_reference
from core.terms.i18n import translator
from ui.common import PAGES

tr = translator("en")


def _ref(name: str) -> pd.DataFrame:
    ref, problems = load_reference(name)
    assert not problems and len(ref)
    return ref[ref["device_type"] == "cpu"]


def _pair(tf_ms: float, lstm_ms: float, q25: float, q75: float, T: int = 1024, device_type: str = "cpu"):
    """The chapter's pair at one length, timed side by side (paired ratio quartiles on the Transformer's row)."""
    common = {"seq_len": T, "n_layers": 1, "status": "ok", "peak_flops_per_s": 6e13, "step_latency_s": 1e-5,
              "device": "gpu-like", "device_type": device_type}  # fmt: skip
    return pd.DataFrame([
        {**common, "model": "lstm", "train_ms": lstm_ms, "seq_steps": T, "flops": 6e9},
        {**common, "model": "transformer", "train_ms": tf_ms, "seq_steps": 1, "flops": 2e10,
         "ratio_base": "lstm", "ratio_q25": q25, "ratio_q75": q75},
    ])  # fmt: skip


def test_serial_on_the_shipped_cpu_reference_names_the_fused_lstm():
    v = verdicts.serial(_ref("serial"))
    assert v.option == 1 and v.values["T"] == 1024  # the question's ~1,000 tokens, not the longest length
    assert float(v.values["lo"]) > 1  # the paired spread excludes "the same"
    assert v.other_device == "verdict.serial.other_gpu"  # the roofline's GPU predicts the other answer
    assert "the LSTM was the faster one" in verdicts.sentence(v, tr)


def test_serial_names_the_transformer_where_it_is_faster_and_says_same_across_one():
    assert verdicts.serial(_pair(tf_ms=1.0, lstm_ms=12.0, q25=0.07, q75=0.09, device_type="cuda")).option == 0
    same = verdicts.serial(_pair(tf_ms=10.0, lstm_ms=10.2, q25=0.9, q75=1.1))
    assert same.option == 2


def test_long_range_depth_and_attention_on_the_shipped_reference():
    lr = verdicts.long_range(_ref("long_range"))
    assert lr.option == 1 and lr.values["att"] == "100%"
    dp = verdicts.depth(_ref("depth"))
    assert dp.option == 2 and dp.values["L"] == 8
    ac = verdicts.attention_cost(_ref("attention_cost"))
    assert ac.option == 1 and ac.values["ratio"] == "4.00"  # exact saved bytes: the n × n table


def test_the_long_range_verdict_and_the_home_card_state_the_first_task_the_run_trained():
    """A run that trained recall first and multi-query recall second (the alphabet puts mqar first): the page's verdict
    and the home card both read recall, name it, and give the same accuracies."""
    rows = [{"task": task, "model": model, "distance": 36, "seed": seed, "step": 3000, "status": "ok", "chance": 0.125,
             "accuracy": acc + 0.01 * seed}
            for task, accs in (("recall", {"lstm": 0.10, "transformer": 0.97}), ("mqar", {"lstm": 0.40, "transformer": 0.50}))
            for model, acc in accs.items() for seed in range(3)]  # fmt: skip
    df = pd.DataFrame(rows)
    v = verdicts.long_range(df)
    assert v.option == 1 and (v.values["rec"], v.values["att"]) == ("11%", "98%")  # the median seed's, on recall
    said = verdicts.sentence(v, tr)
    assert "on the recall task" in said and "multi-query" not in said
    card = scoreboard.long_range_finding({"long_range": df}, tr)
    assert "recall task" in card and "LSTM 11%" in card and "Transformer reached 98%" in card
    assert "在回忆任务中" in verdicts.sentence(v, translator("zh"))


def test_scaling_on_the_shipped_reference_is_computed_from_the_paired_speedups():
    v = verdicts.scaling(_ref("scaling"))
    assert v is not None and v.option in (0, 1, 2) and v.values["p"] >= 2
    ref = _ref("scaling")
    assert verdicts.scaling(ref[ref["threads"] == 1]) is None  # one thread: nothing to compare


def test_attention_between_two_options_is_no_clear_answer():
    rows = [{"impl": "naive", "requested_backend": "-", "backend": "-", "point": "sweep", "status": "ok",
             "seq_len": n, "saved_bytes": n**1.5, "peak_bytes": n**1.5, "time_ms": 1.0} for n in (256, 512, 1024, 2048)]  # fmt: skip
    v = verdicts.attention_cost(pd.DataFrame(rows))
    assert v.values["ratio"] == "2.83" and v.option is None


@pytest.mark.parametrize("name", list(verdicts.QUESTIONS))
def test_a_run_stopped_early_gives_a_verdict_or_none_never_a_crash(name):
    q = verdicts.QUESTIONS[name]
    ref = _ref(q.experiment)
    for cut in (0, 1, 3, len(ref) // 3):
        v = q.verdict(ref.iloc[:cut])
        assert v is None or v.option in (None, 0, 1, 2)


def test_depth_on_a_stack_that_kept_its_gradient_says_about_the_same():
    plain = verdicts.depth_findings.roles().plain
    rows = [{"phase": "init", "status": "ok", "model": plain, "n_layers": 8, "layer": layer, "seed": 0,
             "grad_norm": 1.0 + 0.1 * layer} for layer in range(1, 9)]  # fmt: skip
    assert verdicts.depth(pd.DataFrame(rows)).option == 0


# ---- the page: hidden until answered, then the verdict --------------------------------------------------------
def _charts(at) -> int:
    return len(at.get("vega_lite_chart"))


@pytest.mark.slow
@pytest.mark.parametrize("key, path", PAGES)
def test_results_wait_for_an_answer_then_the_verdict_quotes_a_number(key, path):
    at = app_test(default_timeout=120, revealed=False)
    at.query_params["lang"] = "en"
    at.run()
    at.switch_page(path).run()
    assert not at.exception
    assert _charts(at) == 0 and not [m for m in at.markdown if "What these numbers say" in m.value]
    at.radio(key=f"predict:{key}").set_value(0).run()
    assert not at.exception and _charts(at) >= 1
    verdict = [m.value for m in at.markdown if "Reference, measured on" in m.value]
    assert verdict and any(ch.isdigit() for ch in verdict[0]) and "You said" in verdict[0]
    assert at.query_params[f"predict.{key}"] == "1"  # the answer is in the link


@pytest.mark.slow
def test_just_show_me_reveals_and_a_shared_link_opens_revealed():
    at = app_test(default_timeout=120, revealed=False).run()
    at.switch_page("pages/depth.py").run()
    assert _charts(at) == 0
    at.button(key="predict_show_button:depth").click().run()
    assert _charts(at) >= 1 and at.query_params["predict.depth"] == "show"
    shared = app_test(default_timeout=120, revealed=False)
    shared.query_params["predict.depth"] = "3"
    shared.run()
    shared.switch_page("pages/depth.py").run()
    assert _charts(shared) >= 1 and shared.radio(key="predict:depth").value == 2


@pytest.mark.slow
def test_the_home_page_lists_this_sessions_predictions():
    at = app_test(default_timeout=120, revealed=False).run()
    at.switch_page("pages/depth.py").run()
    at.radio(key="predict:depth").set_value(0).run()  # "about the same": the measurement disagrees
    at.switch_page("pages/home.py").run()
    assert not at.exception
    tables = [t for t in at.table if "you predicted" in " ".join(map(str, t.value.columns))]
    assert tables, "no tally on the home page"
    row = tables[0].value.iloc[0]
    assert row["agree?"] == "no" and "About the same" in row["you predicted"]
