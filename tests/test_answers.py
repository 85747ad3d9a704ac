"""Page 5: the speed, decoding and reach experiments write the rows and columns the page, the CLI and the home page
read; bad input names its field; a form that overflows is a row; the findings, the verdict and the charts are
computed from the rows; the page runs live in both languages."""

import dataclasses
import math

import pandas as pd
import pytest
import torch
from conftest import app_test

from core.charts import answers as charts
from core.cli import main
from core.experiments import answers_decode, answers_reach, answers_speed
from core.findings import answers as findings
from core.findings import answers_decode as decode_findings
from core.findings import answers_reach as reach_findings
from core.findings import clear_of, verdicts
from core.harness import guard
from core.harness.fit import tail_fit
from core.home import records as home
from core.models import registry
from core.terms import status
from core.terms.i18n import translator

tr = translator("en")
SPEED_COLUMNS = ("mixer", "form", "seq_len", "batch_size", "d_model", "params", "train_ms", "train_iqr_ms",
                 "tokens_per_s", "seq_steps", "saved_bytes", "device", "status")  # fmt: skip
DECODE_COLUMNS = ("mixer", "context_len", "state_bytes", "ms_per_token", "device", "status")


@pytest.fixture(scope="module")
def speed():
    return answers_speed.run(answers_speed.EXPERIMENT.config("tiny", {"device": "cpu"}))


@pytest.fixture(scope="module")
def decode():
    cfg = answers_decode.EXPERIMENT.config("tiny", {"device": "cpu", "context_lens": "16,32,128,512"})
    return answers_decode.run(cfg)


def test_speed_rows_cover_every_mixer_and_form_with_the_promised_columns(speed):
    assert set(SPEED_COLUMNS) <= set(speed.columns)
    assert set(speed["mixer"]) == set(registry.names("answers"))
    assert {(m, f) for m, f in zip(speed["mixer"], speed["form"])} == {(m, f) for m in registry.names("answers")
                                                                       for f in registry.get(m).forms}  # fmt: skip
    assert (speed["status"] == status.OK).all()
    assert set(speed["form"]) == set(registry.FORMS)
    scans = speed[speed["form"] == registry.SCAN]
    assert scans["speedup_vs_loop"].notna().all() and (scans["speedup_q25"] <= scans["speedup_q75"]).all()
    assert (scans["max_error"] < 1e-4).all()  # float32 scan vs float64 loop, at 16 tokens
    loops = speed[speed["form"] == registry.LOOP]
    assert (loops["seq_steps"] == loops["seq_len"]).all() and (scans["seq_steps"] < scans["seq_len"]).all()
    assert (speed["saved_bytes"] > 0).all()
    # the recurrence alone (Amdahl's split), in every form of a mixer with a step loop; nothing to separate elsewhere
    recurrent = speed["mixer"].isin([m for m in registry.names("answers") if registry.LOOP in registry.get(m).forms])
    assert (speed[recurrent]["rec_ms"] > 0).all() and (speed[recurrent]["rec_iqr_ms"] >= 0).all()
    assert speed[~recurrent]["rec_ms"].isna().all()
    parallel = speed[recurrent & (speed["form"] != registry.LOOP)]
    assert (parallel["rec_speedup_vs_loop"] > 0).all() and (
        parallel["rec_speedup_q25"] <= parallel["rec_speedup_q75"]
    ).all()


def test_a_form_that_overflows_is_a_row_with_a_status_and_the_others_go_on(monkeypatch):
    rec = registry.get("min_gru")

    def poisoned(spec, form):
        layer = rec.make(spec, form)
        with torch.no_grad():
            layer.to_gates.bias.fill_(float("inf") if form == registry.SCAN else 0.0)
        return layer

    monkeypatch.setitem(registry.MODELS, "min_gru", dataclasses.replace(rec, make=poisoned))
    cfg = answers_speed.EXPERIMENT.config("tiny", {"device": "cpu", "mixers": "min_gru,lstm", "seq_lens": "8"})
    df = answers_speed.run(cfg).set_index("form")
    assert df.loc[registry.SCAN, "status"] == status.DIVERGED and math.isnan(df.loc[registry.SCAN, "train_ms"])
    assert (df.loc[[registry.LOOP, registry.FUSED], "status"] == status.OK).all()


