"""How long each experiment's quick preset takes as a page's live run (a benchmark that prints figures, not a test).

    python scripts/bench_quick.py [--runs 3] [--only answers_speed recall_frontier] [--smoke]

Each run goes through a worker, as a page's Run does (core.server.jobs, the page's threads, its settle time), and is
timed from the submit to the last row; the runs of all experiments are interleaved, so a busy moment of the machine
falls on every experiment alike. Prints a Markdown table (median and range) against the quick budget; exit status 1
if a run did not end done. `--smoke`: one run of serial's tiny preset, to check that it runs.
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

from core.experiments import EXPERIMENTS
from core.harness.device import page_threads
from core.server import jobs
from ui.live import START_SETTLE_S

BUDGET_S = 27.0  # a live quick run on 2 cores: 30 s, with a margin for a slower host


def run_quick(queue: jobs.JobQueue, name: str, preset: str = "quick") -> tuple[jobs.Job, float]:
    """Experiment `name`'s quick preset (or `preset`) as a page's Run starts it, followed to its end: (the job,
    submit → last row in seconds)."""
    config = EXPERIMENTS[name].config(preset, {"device": "cpu"})
    t0 = time.perf_counter()
    job = queue.submit("bench", name, vars(config), threads=page_threads(), settle_s=START_SETTLE_S)
    while job.active:
        queue.touch(job)
        time.sleep(0.05)
    return job, time.perf_counter() - t0


def _time(queue: jobs.JobQueue, name: str, preset: str) -> tuple[float, str]:
    """(submit → last row in seconds, the job's final state)."""
    job, seconds = run_quick(queue, name, preset)
    return seconds, job.state


def host_speed(repeats: int = 20) -> float:
    """This host's speed as one fixed workload measures it: GFLOP/s of a one-thread 1024 × 1024 float32 matmul,
    median of `repeats` after a warm-up, so a table from one host can be read against another's."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a = torch.randn(1024, 1024)
        a @ a
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            a @ a
            times.append(time.perf_counter() - t0)
    finally:
        torch.set_num_threads(threads)
    return 2 * 1024**3 / statistics.median(times) / 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    quick = [n for n, e in EXPERIMENTS.items() if "quick" in e.presets]
    ap.add_argument("--only", nargs="*", choices=quick, default=quick, help="experiments to time (default: all)")
    ap.add_argument("--smoke", action="store_true", help="one run of serial's tiny preset, to check that it runs")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error(f"--runs: {args.runs} must be at least 1")
    preset, repeats = ("tiny", 3) if args.smoke else ("quick", 20)
    if args.smoke:
        args.runs, args.only = 1, ["serial"]
    names = args.only
    times = {n: [] for n in names}
    states = {n: set() for n in names}
    speed = [host_speed(repeats)]
    queue = jobs.JobQueue()
    try:
        queue.prepare()
        while not queue.zygote_ready():  # a learner reads the form while the worker imports torch
            time.sleep(0.1)
        for _ in range(args.runs):
            for n in names:
                s, state = _time(queue, n, preset)
                times[n].append(s)
                states[n].add(state)
                print(f"  {n}: {s:.1f} s ({state})", file=sys.stderr)
    finally:
        queue.shutdown()  # no worker outlives an interrupted benchmark
    speed.append(host_speed(repeats))
    print(f"{dt.date.today()}, {os.cpu_count()} cores, {page_threads()} threads, {args.runs} runs each of {preset}:")
    print(f"host speed, one-thread 1024³ float32 matmul: {speed[0]:.1f} GFLOP/s before, {speed[1]:.1f} after")
    print("| experiment | median | range | within the budget |")
    print("|---|---|---|---|")
    for n in names:
        med = statistics.median(times[n])
        ok = "yes" if max(times[n]) <= BUDGET_S else "no"
        note = "" if states[n] == {"done"} else f" ({', '.join(sorted(states[n]))})"
        print(f"| {n} | {med:.1f} s | {min(times[n]):.1f}–{max(times[n]):.1f} s | {ok}{note} |")
    return 0 if all(s == {"done"} for s in states.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
