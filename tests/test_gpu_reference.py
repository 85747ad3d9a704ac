"""scripts/gpu_reference.sh and `python -m core reference` on the CPU with the tiny presets: the rare GPU session's
script writes every experiment's CSV under its folder, and one experiment failing (an injected RuntimeError, a
hang past its time limit, a kill) costs that experiment's remaining points only: the others' CSVs are complete,
the failure is a line in the log and a status row in its CSV."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from core import status
from core.experiments import EXPERIMENTS, gradient_reach, long_range
from core.i18n import translator

ROOT = Path(__file__).resolve().parent.parent
PART1 = ("serial", "attention_cost", "kv_cache", "gradient_reach", "checkpoint")
PART2 = ("long_range", "depth")
ORDER = PART1 + PART2  # the order the issue asks for: what matters most first, depth (longest) last


def _csv(folder: Path, name: str) -> pd.DataFrame:
    (path,) = folder.glob(f"{name}-cpu-*.csv")
    return pd.read_csv(path)


def _log(folder: Path) -> list[str]:
    return (folder / "reference.log").read_text().splitlines()


def _run(*args, env=None, timeout=240):
    return subprocess.run(list(args), check=False, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})  # fmt: skip


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """The whole script once, both parts, on the CPU with the tiny presets."""
    out = tmp_path_factory.mktemp("gpu") / "out"
    r = _run("bash", "scripts/gpu_reference.sh", str(out), "--device", "cpu", "--preset", "tiny",
             env={"PYTHON": sys.executable})  # fmt: skip
    return out, r


def test_the_script_writes_every_experiments_csv_under_its_folder(session):
    out, r = session
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for name in ORDER:
        df = _csv(out, name)
        assert len(df) and (df.status != status.STOPPED).all(), name
        assert {"tf32", "cudnn_version", "threads", "device"} <= set(df.columns) and (df.tf32 == "off").all()
    log = _log(out)
    assert [line.split()[2].rstrip(":") for line in log if " done " in line] == list(ORDER)
    assert not any("FAILED" in line or "TIME LIMIT" in line for line in log)


def test_the_script_prints_the_environment_and_smoke_tests_first(session):
    out, _ = session
    text = (out / "session.log").read_text()
    assert text.index("torch 2.") < text.index("smoke:") < text.index("start serial")
    assert "TF32 in measurements: off" in text and "part 2 finished" in text
    (smoke,) = out.glob("smoke-cpu-*.csv")
    df = pd.read_csv(smoke)
    assert df.passed.all() and set(df.check) >= {"attention bf16", "fused recurrent fp32", "peak memory",
                                                  "out of memory on purpose", "matmul ceiling"}  # fmt: skip
    assert (df[df.check == "out of memory on purpose"].status == status.OOM).all()
    on_cpu = df[df.check == "attention bf16"].set_index(["detail", "seq_len"]).status
    assert on_cpu[("sdpa (cudnn)", 64)] == status.UNSUPPORTED and on_cpu[("sdpa (math)", 64)] == status.OK


def test_one_failing_experiment_costs_only_its_own_remaining_points(tmp_path):
    """attention_cost raises a RuntimeError after its first row and gradient_reach hangs past its time limit: both
    keep what they measured and end with a status row, each failure is a line in the log, and kv_cache and
    long_range (one before, one after) are complete."""
    out = tmp_path / "out"
    names = ("kv_cache", "attention_cost", "gradient_reach", "long_range")
    r = _run(sys.executable, "-m", "core", "reference", "--only", *names, "--device", "cpu", "--preset", "tiny",
             "--out-dir", str(out), "--time-limit", "gradient_reach=8",
             env={"LAB_INJECT": "attention_cost=error,gradient_reach=hang"})  # fmt: skip
    assert r.returncode == 1, r.stderr[-3000:]
    for name, rows in (("kv_cache", 9), ("long_range", 2 * len(long_range.MODELS))):  # tiny: 2 chunks a model
        df = _csv(out, name)
        assert len(df) == rows and (df.status == status.OK).all(), name
    failed = _csv(out, "attention_cost")
    assert list(failed.status) == [status.OK, status.STOPPED]
    assert "RuntimeError: injected failure" in failed.note.iloc[-1] and failed.device.iloc[-1].startswith("cpu")
    late = _csv(out, "gradient_reach")
    assert (late.status.iloc[:-1] == status.OK).all() and len(late) > 1
    assert late.status.iloc[-1] == status.STOPPED and "time limit" in late.note.iloc[-1]
    log = _log(out)
    assert any(line.split()[1:3] == ["FAILED", "attention_cost:"] and "injected failure" in line for line in log)
    assert any(line.split()[1:4] == ["TIME", "LIMIT", "gradient_reach:"] for line in log)
    assert "finished: 2 of 4 experiments complete" in log[-1]
    assert "Traceback" in r.stderr  # where it failed, for the session log


def test_a_killed_experiment_gets_its_status_row_from_the_runner(tmp_path):
    out = tmp_path / "out"
    r = _run(sys.executable, "-m", "core", "reference", "--only", "kv_cache", "--device", "cpu", "--preset", "tiny",
             "--out-dir", str(out), env={"LAB_INJECT": "kv_cache=kill"})  # fmt: skip
    assert r.returncode == 1
    df = _csv(out, "kv_cache")
    assert list(df.status) == [status.OK, status.STOPPED] and "SIGKILL" in df.note.iloc[-1]
    assert "FAILED kv_cache" in _log(out)[-2]


@pytest.mark.parametrize("name", ORDER)
def test_a_status_row_does_not_break_the_takeaways(name):
    """A GPU CSV that ends with a status row can be shipped as a reference: each page's takeaways still compute."""
    exp = EXPERIMENTS[name]
    df = exp.run(exp.config("tiny", {"device": "cpu"}))
    stop = {**df.iloc[-1][["device", "device_type"]].to_dict(), "status": status.STOPPED, "note": "time limit"}
    exp.takeaways(pd.concat([df, pd.DataFrame([stop])], ignore_index=True), translator("en"))


