"""core.server.jobs: live runs in worker processes, one at a time for the whole server. The queue, Stop, a worker's death
and the spare are tested with a stand-in worker that speaks the protocol without torch (it measures nothing: a
'point' is a row it sends, or a wait on a gate file the test opens), so these run in the fast tier; one test runs
the real worker (`python -m core worker`) on a tiny serial config, spawned and forked from the zygote."""

import os
import signal
import sys
import textwrap
import time

import pytest

from core.server import jobs

FAKE = textwrap.dedent(
    """
    import json, os, signal, sys, time
    print(json.dumps({"type": "ready", "pid": os.getpid()}), flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        sys.exit(0)
    cfg = json.loads(line)["config"]
    if cfg.get("ignore_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for i in range(cfg.get("points", 1)):
        gate = cfg.get("gate")
        while gate and not os.path.exists(gate + str(i)):  # a point that lasts until the test lets it end
            time.sleep(0.01)
        row = {"i": i, "pid": os.getpid(), "nan": float("nan"), "model": "lstm"}
        print(json.dumps({"type": "progress", "done": i + 1, "total": cfg.get("points", 1), "message": "p",
                          "rows": [row]}), flush=True)
        if cfg.get("die_after") == i + 1:
            os.kill(os.getpid(), signal.SIGKILL)
    if cfg.get("fail"):
        print(json.dumps({"type": "failed", "error": cfg["fail"]}), flush=True)
    else:
        print(json.dumps({"type": "done"}), flush=True)
    """
)


@pytest.fixture
def queue():
    r = jobs.JobQueue(command=(sys.executable, "-c", FAKE), spare=False)
    yield r
    r.shutdown()


def _until(condition, limit=20.0):
    """Poll until `condition()` holds (a bound so a broken test ends; no assertion on how long it took)."""
    end = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < end, "gave up waiting"
        time.sleep(0.01)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie is gone for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].startswith("Z")
    except OSError:
        return True
    return False


def test_a_job_streams_its_rows_and_ends_done(queue):
    job = queue.submit("a", "fake", {"points": 3})
    _until(lambda: not job.active)
    assert job.state == "done" and [r["i"] for r in job.rows] == [0, 1, 2] and job.kept == 3
    assert job.rows[0]["pid"] == job.pid != os.getpid()  # measured in a process of its own
    assert job.rows[0]["nan"] != job.rows[0]["nan"]  # NaN stays a number
    # rows decoded from separate lines share their column names and short values: a depth run's 3,900 rows cost the
    # server 3.9 MiB per session that keeps them instead of 12.3 MiB
    first, second = job.rows[0], job.rows[1]
    assert all(a is b for a, b in zip(first, second, strict=True)) and first["model"] is second["model"]


def test_one_job_at_a_time_and_the_queue_says_each_place(queue, tmp_path):
    gate = str(tmp_path / "gate")
    first = queue.submit("a", "fake", {"points": 1, "gate": gate})
    second = queue.submit("b", "fake", {"points": 1})
    third = queue.submit("c", "fake", {"points": 1})
    _until(lambda: first.state == jobs.RUNNING)
    assert (second.state, third.state) == (jobs.WAITING, jobs.WAITING)
    assert queue.position(second)[0] == 1 and queue.position(third)[0] == 2
    assert queue.position(third)[1] > queue.position(second)[1] > 0  # an estimate that grows with the queue
    open(gate + "0", "w").close()
    _until(lambda: not third.active)
    assert [j.state for j in (first, second, third)] == ["done"] * 3
    assert first.ended <= second.started and second.ended <= third.started  # one after another, never together
    assert len({first.pid, second.pid, third.pid}) == 3 and not {r["pid"] for r in second.rows} & {first.pid}


def test_rows_never_mix_between_jobs(queue):
    a = queue.submit("a", "fake", {"points": 4})
    b = queue.submit("b", "fake", {"points": 2})
    _until(lambda: not b.active)
    assert {r["pid"] for r in a.rows} == {a.pid} and {r["pid"] for r in b.rows} == {b.pid}
    assert [r["i"] for r in a.rows] == [0, 1, 2, 3] and [r["i"] for r in b.rows] == [0, 1]


def test_stop_in_the_middle_of_a_point_ends_the_worker_and_keeps_the_rows(queue, tmp_path):
    """A point that never ends (a gate the test does not open) and a worker that ignores SIGTERM: Stop still
    ends it (SIGKILL after GRACE_S), and the row measured before is kept; the next job runs."""
    gate = str(tmp_path / "gate")
    open(gate + "0", "w").close()  # the first point ends, the second never does
    job = queue.submit("a", "fake", {"points": 2, "gate": gate, "ignore_term": True})
    _until(lambda: len(job.rows) == 1)
    queue.stop(job)
    _until(lambda: _gone(job.pid) and not job.active)
    assert job.state == "stopped" and [r["i"] for r in job.rows] == [0] and job.kept == 1
    after = queue.submit("a", "fake", {"points": 1})
    _until(lambda: not after.active)
    assert after.state == "done"


