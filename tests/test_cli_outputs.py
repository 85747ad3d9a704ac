"""The command line's outputs: checked before any work, written as the rows come, never lost to a failed write.

Every output path error exits 2 with one line before anything is measured; a run that fails keeps its rows and
ends its CSV with a status row; a write that fails after the run puts the rows beside the requested path; a temp
file left by a killed write is removed by the next write to that path.
"""

import os
import time

import pandas as pd
import pytest

from core.cli import main
from core.harness import device
from core.harness.device import ENV_COLUMNS
from core.models import registry
from core.run_record import table
from core.store import results
from core.store.outputs import RowWriter, check_out_file, stop_row

TINY = ["run", "gradient_reach", "--preset", "tiny", "--device", "cpu"]


@pytest.fixture
def no_measuring(monkeypatch):
    """Fail the test if anything starts measuring: bad output paths must be refused before that."""
    import core.offline.smoke  # noqa: F401 - imported now, it keeps the real `measuring` after the test

    def refuse(*a, **k):
        raise AssertionError("a measurement started")

    monkeypatch.setattr(device, "measuring", refuse)


def _bad(capsys, argv, option):
    """Exit 2 with one line naming `option` (the `no_measuring` fixture fails the test if anything was measured)."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"error: {option}:"), err


def test_a_folder_given_as_out_is_refused_first(tmp_path, capsys, no_measuring):
    _bad(capsys, [*TINY, "--out", str(tmp_path)], "--out")


def test_a_name_that_is_not_a_csv_is_refused_first(tmp_path, capsys, no_measuring):
    _bad(capsys, [*TINY, "--out", str(tmp_path / "results.txt")], "--out")


def test_a_parent_that_cannot_be_created_is_refused_first(tmp_path, capsys, no_measuring):
    (tmp_path / "afile").write_text("x")
    _bad(capsys, [*TINY, "--out", str(tmp_path / "afile" / "sub" / "a.csv")], "--out")
    _bad(capsys, [*TINY, "--out-dir", str(tmp_path / "afile")], "--out-dir")
    _bad(capsys, ["reference", "--only", "kv_cache", "--out-dir", str(tmp_path / "afile")], "--out-dir")
    _bad(capsys, ["checkpoints", "--out-dir", str(tmp_path / "afile" / "x")], "--out-dir")
    _bad(capsys, ["smoke", "--device", "cpu", "--out-dir", str(tmp_path / "afile")], "--out-dir")
    _bad(capsys, ["reference", "--only", "kv_cache", "--out-dir", str(tmp_path), "--log", str(tmp_path)], "--log")


def test_a_place_that_cannot_be_written_is_refused_first(capsys, no_measuring):
    """A folder that exists but takes no new file, for root too (CI runs as root, who passes any mode bits):
    /proc/self, where the kernel refuses to create files whoever asks."""
    _bad(capsys, [*TINY, "--out", "/proc/self/a.csv"], "--out")
    _bad(capsys, [*TINY, "--out-dir", "/proc/self"], "--out-dir")


def test_the_checks_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="is a folder"):
        check_out_file("--out", tmp_path)
    with pytest.raises(ValueError, match="ending in .csv"):
        check_out_file("--out", tmp_path / "a.json")
    assert check_out_file("--out", tmp_path / "new" / "a.CSV") == tmp_path / "new" / "a.CSV"
    assert (tmp_path / "new").is_dir()


def test_bad_reference_input_is_refused_before_any_experiment_runs(tmp_path, capsys, no_measuring):
    _bad(capsys, ["reference", "--only", "serial", "nope", "--out-dir", str(tmp_path)], "--only")
    _bad(capsys, ["reference", "--only", "serial", "--preset", "huge", "--out-dir", str(tmp_path)], "preset")
    _bad(capsys, ["reference", "--only", "serial", "--time-limit", "depth=9", "--out-dir", str(tmp_path)],
         "--time-limit")  # fmt: skip
    _bad(capsys, ["reference", "--only", "serial", "--time-limit", "-3", "--out-dir", str(tmp_path)], "--time-limit")
    assert not list(tmp_path.glob("*.csv"))


def test_run_writes_the_csv_named_like_the_reference_into_out_dir(tmp_path, capsys):
    assert main([*TINY, "--out-dir", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("gradient_reach-cpu-*.csv")
    df = pd.read_csv(path)
    assert (
        len(df) == len(registry.names("gradient_reach:quick")) * 16
        and (df.status == "ok").all()
        and set(ENV_COLUMNS) <= set(df.columns)
    )
    assert "tf32" not in table(df) and "cudnn_version" not in table(df)  # environment columns stay out of the table


def test_a_failure_keeps_the_rows_and_ends_the_csv_with_a_status_row(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LAB_INJECT", "gradient_reach=error")
    out = tmp_path / "g.csv"
    assert main([*TINY, "--out", str(out)]) == 1
    df = pd.read_csv(out)
    assert (df.status.iloc[:-1] == "ok").all() and len(df) == 16 + 1  # the first layer's rows, then the status row
    assert df.status.iloc[-1] == "stopped" and "injected failure" in df.note.iloc[-1]
    assert df.device.iloc[-1] == df.device.iloc[0]  # the status row says where it ran
    err = capsys.readouterr().err
    assert "Traceback" in err and "16 rows kept in" in err  # the traceback goes to the log, the rows to the file


def test_the_time_limit_keeps_the_rows(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LAB_INJECT", "gradient_reach=hang")
    out = tmp_path / "g.csv"
    assert main([*TINY, "--out", str(out), "--time-limit", "1.5"]) == 124  # the hang was ended by the limit
    df = pd.read_csv(out)
    assert len(df) == 17 and df.status.iloc[-1] == "stopped" and "time limit of 2 s" in df.note.iloc[-1]


def test_a_write_that_fails_after_the_run_keeps_the_rows_beside_it(tmp_path, capsys, monkeypatch):
    out = tmp_path / "g.csv"
    real = results.save_csv

    def refuse_the_requested_path(df, path):
        if os.fspath(path) == os.fspath(out):
            raise PermissionError(13, "Permission denied")
        return real(df, path)

    monkeypatch.setattr(results, "save_csv", refuse_the_requested_path)
    assert main([*TINY, "--out", str(out)]) == 0
    (kept,) = tmp_path.glob("g.recovered-*.csv")
    assert len(pd.read_csv(kept)) == len(registry.names("gradient_reach:quick")) * 16 and not out.exists()
    err = capsys.readouterr().err
    assert err.count("could not write") == 1 and str(kept) in err  # said once, with where the rows are


def test_rows_are_written_as_they_come(tmp_path):
    writer = RowWriter(tmp_path / "a.csv")
    writer.add([{"x": 1, "status": "ok"}])
    assert len(pd.read_csv(tmp_path / "a.csv")) == 1  # the first chunk at once: the file exists early
    writer.add([{"x": 2, "status": "ok"}])  # later chunks at most every couple of seconds
    writer.stop("failed with RuntimeError: boom", env={"device": "cpu"})
    df = pd.read_csv(tmp_path / "a.csv")
    assert list(df.status) == ["ok", "ok", "stopped"] and df.note.iloc[-1].startswith("failed with")


def test_a_stop_row_carries_the_environment_of_the_run():
    rows = [{"device": "cpu · x", "threads": 2, "tf32": "off", "model": "lstm", "status": "ok"}]
    row = stop_row(rows, "why")
    assert row == {"device": "cpu · x", "threads": 2, "tf32": "off", "status": "stopped", "note": "why"}


def test_an_orphan_temp_file_is_removed_by_the_next_write(tmp_path):
    path = tmp_path / "a.csv"
    dead = tmp_path / "a.csv.999999999.0123abcd.tmp"  # a writer killed mid-write (no such process)
    old = tmp_path / "a.csv.k3j4h5g6.tmp"  # the older temp-name scheme, left long ago
    live = tmp_path / f"a.csv.{os.getppid()}.0123abcd.tmp"  # another live process writing right now
    other = tmp_path / "b.csv.999999999.0123abcd.tmp"  # another file's
    for p in (dead, old, live, other):
        p.write_text("partial")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    results.save_csv(pd.DataFrame({"x": [1]}), path)
    assert not dead.exists() and not old.exists() and live.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.glob("a.csv*")) == sorted(["a.csv", live.name])


def test_when_nothing_can_be_written_the_rows_are_printed_and_the_exit_says_so(tmp_path, capsys, monkeypatch):
    def refuse(df, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results, "save_csv", refuse)
    assert main([*TINY, "--out", str(tmp_path / "g.csv")]) == 1
    captured = capsys.readouterr()
    assert "grad_norm" in captured.out and "• " in captured.out  # the table and the takeaways: all that is left
    assert "the rows were only printed" in captured.err.splitlines()[-1]


def test_shipped_files_without_the_new_environment_columns_still_read_and_mix(tmp_path):
    """CSVs written before `tf32` and `cudnn_version` existed (some of data/reference/ still are): they load, print,
    and combine with new rows (the old rows' cells are simply empty). The old file is made from a shipped one."""
    assert main([*TINY, "--out", str(tmp_path / "new.csv")]) == 0
    new = pd.read_csv(tmp_path / "new.csv")
    shipped, problems = results.load_reference("gradient_reach")
    assert len(shipped) and not problems
    shipped.drop(columns=["tf32", "cudnn_version", "source"], errors="ignore").to_csv(tmp_path / "old.csv", index=False)
    old, problem = results.load_csv(tmp_path / "old.csv", ("device",))
    assert problem is None and len(old) and "tf32" not in old.columns
    both = pd.concat([old, new], ignore_index=True)
    assert both["tf32"].isna().sum() == len(old) and (both["tf32"].dropna() == "off").all()
    assert "grad_norm" in table(both)


def test_a_commit_hash_that_looks_like_a_number_stays_text_when_a_file_is_read_and_written_again(tmp_path):
    """59e6225 is 59 × 10^6225 to a number parser: the recall-frontier reference, read and written again with a stop
    row, had said 'inf' for its commit in all 3,139 rows. Read as text it stays the commit, and a stop row keeps it."""
    from core.store.outputs import add_stop_row

    path = tmp_path / "serial-cpu.csv"
    pd.DataFrame({"model": ["lstm", "gru"], "status": ["ok", "ok"], "git_commit": ["5586973", "59e6225"]}).to_csv(
        path, index=False
    )
    add_stop_row(path, "stopped by hand")  # reads the file, copies the last row's environment, writes it all again
    df, problem = results.load_csv(path)
    assert problem is None and list(df["git_commit"]) == ["5586973", "59e6225", "59e6225"]


def test_every_shipped_reference_names_its_commit_as_a_hash():
    import re

    for path in sorted(results.REFERENCE_DIR.glob("*.csv")):
        df, _ = results.load_csv(path)
        commits = set(df["git_commit"].dropna()) if df is not None and "git_commit" in df else set()
        assert all(re.fullmatch(r"[0-9a-f]{7,40}", c) for c in commits), (path.name, commits)
