"""Config validation, the memory guard, result files, device handling."""

import math

import pandas as pd
import pytest
import torch

from core.config import make_config
from core.experiments.serial import SerialConfig
from core.harness import guard
from core.harness.device import configure_threads, environment, measuring, resolve_device
from core.store.results import load_csv, load_reference, save_csv


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match=r"^seq_lens: 70000 is out of range; allowed 2..65535"):
        make_config(SerialConfig, {"seq_lens": "64,70000"})
    with pytest.raises(ValueError, match="^models: 'cnn' is not allowed"):
        make_config(SerialConfig, {"models": "lstm,cnn"})
    with pytest.raises(ValueError, match="^d_model: 'wide' is not a valid int"):
        make_config(SerialConfig, {"d_model": "wide"})
    with pytest.raises(ValueError, match="^unknown field 'width'"):
        make_config(SerialConfig, {"width": 3})
    with pytest.raises(ValueError, match="^seq_lens: give at least 1"):
        make_config(SerialConfig, {"seq_lens": ""})
    cfg = make_config(SerialConfig, {"seq_lens": "8, 16", "d_model": "64", "models": ["lstm"]})
    assert cfg.seq_lens == (8, 16) and cfg.d_model == 64 and cfg.models == ("lstm",)
    assert make_config(SerialConfig, {"d_model": "64.0", "seq_lens": "1e3"}).seq_lens == (1000,)
    with pytest.raises(ValueError, match="^d_model: '64.5' is not a valid int"):
        make_config(SerialConfig, {"d_model": "64.5"})


def test_absent_device_is_a_clear_error():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type in ("cpu", "cuda", "mps")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="^device: 'cuda' is not available"):
            resolve_device("cuda")
    with pytest.raises(ValueError, match="^device: 'tpu'"):
        resolve_device("tpu")


def test_environment_columns_describe_the_device():
    configure_threads()
    env = environment(torch.device("cpu"))
    assert env["threads"] == torch.get_num_threads()
    assert env["device"].startswith("cpu") and env["torch_version"] == torch.__version__


def test_guard_refuses_what_cannot_fit_without_running_it():
    ran = []
    row = guard.guarded(lambda: ran.append(1) or {}, predicted_bytes=1e15, device=torch.device("cpu"))
    assert row["status"] == "skipped_memory" and not ran and "would need 909.5 TiB" in row["note"]


def test_guard_turns_oom_into_a_status_and_reraises_other_errors():
    def oom():
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    row = guard.guarded(oom, 10, torch.device("cpu"))
    assert row["status"] == "oom" and "out of memory" in row["note"]

    def bug():
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError):
        guard.guarded(bug, 10, torch.device("cpu"))
    assert guard.guarded(lambda: {"x": 1}, 10, torch.device("cpu")) == {"status": "ok", "predicted_bytes": 10, "x": 1}


def test_points_built_or_timed_out_of_memory_become_oom_rows_and_the_others_go_on():
    def prepare(key):
        if key == "big":
            raise MemoryError("can't allocate 64 GiB")
        if key == "bug":
            raise RuntimeError("shape mismatch")
        return key.upper()

    cpu = torch.device("cpu")
    prepared, fields = guard.prepare_each(["a", "big", "b"], prepare, cpu)
    assert prepared == {"a": "A", "b": "B"} and fields == {"big": {"status": "oom", "note": "can't allocate 64 GiB"}}
    with pytest.raises(RuntimeError, match="shape"):
        guard.prepare_each(["a", "bug"], prepare, cpu)
    err = torch.cuda.OutOfMemoryError("CUDA out of memory.\nTried to allocate 2 GiB")
    assert guard.failed_fields({"x": err}, cpu) == {"x": {"status": "oom", "note": "CUDA out of memory."}}
    assert guard.failed_fields({}, cpu) == {}


def test_format_bytes():
    assert guard.format_bytes(2 * 2**30) == "2.0 GiB"
    assert guard.format_bytes(512) == "512 B"
    assert guard.format_bytes(math.nan) == "?"


def test_results_are_written_atomically_and_bad_files_are_reported(tmp_path):
    df = pd.DataFrame({"model": ["lstm"], "seq_len": [8], "device": ["cpu"]})
    save_csv(df, tmp_path / "serial-cpu-a.csv")
    assert not list(tmp_path.glob("*.tmp"))
    back, why = load_csv(tmp_path / "serial-cpu-a.csv", ("model", "seq_len"))
    assert why is None and back.equals(df)
    (tmp_path / "serial-cpu-b.csv").write_bytes(b"\x00\xff\x00garbage\n\x01")
    (tmp_path / "serial-cpu-c.csv").write_text("a,b\n1,2\n")
    ref, problems = load_reference("serial", ("model", "seq_len", "device"), folder=tmp_path)
    assert len(ref) == 1 and len(problems) == 2
    assert any(p.kind == "wrong_kind" and "missing" in str(p) for p in problems)


def test_measuring_lock_waits_for_another_session():
    import threading

    seen, order = [], []
    held, release = threading.Event(), threading.Event()

    def holder():
        with measuring():
            held.set()
            release.wait(60)
            order.append("holder done")

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(60)

    def told_to_wait():  # the second session hears it must wait; only then does the first one finish
        seen.append(1)
        release.set()

    with measuring(on_wait=told_to_wait):
        order.append("second measures")
    t.join()
    assert seen and order == ["holder done", "second measures"]  # told, and it ran only after the first