def test_the_time_and_memory_guards_refuse_points_as_rows(monkeypatch):
    cfg = answers_speed.EXPERIMENT.config("tiny", {"device": "cpu", "mixers": "min_gru", "seq_lens": "8,16,64"})
    assert answers_speed._too_slow([(8, 1.0), (16, 2.0)], 64, 0.001).startswith("would take")
    between = (answers_speed.predicted_bytes("min_gru", "scan", cfg, 16) + answers_speed.predicted_bytes(
        "min_gru", "scan", cfg, 64)) / 2  # fmt: skip
    monkeypatch.setattr(guard, "budget_bytes", lambda device, fraction=0.5: int(between))
    df = answers_speed.run(cfg)
    assert (df[df["seq_len"] == 64]["status"] == status.SKIPPED_MEMORY).all()
    assert (df[df["seq_len"] < 64]["status"] == status.OK).all()


@pytest.mark.parametrize(
    "name, field, value",
    [("answers_speed", "mixers", "no_such_mixer"), ("answers_speed", "forms", "diagonal"),
     ("answers_speed", "window", "0"), ("answers_speed", "chunk", "99999"), ("answers_speed", "levels", "17"),
     ("answers_decode", "context_lens", "0"), ("answers_decode", "mixers", "lstm,nope")],
)  # fmt: skip
def test_bad_input_names_its_field_and_the_cli_exits_2(name, field, value, capsys):
    exp = {"answers_speed": answers_speed, "answers_decode": answers_decode}[name].EXPERIMENT
    with pytest.raises(ValueError, match=f"^{field}"):
        exp.config("tiny", {field: value, "device": "cpu"})
    assert main(["run", name, "--preset", "tiny", "--device", "cpu", "--set", f"{field}={value}"]) == 2
    err = capsys.readouterr().err
    assert field in err and "Traceback" not in err


def test_a_mixer_without_any_chosen_form_and_a_context_that_cannot_fit_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="^forms: sliding_window"):
        answers_speed.EXPERIMENT.config("tiny", {"mixers": "sliding_window", "forms": "loop"})
    with pytest.raises(ValueError, match="^levels: a receptive field of 8\\^6"):
        answers_speed.EXPERIMENT.config("tiny", {"kernel": "8", "levels": "6"})
    monkeypatch.setattr(guard, "budget_bytes", lambda device, fraction=0.5: 10**5)
    with pytest.raises(ValueError, match="^context_lens: reading 131,072 tokens"):
        answers_decode.EXPERIMENT.config("tiny", {"context_lens": "131072", "device": "cpu"})


def test_decoding_keeps_a_fixed_state_while_the_kv_cache_grows_linearly(decode):
    assert set(DECODE_COLUMNS) <= set(decode.columns) and set(decode["mixer"]) == set(registry.names("answers"))
    assert (decode["state_bytes"] == decode["predicted_bytes"]).all()
    for m, g in decode.groupby("mixer"):
        slope, _ = tail_fit(g["context_len"], g["state_bytes"], points=len(g))
        if registry.get(m).table1 == "self_attention":
            assert slope == pytest.approx(1.0, abs=1e-9), m
        elif registry.get(m).table1 != "restricted":
            assert abs(slope) < 1e-9, m
    window = decode[decode["mixer"] == "sliding_window"]
    assert window[window["context_len"] >= 4]["state_bytes"].nunique() == 1  # flat at r once r tokens are read
    lines = decode_findings.decode_takeaways(decode, tr)
    assert any("byte for byte the formula" in s for s in lines) and any("did not grow at all" in s for s in lines)


def test_a_context_between_pages_is_said_to_hold_whole_pages_not_the_token_formula():
    cfg = answers_decode.EXPERIMENT.config(
        "tiny", {"device": "cpu", "context_lens": "20,100", "mixers": "transformer,min_gru"}
    )
    df = answers_decode.run(cfg)
    att = df[df["mixer"] == "transformer"].set_index("context_len")["state_bytes"]
    assert att[100] == 2 * 112 * cfg.d_model * 4  # 7 pages of 16 tokens, not 100 tokens
    lines = " ".join(decode_findings.decode_takeaways(df, tr))
    assert "rounded up to whole pages of 16 tokens" in lines and "byte for byte" not in lines


