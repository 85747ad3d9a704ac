"""What a live run in a worker process costs (a benchmark that prints figures, not a test): the time from a page's
Run to the worker having the job in hand, with a fresh worker (it imports torch and every experiment first), with the
spare that waits warm (where no fork is safe) and with a fork of the zygote (Linux); the same for a run queued behind
another one (its worker is made when the one before it ends: no spare waits beside a measurement); the CPU time a
worker costs before it has the job; and how long a Stop takes to end a worker in the middle of a point that would run
for minutes (lstm_loop at 65,535 tokens).

    python scripts/bench_worker.py --runs 3
    python scripts/bench_worker.py --smoke   (one run, no pauses: a check that it runs, not figures to read)
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.server import jobs

TINY = {"models": ["lstm"], "seq_lens": [16], "d_model": 16, "batch_size": 2, "warmup": 0, "repeats": 1,
        "max_point_s": 0.1, "device": "cpu"}  # fmt: skip
LONG = {**TINY, "models": ["lstm_loop"], "seq_lens": [16, 65535], "d_model": 128, "batch_size": 8}


def _first_report(queue: jobs.JobQueue, config: dict) -> tuple[float, jobs.Job]:
    t0 = time.perf_counter()
    job = queue.submit("bench", "serial", config, threads=1)
    while job.active and job.in_hand is None:
        time.sleep(0.005)
    return time.perf_counter() - t0, job


def _queued(queue: jobs.JobQueue) -> tuple[float, float]:
    """A run queued behind another: (its start → its worker having it in hand, that worker's CPU seconds then)."""
    first = queue.submit("bench", "serial", TINY, threads=1)
    second = queue.submit("bench", "serial", TINY, threads=1)
    while second.active and second.in_hand is None:
        queue.touch(second)  # as its page does while it waits (an untouched ticket leaves the queue)
        time.sleep(0.005)
    assert second.in_hand is not None, (second.state, second.error)
    cpu = _cpu_s(second.pid)
    _wait(first)
    _wait(second)
    return second.in_hand - second.started, cpu


def _measure_warm(queue: jobs.JobQueue, first: list, queued: list, cpu: list, read_s: float = 8) -> None:
    """A Run after the learner read the form (the spare or the zygote warm), then a run queued behind another."""
    queue.prepare()
    time.sleep(read_s)  # the learner reads the form while the spare or the zygote imports torch
    while not queue.zygote_ready():  # busy machine: a fork, not a spawn, is timed
        time.sleep(0.05)
    s, job = _first_report(queue, TINY)
    _wait(job)
    first.append(s)
    s, c = _queued(queue)
    queued.append(s)
    cpu.append(c)


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait(job: jobs.Job) -> None:
    while job.active:
        time.sleep(0.01)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].startswith("Z")
    except OSError:
        return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="one run without the pauses, to check that it runs")
    args = ap.parse_args()
    read_s, inside_s = (0, 0.5) if args.smoke else (8, 3)  # reading the form; into the long point before Stop
    if args.smoke:
        args.runs = 1
    cold, warm, forked, queued, queued_forked, cpu, cpu_forked, stops = [], [], [], [], [], [], [], []
    for _ in range(args.runs):
        r = jobs.JobQueue(spare=False, zygote=False)
        s, job = _first_report(r, TINY)
        _wait(job)
        cold.append(s)
        r.shutdown()
        r = jobs.JobQueue(spare=True, zygote=False)
        _measure_warm(r, warm, queued, cpu, read_s)
        if jobs.FORKS:  # the rest with the zygote, the way this platform runs a page's workers
            r.shutdown()
            r = jobs.JobQueue()
            _measure_warm(r, forked, queued_forked, cpu_forked, read_s)
        job = r.submit("bench", "serial", LONG, threads=1)
        while job.active and len(job.rows) < 1:  # the short point is done: now inside the long one
            time.sleep(0.01)
        time.sleep(inside_s)
        t0 = time.perf_counter()
        r.stop(job)
        while not _gone(job.pid):
            time.sleep(0.002)
        stops.append(time.perf_counter() - t0)
        _wait(job)
        assert job.state == "stopped" and len(job.rows) == 1, (job.state, len(job.rows))
        r.shutdown()

    def row(name, xs):
        if not xs:
            return f"| {name} | (no fork on this platform) | |"
        return f"| {name} | {statistics.median(xs):.2f} s | {min(xs):.2f}–{max(xs):.2f} s |"

    print(f"{dt.date.today()}, {os.cpu_count()} cores, {args.runs} runs each (median, range):")
    print("| measure | median | range |\n|---|---|---|")
    print(row("Run → job in the worker's hands, fresh worker (imports torch)", cold))
    print(row("Run → job in the worker's hands, spare worker (waiting warm)", warm))
    print(row("Run → job in the worker's hands, forked from the zygote", forked))
    print(row("queued run: its turn → job in hand, spawned (no spare beside a run)", queued))
    print(row("queued run: its turn → job in hand, forked from the zygote", queued_forked))
    print(row("CPU seconds a spawned worker spent before the job", cpu))
    print(row("CPU seconds a forked worker spent before the job", cpu_forked))
    print(row(f"Stop {inside_s:g} s into a point of minutes → worker gone", stops))


if __name__ == "__main__":
    main()
