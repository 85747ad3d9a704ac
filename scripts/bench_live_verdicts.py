"""Does a learner's quick run answer its page's question as the reference does? (A benchmark that prints figures.)

    python scripts/bench_live_verdicts.py [--runs 10] [--only serial answers …] [--smoke]

For each question of `core.findings.verdicts.QUESTIONS`, its experiment's quick preset runs as a page's Run starts
it (a worker from core.server.jobs, the page's threads, its settle time), the runs of all questions interleaved so a
busy moment falls on each alike. Each run's rows go through the question's verdict, as the page reads them. Prints
per question: the option the CPU reference supports, the options the live runs supported (1-based; '—' for none
clearly), how many agree, whether the page explains a difference in words (`<question>.verdict.differ`), and the
runs' median time. `--smoke`: one run of the first question's tiny preset, agreement not judged (a check that it runs).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pandas as pd
from bench_quick import run_quick

from core.findings import verdicts
from core.harness.device import page_threads
from core.server import jobs
from core.store.results import load_reference
from core.terms.i18n import catalogue

AGREE_AT_LEAST = 0.9  # of the runs: the page's live verdict stands for the reference's


def _option(verdict) -> str:
    return "—" if verdict is None or verdict.option is None else str(verdict.option + 1)


def reference_option(question: str) -> str:
    """The option the shipped CPU reference supports, read as a page on a CPU reads it (its first CPU device)."""
    ref, _ = load_reference(verdicts.QUESTIONS[question].experiment)
    cpu = [d for d in dict.fromkeys(ref["device"]) if str(d).startswith("cpu")] if len(ref) else []
    rows = ref[ref["device"] == cpu[0]] if cpu else ref.iloc[:0]
    return _option(verdicts.QUESTIONS[question].verdict(rows) if len(rows) else None)


def _run(queue: jobs.JobQueue, question: str, preset: str) -> tuple[str, float, str]:
    """(the live verdict's option, seconds from submit to the last row, the job's final state)."""
    job, seconds = run_quick(queue, verdicts.QUESTIONS[question].experiment, preset)
    rows = pd.DataFrame(list(job.rows)).assign(source="live") if job.rows else pd.DataFrame()
    return _option(verdicts.QUESTIONS[question].verdict(rows) if len(rows) else None), seconds, job.state


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--only", nargs="*", choices=list(verdicts.QUESTIONS), default=list(verdicts.QUESTIONS))
    ap.add_argument("--smoke", action="store_true", help="one tiny run of the first question, to check that it runs")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error(f"--runs: {args.runs} must be at least 1")
    preset = "tiny" if args.smoke else "quick"
    if args.smoke:
        args.runs, args.only = 1, list(verdicts.QUESTIONS)[:1]
    ref = {q: reference_option(q) for q in args.only}
    live, seconds, states = collections.defaultdict(list), collections.defaultdict(list), collections.defaultdict(set)
    queue = jobs.JobQueue()
    try:
        queue.prepare()
        while not queue.zygote_ready():
            time.sleep(0.1)
        for i in range(args.runs):
            for q in args.only:
                option, s, state = _run(queue, q, preset)
                live[q].append(option)
                seconds[q].append(s)
                states[q].add(state)
                print(f"  run {i + 1}: {q}: option {option} in {s:.1f} s ({state})", file=sys.stderr)
    finally:
        queue.shutdown()
    en = catalogue("en")
    print(f"{dt.date.today()}, {os.cpu_count()} cores, {page_threads()} threads, {args.runs} runs each:")
    print("| question | experiment | reference | live runs | agree | page explains a difference | median time |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    for q in args.only:
        agree = sum(o == ref[q] for o in live[q])
        counts = ", ".join(f"{o}: {n}" for o, n in sorted(collections.Counter(live[q]).items()))
        explains = f"{q}.verdict.differ" in en
        ok &= agree >= AGREE_AT_LEAST * args.runs or explains or args.smoke
        ok &= states[q] == {"done"}
        note = "" if states[q] == {"done"} else f" ({', '.join(sorted(states[q]))})"
        print(f"| {q} | {verdicts.QUESTIONS[q].experiment} | {ref[q]} | {counts} | {agree}/{args.runs} | "
              f"{'yes' if explains else 'no'} | {statistics.median(seconds[q]):.1f} s{note} |")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