def test_reach_ends_at_the_receptive_field_and_after_layers_times_the_window():
    cfg = answers_reach.EXPERIMENT.config("tiny", {"device": "cpu", "seq_len": "140",
                                                   "models": "sliding_window,dilated_conv,min_gru,linear_attention"})  # fmt: skip
    prof = reach_findings.reach_profiles(answers_reach.EXPERIMENT.run(cfg)).set_index("model")
    spec = registry.Spec(8)
    assert prof.loc["dilated_conv", "end"] == spec.kernel**spec.levels
    assert prof.loc["sliding_window", "end"] == registry.get("sliding_window").reach_depth * (spec.window - 1) + 1
    assert math.isnan(prof.loc["min_gru", "end"]) and prof.loc["min_gru", "reach"] < 60
    assert math.isnan(prof.loc["linear_attention", "reach"])  # flat: no decay
    said = " ".join(reach_findings.reach_takeaways(answers_reach.EXPERIMENT.run(cfg), tr))
    assert "reached exactly 63 tokens back" in said and "reached exactly 124 tokens back" in said


def _pair(loop_ms, scan_ms, q25, q75, n=4096, device_type="cpu"):
    common = {"mixer": "min_gru", "seq_len": n, "status": "ok", "device": "cpu · test", "device_type": device_type,
              "saved_bytes": 1e6}  # fmt: skip
    return pd.DataFrame([
        {**common, "form": "loop", "train_ms": loop_ms, "seq_steps": n},
        {**common, "form": "scan", "train_ms": scan_ms, "seq_steps": 24, "speedup_vs_loop": loop_ms / scan_ms,
         "speedup_q25": q25, "speedup_q75": q75},
    ])  # fmt: skip


def test_the_verdict_reads_the_paired_speed_up_and_names_the_gpu_off_one():
    slow = verdicts.answers(_pair(70.0, 100.0, 0.6, 0.8))
    assert slow.option == 0 and slow.key == "answers.verdict.slower" and slow.values["x"] == "1.4"
    assert slow.other_device == "answers.verdict.other_gpu"
    assert verdicts.answers(_pair(500.0, 100.0, 4.0, 6.0)).option == 1
    assert verdicts.answers(_pair(5000.0, 100.0, 40.0, 60.0, device_type="cuda")).option == 2
    assert verdicts.answers(_pair(200.0, 100.0, 1.5, 2.5)).option is None  # the spread straddles 2×
    assert "**Measured here**" in verdicts.sentence(slow, tr)
    assert "scan took **1.4× the time** of its own" in findings.headline_text(
        findings.headline(_pair(70.0, 100.0, 0.6, 0.8)), tr
    )


def test_the_takeaways_name_the_ratio_at_the_length_the_verdict_reads():
    rows = pd.concat([_pair(200.0, 100.0, 1.9, 2.1, n) for n in (128, 1024)] + [_pair(300.0, 100.0, 2.9, 3.1, 4096)]
                     + [_pair(400.0, 100.0, 3.9, 4.1, 8192)])  # fmt: skip
    said = findings.speed_takeaways(rows, tr)[0]
    assert verdicts.answers(rows).values["n"] == 4096 and verdicts.answers(rows).values["x"] == "3"
    assert said.startswith("At n = 8,192,") and "At n = 4,096, the length the question asks about, it was 3." in said
    short = pd.concat([_pair(200.0, 100.0, 1.9, 2.1, n) for n in (128, 4096)])
    assert "the question asks about" not in findings.speed_takeaways(short, tr)[0]  # its headline is at 4,096


