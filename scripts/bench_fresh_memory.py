"""What glibc's heap does to a timed step, measured (a benchmark that prints figures, not a test).

These were tests until their outcome was seen to depend on the heap a process happened to hold (a checkpointed
step once mapped 49 MiB afresh in a test process whose earlier tests had left its heap in pieces, once 16 MiB in a
fresh one). The harness's rules are tested on an injected fault counter (tests/test_bench.py); what the real heap
does is printed here, each part in a fresh process:

1. a plain BPTT step at n = 4,096 (~270 MiB kept for backward) and its checkpointed twin (~1 MiB), timed in the
   main thread and in another thread (where a page's script measures): MiB mapped afresh per call;
2. the plain step's minor page faults as glibc leaves it, inside `freed_memory_reused` (nested too), and after
   leaving it, with the MiB handed back on leaving;
3. RSS after each of five attention sweeps (naive attention's n² tensors), freed memory returned after each run,
   as a page's live run does.

    python scripts/bench_fresh_memory.py [--runs 1] [--smoke]

`--smoke` runs each part once at small sizes (n = 256, two short sweeps): a check that it runs, not figures to read.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# each part is Python run in a fresh process, its sizes in sys.argv (PARTS: full sizes, then --smoke's)
THREAD_VS_MAIN = """
import sys, threading
from core.harness.device import torch_threads
from core.experiments import checkpoint as experiment
cfg = experiment.EXPERIMENT.config('quick', {'device': 'cpu', 'seq_lens': sys.argv[1], 'repeats': 3})
got = {}
def run(where):
    with torch_threads(1):  # one thread: a 2-thread op outside the main thread waits on OpenMP here
        got[where] = experiment.EXPERIMENT.run(cfg).set_index('bptt')['fresh_bytes']
run('main')
t = threading.Thread(target=run, args=('thread',))
t.start()
t.join()
for where, fresh in got.items():
    print(f'  {where:<6} ' + ', '.join(f'{k} {v / 2**20:,.1f} MiB' for k, v in fresh.items()))
"""

REUSE = """
import resource, sys, torch
from core.harness.heap import freed_memory_reused
from core.experiments import checkpoint
cfg = checkpoint.CheckpointConfig()
step = checkpoint._prepare("lstm", "plain", cfg, int(sys.argv[1]), torch.device("cpu"))[2]
def rss():
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS")) / 1024
def faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    step()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
out = [faults() for _ in range(2)]
with freed_memory_reused():
    with freed_memory_reused():
        inner = [faults() for _ in range(2)]
    inside, held = [faults() for _ in range(2)], rss()
returned = held - rss()
print(f'  as glibc leaves it: {out} faults a step; reused (nested): {inner}; reused: {inside}')
print(f'  handed back on leaving: {returned:,.0f} MiB; then {[faults()]} faults a step')
"""

LEVEL_OFF = """
import sys
from core.experiments import attention_cost
from core.harness.heap import return_freed_memory
def rss():
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS")) / 1024
cfg = attention_cost.EXPERIMENT.config(
    "quick", {"impls": "naive,sdpa", "seq_lens": sys.argv[1], "device": "cpu", "repeats": 3})
after = []
for _ in range(int(sys.argv[2])):
    attention_cost.run(cfg)
    return_freed_memory()
    after.append(rss())
print('  RSS after each run: ' + ', '.join(f'{v:,.0f}' for v in after) + f' MiB; last - second {after[-1] - after[1]:+,.0f}')
"""

PARTS = (("fresh memory per timed call, main thread against another", THREAD_VS_MAIN, ["4096"], ["256"]),
         ("page faults of a plain step, freed memory reused or not", REUSE, ["4096"], ["256"]),
         ("RSS over attention sweeps", LEVEL_OFF, ["512,1024", "5"], ["64,128", "2"]))  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1, help="each part this many times, each in a fresh process")
    ap.add_argument("--smoke", action="store_true", help="each part once at small sizes, to check that it runs")
    args = ap.parse_args()
    failed = 0
    for title, code, sizes, small in PARTS:
        print(title)
        for _ in range(1 if args.smoke else args.runs):
            cmd = [sys.executable, "-c", code, *(small if args.smoke else sizes)]
            r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
            print(r.stdout.rstrip() if r.returncode == 0 else f"  failed: {r.stderr.strip().splitlines()[-1]}")
            failed += r.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