def test_a_waiting_job_can_be_cancelled_and_leaves_the_queue(queue, tmp_path):
    gate = str(tmp_path / "gate")
    first = queue.submit("a", "fake", {"points": 1, "gate": gate})
    second = queue.submit("b", "fake", {"points": 1})
    third = queue.submit("c", "fake", {"points": 1})
    queue.stop(second)
    assert second.state == "cancelled" and queue.position(third)[0] == 1
    open(gate + "0", "w").close()
    _until(lambda: not third.active)
    assert first.state == third.state == "done" and second.pid is None  # never started


def test_a_waiting_job_nobody_looks_at_leaves_the_queue(tmp_path):
    """A closed tab stops touching its job: after TICKET_TTL_S it is dropped (a fake clock, no waiting)."""
    now = [0.0]
    r = jobs.JobQueue(command=(sys.executable, "-c", FAKE), spare=False, clock=lambda: now[0])
    gate = str(tmp_path / "gate")
    try:
        first = r.submit("a", "fake", {"points": 1, "gate": gate})
        left, kept = r.submit("b", "fake", {"points": 1}), r.submit("c", "fake", {"points": 1})
        now[0] = jobs.TICKET_TTL_S - 1
        r.touch(kept)
        now[0] = jobs.TICKET_TTL_S + 1
        r.touch(kept)
        assert left.state == "cancelled" and kept.state == jobs.WAITING and r.position(kept)[0] == 1
        open(gate + "0", "w").close()
        _until(lambda: not kept.active)
        assert first.state == kept.state == "done"
    finally:
        r.shutdown()


def test_a_worker_killed_mid_run_is_a_died_job_with_its_rows_and_the_next_job_runs(queue):
    job = queue.submit("a", "fake", {"points": 5, "die_after": 2})
    _until(lambda: not job.active)
    assert job.state == "died" and "SIGKILL" in job.error and [r["i"] for r in job.rows] == [0, 1]
    after = queue.submit("a", "fake", {"points": 1})
    _until(lambda: not after.active)
    assert after.state == "done"


def test_kill_minus_nine_from_outside(queue, tmp_path):
    gate = str(tmp_path / "gate")
    open(gate + "0", "w").close()
    job = queue.submit("a", "fake", {"points": 2, "gate": gate})
    _until(lambda: len(job.rows) == 1)
    os.kill(job.pid, signal.SIGKILL)
    _until(lambda: not job.active)
    assert job.state == "died" and "SIGKILL" in job.error and len(job.rows) == 1


def test_a_failure_the_worker_reports_is_a_failed_job(queue):
    job = queue.submit("a", "fake", {"points": 1, "fail": "RuntimeError: boom"})
    _until(lambda: not job.active)
    assert job.state == "failed" and job.error == "RuntimeError: boom" and len(job.rows) == 1


def test_the_spare_worker_takes_the_next_job(tmp_path):
    r = jobs.JobQueue(command=(sys.executable, "-c", FAKE), spare=True)
    try:
        r.prepare()
        spare = r._spare
        assert spare is not None
        job = r.submit("a", "fake", {"points": 1})
        assert job.pid == spare.pid  # the waiting worker ran it
        _until(lambda: not job.active and r._spare is not None)
        assert r._spare.pid != job.pid  # a new spare, started after the run
    finally:
        r.shutdown()


@pytest.mark.slow
def test_the_real_worker_runs_a_page_config_through_the_command_lines_path():
    """A spare started from a page's script thread (which ends after every rerun) still takes the job, and runs it
    as `python -m core run` would, with the page's thread count; bad input is said, not run."""
    import threading

    r = jobs.JobQueue(spare=True, zygote=False)  # spawned, as where no fork is safe (macOS)
    try:
        script_thread = threading.Thread(target=r.prepare)
        script_thread.start()
        script_thread.join()
        config = {"models": ["lstm", "transformer"], "seq_lens": [16, 32], "d_model": 16, "batch_size": 2,
                  "warmup": 0, "repeats": 1, "max_point_s": 0.1, "device": "cpu"}  # fmt: skip
        job = r.submit("a", "serial", config, threads=1)
        _until(lambda: not job.active, limit=120)
        assert job.state == "done", job.error
        assert [(row["model"], row["seq_len"]) for row in job.rows] == [("lstm", 16), ("transformer", 16),
                                                                        ("lstm", 32), ("transformer", 32)]  # fmt: skip
        assert {row["threads"] for row in job.rows} == {1} and all(row["status"] == "ok" for row in job.rows)
        bad = r.submit("a", "serial", {**config, "seq_lens": [16, 999999]})
        _until(lambda: not bad.active, limit=120)
        assert bad.state == "bad_input" and "seq_lens" in bad.error and not bad.rows
    finally:
        r.shutdown()


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(") ", 1)[1].split()[1])