def test_charts_draw_the_rows_feng_et_al_and_the_kv_formula(speed, decode):
    spec = charts.speedup_chart(speed, tr).to_dict()
    feng = [d for d in spec["datasets"].values() if d and "source" in d[0]]
    assert sorted(r["speedup"] for r in feng[0]) == [175.0, 235.0] and {r["seq_len"] for r in feng[0]} == {512}
    mem = charts.decode_memory_chart(decode, tr).to_dict()
    formula = next(d for d in mem["datasets"].values() if d and "what" in d[0])
    assert formula[-1]["state_bytes"] == 2 * 512 * 16 * 4  # one layer, d_model 16, 512 tokens, float32
    for chart in (charts.time_chart(speed, tr), charts.steps_chart(speed, tr), charts.memory_chart(speed, tr),
                  charts.decode_time_chart(decode, tr)):  # fmt: skip
        assert chart.to_dict()["title"]["text"]


def test_home_table1_rows_are_filled_from_page_5s_rows(speed, decode):
    reach = answers_reach.EXPERIMENT.run(answers_reach.EXPERIMENT.config("tiny", {"device": "cpu", "seq_len": "80"}))
    t = home.table1({"answers_speed": speed, "answers_reach": reach}, tr).set_index("Layer type")
    for row in ("Convolutional", "Self-attention (restricted)", "Linear recurrence (scan) — page 5"):
        cells = t.loc[row, ["Measured: cost vs n", "Measured: dependent steps", "Measured: gradient across distance"]]
        assert all(str(c).startswith("[") and str(c).endswith("](answers)") for c in cells), cells
    assert "ends exactly 63 tokens back" in t.loc["Convolutional", "Measured: gradient across distance"]
    assert home.findings({"answers_speed": speed}, tr)["answers"].startswith(
        "At n = 16, a training step of the minGRU scan"
    )


@pytest.mark.slow
def test_the_page_runs_live_in_both_languages():
    for lang in ("en", "zh"):
        at = app_test(default_timeout=120)
        at.query_params["lang"] = lang
        at.run()
        at.switch_page("pages/answers.py").run()
        assert not at.exception
        at.multiselect(key="w:answers:mixers").set_value(["min_gru", "lstm", "transformer"])
        at.text_input(key="w:answers:seq_lens").set_value("16, 32")
        at.number_input(key="w:answers:d_model").set_value(16)
        run = translator(lang)("ui.run")  # the submit button's key carries its label
        at.button(key=f"FormSubmitter:form:answers-{run}").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        at.multiselect(key="w:answers:decode:mixers").set_value(["min_gru", "lstm", "transformer"])
        at.text_input(key="w:answers:decode:context_lens").set_value("8, 64")
        at.number_input(key="w:answers:decode:d_model").set_value(16)
        at.button(key=f"FormSubmitter:form:answers:decode-{run}").click().run()
        assert not at.exception and not at.error
        shown = " ".join(m.value for m in at.markdown)
        assert ("your run" if lang == "en" else "你的运行") in " ".join(c.value for c in at.caption)
        assert "«" not in shown


def test_gradient_reach_itself_accepts_the_mixers():
    from core.experiments import gradient_reach

    cfg = gradient_reach.EXPERIMENT.config("tiny", {"device": "cpu", "models": "min_gru,dilated_conv,lstm"})
    df = gradient_reach.run(cfg)
    assert set(df["model"]) == {"min_gru", "dilated_conv", "lstm"} and (df["status"] == status.OK).all()
    assert gradient_reach.path_length("dilated_conv") == "O(log_k n)" and gradient_reach.path_length("lstm") == "O(n)"
    with pytest.raises(ValueError, match="^models"):
        gradient_reach.EXPERIMENT.config("tiny", {"models": "transformer"})  # a page-5 baseline, not a reach layer


def test_a_verdict_never_prints_a_number_that_rounds_onto_a_boundary_it_rejects():
    below = verdicts.answers(_pair(196.0, 100.0, 1.9, 1.98))  # 1.96×: "less than 2×", said as 1.96, not 2
    assert below.option == 0 and below.values["x"] == "1.96" and below.values["hi"] == "1.98"
    above = verdicts.answers(_pair(204.0, 100.0, 2.02, 2.1))
    assert above.option == 1 and above.values["x"] == "2.04" and above.values["lo"] == "2.02"
    assert verdicts.answers(_pair(290.0, 100.0, 2.8, 3.0)).values["x"] == "2.9"  # clear of the bounds: two figures
    assert clear_of(9.97, (2.0, 10.0)) == "9.97" and clear_of(10.0, (2.0, 10.0)) == "10"
