"""The serial experiment: the columns, BPTT memory linear in n, the dependent-step count, the CLI."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from core.experiments import serial
from core.models import registry
from core.terms.i18n import translator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIRED = (
    "model",
    "n_layers",
    "d_model",
    "batch_size",
    "seq_len",
    "params",
    "train_ms",
    "train_iqr_ms",
    "tokens_per_s",
    "saved_bytes",
    "seq_steps",
    "flops",
    "achieved_flops_per_s",
    "device",
    "status",
)


@pytest.fixture(scope="module")
def tiny():
    cfg = serial.EXPERIMENT.config(
        "quick",
        {
            "seq_lens": "64,128,256",
            "d_model": "16",
            "n_layers": "2",
            "batch_size": "2",
            "device": "cpu",
            "repeats": "1",
            "warmup": "0",
        },
    )
    progress = []
    df = serial.run(cfg, on_progress=progress.append)
    return cfg, df, progress


def test_columns_status_and_progress(tiny):
    cfg, df, progress = tiny
    assert set(REQUIRED) <= set(df.columns)
    assert (df["status"] == "ok").all()
    assert len(df) == len(cfg.models) * len(cfg.seq_lens)
    assert [p.done for p in progress if p.rows] == list(range(1, len(df) + 1))  # one row per report
    ticks = [p for p in progress if not p.rows]  # between the interleaved rounds: progress text, a chance to Stop
    assert ticks and all("repeat" in p.message for p in ticks)
    assert [p.done for p in progress] == sorted(p.done for p in progress)
    assert sum(len(p.rows) for p in progress) == len(df)


def test_sequential_steps_are_n_times_layers_for_recurrent_models(tiny):
    _, df, _ = tiny
    for _, r in df.iterrows():
        expected = r["n_layers"] if r["model"] == "transformer" else r["seq_len"] * r["n_layers"]
        assert r["seq_steps"] == expected


@pytest.mark.parametrize("model", registry.names("serial"))
def test_saved_bytes_grow_exactly_linearly(tiny, model):
    _, df, _ = tiny
    s = df[df["model"] == model].set_index("seq_len")["saved_bytes"]
    assert s[128] - s[64] == (s[256] - s[128]) / 2 > 0  # equal increments per token: linear in n


def test_params_equal_across_lengths_and_flops_positive(tiny):
    _, df, _ = tiny
    assert (df.groupby("model")["params"].nunique() == 1).all()
    assert (df["flops"] > 0).all() and (df["achieved_flops_per_s"] > 0).all()


def test_takeaways_are_computed_from_the_rows(tiny):
    _, df, _ = tiny
    lines = serial.takeaways(df, translator("en"))
    fastest = df[df["seq_len"] == 256].set_index("model")["train_ms"].idxmin()
    assert f"**{translator('en')(f'model.{fastest}')}**" in lines[0]
    # change the data, and the sentence changes with it
    flipped = df.drop(columns=["ratio_to_recurrent", "ratio_q25", "ratio_q75", "ratio_base"])  # no paired repeats
    flipped.loc[flipped["model"] == "transformer", "train_ms"] = 1e-3
    assert "faster" in serial.takeaways(flipped, translator("en"))[1]
    flipped.loc[flipped["model"] == "transformer", "train_ms"] = 1e6
    assert "took **" in serial.takeaways(flipped, translator("en"))[1]
    # paired repeats whose ratio straddles 1: neither is called faster
    even = df.copy()
    even.loc[even["model"] == "transformer", ["ratio_q25", "ratio_q75"]] = (0.9, 1.1)
    line = serial.takeaways(even, translator("en"))[1]
    assert "about the same time" in line and "faster" not in line and "0.9–1.1×" in line
    assert serial.takeaways(df.assign(status="oom"), translator("en")) == [translator("en")("serial.take.none")]


def test_guard_skips_an_impossible_point_and_the_sweep_continues():
    cfg = serial.EXPERIMENT.config(
        "quick",
        {
            "seq_lens": "8,65535",
            "d_model": "16",
            "batch_size": "1024",
            "models": "lstm",
            "device": "cpu",
            "repeats": "1",
            "warmup": "0",
        },
    )
    df = serial.run(cfg)
    assert list(df["status"]) == ["ok", "skipped_memory"]
    assert "would need" in df["note"].iloc[1] and pd.isna(df["train_ms"].iloc[1])


def cli(*args, timeout=120):
    code = (
        "import sys; from core.cli import main; rc = main(sys.argv[1:]); "
        "assert 'streamlit' not in sys.modules and 'altair' not in sys.modules, 'CLI imported UI packages'; "
        "sys.exit(rc)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], check=False, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
def test_cli_run_writes_the_csv(tmp_path):
    out = tmp_path / "x.csv"
    r = cli(
        "run",
        "serial",
        "--device",
        "cpu",
        "--set",
        "seq_lens=8,16",
        "--set",
        "models=lstm,transformer",
        "--set",
        "d_model=16",
        "--set",
        "repeats=1",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(out)
    assert set(REQUIRED) <= set(df.columns) and len(df) == 4
    assert "transformer" in r.stdout and "•" in r.stdout  # the table and the computed takeaways


BAD_INPUT = [
    (("run", "serial", "--set", "seq_lens=8,999999"), "seq_lens"),
    (("run", "serial", "--set", "d_model=0"), "d_model"),
    (("run", "serial", "--set", "colour=red"), "colour"),
    (("run", "serial", "--set", "models"), "--set"),
    (("run", "serial", "--preset", "huge"), "preset"),
    (("run", "transformers"), "experiment"),
]


@pytest.fixture(scope="module")
def bad_input_answers() -> dict:
    """Each bad command line's (exit status, stderr), all through core.cli.main in one process (one torch import,
    not six): main's return value is what `python -m core` exits with (test_cli_absent_cuda_exits_2, a process)."""
    code = (
        "import contextlib, io, json, sys; from core.cli import main; out = []\n"
        "for args in json.loads(sys.argv[1]):\n"
        "    err = io.StringIO()\n"
        "    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):\n"
        "        try:\n"
        "            rc = main(args)\n"
        "        except SystemExit as e:\n"
        "            rc = e.code\n"
        "    out.append([rc, err.getvalue()])\n"
        "assert 'streamlit' not in sys.modules and 'altair' not in sys.modules, 'CLI imported UI packages'\n"
        "print(json.dumps(out))"
    )
    cases = [list(args) for args, _ in BAD_INPUT]
    r = subprocess.run(
        [sys.executable, "-c", code, json.dumps(cases)],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return {tuple(args): tuple(answer) for args, answer in zip(cases, json.loads(r.stdout.splitlines()[-1]))}


@pytest.mark.slow
@pytest.mark.parametrize("args, field", BAD_INPUT)
def test_cli_bad_input_exits_2_with_one_line_naming_the_field(args, field, bad_input_answers):
    rc, stderr = bad_input_answers[args]
    assert rc == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in stderr


@pytest.mark.slow
def test_cli_absent_cuda_exits_2():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    r = cli("run", "serial", "--device", "cuda")
    assert r.returncode == 2 and "device: 'cuda' is not available" in r.stderr


@pytest.mark.slow
def test_cli_list_shows_fields_and_ranges():
    r = cli("list")
    assert r.returncode == 0
    assert "serial" in r.stdout and "seq_lens" in r.stdout and "2..65535" in r.stdout


def _pair_rows(peak, latency, tf_ms, lstm_ms, T=1024):
    """The chapter's pair at one length on a device with this peak and step latency (the serial page's columns)."""
    common = {"seq_len": T, "n_layers": 1, "status": "ok", "noisy": False, "peak_flops_per_s": peak,
              "step_latency_s": latency, "saved_bytes": 1.0, "utilization": 0.5, "device": "x"}  # fmt: skip
    return pd.DataFrame([
        {**common, "model": "lstm", "train_ms": lstm_ms, "seq_steps": T, "flops": 6e9},
        {**common, "model": "transformer", "train_ms": tf_ms, "seq_steps": 1, "flops": 2e10},
    ])  # fmt: skip


def test_the_explanation_follows_the_devices_roofline_not_the_ratio():
    """On a CPU-like device the LSTM is bound by arithmetic; on a GPU-like one by its chain of steps. The sentence
    is chosen by the roofline model of the device measured, and says so when the model and the measurement differ."""
    tr = translator("en")
    cpu = " ".join(serial.takeaways(_pair_rows(1.6e11, 3e-5, tf_ms=170, lstm_ms=72), tr))
    assert "bounded by its arithmetic" in cpu and "The model predicts" not in cpu
    gpu = " ".join(serial.takeaways(_pair_rows(6e13, 1e-5, tf_ms=1.0, lstm_ms=12), tr))
    assert "bounded by its chain of 1,024 dependent steps" in gpu and "The model predicts" not in gpu
    odd = " ".join(serial.takeaways(_pair_rows(6e13, 1e-5, tf_ms=30, lstm_ms=12), tr))  # measured against the model
    assert "bounded by its chain" in odd and "The model predicts the Transformer (SDPA) would be the faster" in odd


def test_the_why_states_the_numbers_of_the_roofline_charts_legend():
    """One device, one pair of numbers: the sentence that explains the result by the roofline model uses the peak and
    step latency the roofline chart draws and states in its legend (the medians of the run's ceilings, which differ
    from length to length), to the same digits."""
    import re

    from core.findings import serial as findings
    from core.store.results import REFERENCE_DIR

    tr = translator("en")
    df = pd.read_csv(next(REFERENCE_DIR.glob("serial-*.csv")))
    df["peak_flops_per_s"] *= 1 + 0.02 * df["seq_len"].rank(method="dense")  # a ceiling that drifts over the run
    legend = findings.hardware_for(df, tr)[0].name
    gflops, us = re.fullmatch(r"this device: (\S+) GFLOP/s, (\S+) µs/step \(measured\)", legend).groups()
    why = findings.explanation(findings.comparison(df), findings.measured_hardware(df, tr), tr)[0]
    assert f"({gflops} GFLOP/s measured beside the run, {us} µs per dependent step)" in why, (legend, why)
    assert why in findings.takeaways(df, tr)
