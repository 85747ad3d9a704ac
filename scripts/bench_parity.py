"""Does a page's live run measure what the command line measures? (a benchmark that prints figures, not a test)

A page's Run goes to a worker process (core.server.jobs, exactly what the page's server does, with the page's thread
count); the command line is `python -m core run` with the same settings and the same thread count (LAB_THREADS).
Alternating the two, `--runs` times each, it reads the checkpointed ÷ plain step time at n = 4,096 (the checkpoint
section) and naive attention's forward + backward at n = 2,048 (the attention page), and how many bytes the OS
mapped afresh per timed call (what made a run in the server's thread slow, and the pages say so when it happens).

    python scripts/bench_parity.py --runs 3
    python scripts/bench_parity.py --smoke   (one run each way at n = 64: a check that it runs)
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd

from core.harness.device import page_threads
from core.server import jobs

LENGTHS = {"checkpoint": 4096, "attention_cost": 2048}  # the length each experiment is compared at
SMOKE_LENGTH = 64


def _sets(name: str, n: int) -> dict:
    return {"seq_lens": str(n), **({"impls": "naive"} if name == "attention_cost" else {})}


def _read(name: str, df: pd.DataFrame, n: int) -> tuple[float, float]:
    """(the figure compared, the most fresh bytes mapped per call) of one run's rows."""
    ok = df[df["status"] == "ok"]
    fresh = float(ok["fresh_bytes"].max()) if "fresh_bytes" in ok and len(ok) else float("nan")
    if name == "checkpoint":
        return float(ok[ok["bptt"] == "checkpointed"]["time_ratio"].iloc[0]), fresh
    naive = ok[(ok["impl"] == "naive") & (ok["seq_len"] == n)]
    if "point" in naive:
        naive = naive[naive["point"] == "sweep"]
    return float(naive["time_ms"].iloc[0]), fresh


def _page(name: str, sets: dict, threads: int, warm_s: float = 6) -> pd.DataFrame:
    import dataclasses

    from core.config import make_config
    from core.experiments import EXPERIMENTS

    exp = EXPERIMENTS[name]
    cfg = make_config(exp.config_cls, {**sets, "device": "cpu"}, base=exp.config("quick"))
    r = jobs.JobQueue(spare=True)
    try:
        r.prepare()
        time.sleep(warm_s)  # the zygote (or the spare) imports torch, as while a learner reads the form
        while not r.zygote_ready():  # a fork, as the page's next Run gets, not a spawn
            time.sleep(0.05)
        job = r.submit("parity", name, dataclasses.asdict(cfg), threads=threads)
        while job.active:
            time.sleep(0.05)
        assert job.state == "done", (job.state, job.error)
        return pd.DataFrame(job.rows)
    finally:
        r.shutdown()


def _cli(name: str, sets: dict, threads: int) -> pd.DataFrame:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.csv"
        cmd = [sys.executable, "-m", "core", "run", name, "--preset", "quick", "--device", "cpu", "--out", str(out)]
        for k, v in sets.items():
            cmd += ["--set", f"{k}={v}"]
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, env={**os.environ, "LAB_THREADS": str(threads)})
        return pd.read_csv(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help=f"one run each way at n = {SMOKE_LENGTH}: does it run")
    args = ap.parse_args()
    if args.smoke:
        args.runs = 1
    threads = page_threads()
    print(
        f"{dt.date.today()}, {os.cpu_count()} cores, {threads} thread(s) both ways, {args.runs} runs each, alternating"
    )
    print(
        "| measure | page's worker (median; runs) | command line (median; runs) | difference | fresh MiB/call, page / CLI |"
    )
    print("|---|---|---|---|---|")
    for name, length in LENGTHS.items():
        n = SMOKE_LENGTH if args.smoke else length
        sets, page, cli = _sets(name, n), [], []
        for _ in range(args.runs):
            page.append(_read(name, _page(name, sets, threads, 0 if args.smoke else 6), n))
            cli.append(_read(name, _cli(name, sets, threads), n))
        p, c = statistics.median(x for x, _ in page), statistics.median(x for x, _ in cli)
        what = f"checkpointed ÷ plain step, n = {n:,}" if name == "checkpoint" else f"naive attention, n = {n:,} (ms)"
        runs = lambda xs: ", ".join(f"{x:.3g}" for x, _ in xs)
        fresh = lambda xs: f"{max(f for _, f in xs) / 2**20:.0f}"
        print(f"| {what} | {p:.3g} ({runs(page)}) | {c:.3g} ({runs(cli)}) | {100 * (p / c - 1):+.0f}% "
              f"| {fresh(page)} / {fresh(cli)} |")  # fmt: skip


if __name__ == "__main__":
    main()