@pytest.mark.slow
@pytest.mark.skipif(not jobs.FORKS, reason="workers are forked from a zygote on Linux only")
def test_a_worker_forked_from_the_zygote_runs_stops_and_dies_as_a_spawned_one_does():
    """On Linux every worker is a fork of the server's warm zygote: it runs the page's config (rows and thread count
    as the spawned worker's), Stop ends it in the middle of a point with the rows it sent, a SIGKILL from outside is
    a died job, a zygote that died is replaced at the next prepare, and a fork measures on two threads."""
    r = jobs.JobQueue()
    try:
        r.prepare()
        _until(r.zygote_ready, limit=120)
        zygote = r._zygote._proc.pid
        config = {"models": ["lstm", "transformer"], "seq_lens": [16, 32], "d_model": 16, "batch_size": 2,
                  "warmup": 0, "repeats": 1, "max_point_s": 0.1, "device": "cpu"}  # fmt: skip
        long = {**config, "models": ["lstm_loop"], "seq_lens": [16, 65535]}  # a second point of minutes
        stopped, killed = r.submit("a", "serial", long, threads=1), r.submit("a", "serial", long, threads=1)
        _until(lambda: len(stopped.rows) == 1, limit=120)
        assert _parent(stopped.pid) == zygote
        r.stop(stopped)
        _until(lambda: not stopped.active)
        assert stopped.state == "stopped" and len(stopped.rows) == 1 and _gone(stopped.pid)
        _until(lambda: len(killed.rows) == 1, limit=120)
        assert _parent(killed.pid) == zygote and killed.pid != stopped.pid
        os.kill(killed.pid, signal.SIGKILL)
        _until(lambda: not killed.active)
        assert killed.state == "died" and "SIGKILL" in killed.error and len(killed.rows) == 1
        os.kill(zygote, signal.SIGKILL)
        _until(lambda: not r._zygote.alive())
        r.prepare()
        _until(r.zygote_ready, limit=120)
        job = r.submit("a", "serial", config, threads=1)
        _until(lambda: not job.active, limit=120)
        assert r._zygote._proc.pid != zygote and job.state == "done", job.error
        assert [(row["model"], row["seq_len"]) for row in job.rows] == [("lstm", 16), ("transformer", 16),
                                                                        ("lstm", 32), ("transformer", 32)]  # fmt: skip
        assert {row["threads"] for row in job.rows} == {1} and all(row["status"] == "ok" for row in job.rows)
        # a fork's ops run on several threads: no pool started in the zygote (where a tensor made at import once
        # started one) is left for the fork to wait on forever
        scaling = {"models": ["lstm"], "max_threads": 2, "seq_lens": [16], "d_model": 16, "batch_size": 2,
                   "warmup": 1, "repeats": 1, "max_point_s": 0.05, "device": "cpu"}  # fmt: skip
        threaded = r.submit("a", "scaling", scaling)
        _until(lambda: not threaded.active, limit=120)
        assert threaded.state == "done", threaded.error
        assert sorted(row["threads"] for row in threaded.rows) == [1, 2]
    finally:
        r.shutdown()


@pytest.mark.slow
def test_the_zygote_imports_every_experiment_without_asking_cuda_anything():
    """A fork may initialise CUDA only if its parent never did: importing what the zygote imports calls no CUDA
    runtime function (each one the test knows raises), so no accelerator state exists to be inherited."""
    code = (
        "import torch, torch.cuda\n"
        "def asked(*a, **k): raise AssertionError('CUDA asked at import')\n"
        "for name in ('is_available', 'device_count', 'init', '_lazy_init', 'current_device', 'get_device_name',\n"
        "             'get_device_properties', 'mem_get_info', 'is_bf16_supported'):\n"
        "    setattr(torch.cuda, name, asked)\n"
        "torch._C._cuda_getDeviceCount = asked\n"
        "import core.experiments, core.server.worker\n"
        "assert not torch.cuda.is_initialized()\n"
    )
    import subprocess

    r = subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=jobs.ROOT, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_time_left_counts_down_from_the_pace_once_a_quarter_is_done():
    now = [5.0]
    r = jobs.JobQueue(spare=False, zygote=False, clock=lambda: now[0])
    job = jobs.Job(1, "me", "serial", {}, None, state=jobs.RUNNING, started=0.0, done=2, total=10, moved=4.0)
    assert r.left(job) is None  # a fifth done: too early to read a pace
    job.done, job.moved, now[0] = 5, 10.0, 12.0
    assert r.left(job) == pytest.approx(10.0 * 10 / 5 - 12.0)  # half done in 10 s: 20 s in all, 8 s left at 12 s
    now[0] = 19.5
    assert r.left(job) == pytest.approx(0.5)  # counting down between points
    r._took["serial"] = 30.0  # this server ran it before, in 30 s
    assert r.left(job) == pytest.approx(10.5)
    assert r.left(jobs.Job(2, "me", "serial", {}, None)) is None  # queued: nothing to estimate