def test_the_gpu_path_imports_no_ui_packages():
    """The GPU box has torch, numpy and pandas only: the runner, the smoke test and every experiment load without
    streamlit or altair."""
    code = (
        "import sys, core.cli, core.reference, core.smoke, core.outputs, core.experiments; "
        "assert not [m for m in sys.modules if m.split('.')[0] in ('streamlit', 'altair')]"
    )
    r = _run(sys.executable, "-c", code, timeout=60)
    assert r.returncode == 0, r.stderr


def test_trouble_in_the_runner_itself_is_a_logged_status_and_the_next_experiment_runs(tmp_path, monkeypatch, capsys):
    from core import reference
    from core.cli import main

    real = reference.run_isolated

    def broken_for_kv_cache(name, *args):
        if name == "kv_cache":
            raise OSError(24, "Too many open files")
        return real(name, *args)

    monkeypatch.setattr(reference, "run_isolated", broken_for_kv_cache)
    out = tmp_path / "out"
    code = main(["reference", "--only", "kv_cache", "gradient_reach", "--device", "cpu", "--preset", "tiny",
                 "--out-dir", str(out)])  # fmt: skip
    assert code == 1
    assert list(pd.read_csv(out / "kv_cache-cpu-failed.csv").status) == [status.STOPPED]
    assert len(_csv(out, "gradient_reach")) == len(gradient_reach.MODELS) * 16  # tiny: 16 distances a model
    log = _log(out)
    assert "FAILED kv_cache: the runner failed (OSError" in log[0] and "done gradient_reach" in log[2]


def _quick_checks(monkeypatch):
    from core import smoke

    def fake(name):
        return lambda *a: iter([{"check": name, "detail": "-", "status": status.OK, "passed": True}])

    for check in ("_attention_rows", "_recurrent_rows", "_device_rows"):
        monkeypatch.setattr(smoke, check, fake(check))
    return smoke


def test_a_smoke_check_that_breaks_is_a_failed_row_and_the_next_checks_run(tmp_path, monkeypatch, capsys):
    from core.cli import main

    smoke = _quick_checks(monkeypatch)

    def broken(device):
        raise KeyError("no such counter")
        yield

    monkeypatch.setattr(smoke, "_memory_rows", broken)
    assert main(["smoke", "--device", "cpu", "--out-dir", str(tmp_path)]) == 1
    (path,) = tmp_path.glob("smoke-cpu-*.csv")
    df = pd.read_csv(path)
    assert list(df.check) == ["_attention_rows", "_recurrent_rows", "error", "_device_rows"]
    assert "KeyError" in df.note.iloc[2] and not df.passed.iloc[2]


def test_a_device_that_stops_computing_ends_the_smoke_test(tmp_path, monkeypatch, capsys):
    from core import guard
    from core.cli import main

    _quick_checks(monkeypatch)
    monkeypatch.setattr(guard, "device_ok", lambda device: False)
    assert main(["smoke", "--device", "cpu", "--out-dir", str(tmp_path)]) == 1
    (path,) = tmp_path.glob("smoke-cpu-*.csv")
    df = pd.read_csv(path)
    assert list(df.check) == ["_attention_rows", "device"] and df.status.iloc[-1] == status.STOPPED


def test_stopped_from_outside_the_runner_keeps_the_rows_and_says_so(tmp_path):
    """The script's own backstop (`timeout` around a whole part) signals the runner and its child together: the
    running experiment still writes its rows and a status row, and the log says what was not started."""
    out = tmp_path / "out"
    r = _run("timeout", "7", sys.executable, "-m", "core", "reference", "--only", "gradient_reach", "kv_cache",
             "--device", "cpu", "--preset", "tiny", "--out-dir", str(out),
             env={"LAB_INJECT": "gradient_reach=hang"})  # fmt: skip
    assert r.returncode == 124
    df = _csv(out, "gradient_reach")
    assert (df.status.iloc[:-1] == status.OK).all() and df.status.iloc[-1] == status.STOPPED
    assert "stopped from outside during gradient_reach" in _log(out)[-1]
    assert not list(out.glob("kv_cache-*.csv")) and not list(out.glob("*.tmp"))
