"""How long the real-text runs take here (a benchmark that prints figures, not a test): `real_text`'s quick preset
(the shipped models and the count baseline read on held-out text) and `text_race`'s quick preset (the page's
live race at its default: well under 30 s), each in a fresh process as `python -m core run` starts it, wall time
from the command's start to its exit, `--repeats` times each, median and range.

    python scripts/bench_real_text.py [--repeats 3] [--device cpu] [--smoke]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOUNDS = {"real_text": 30.0, "text_race": 30.0}  # seconds: a live quick run's bound on 2 cores


def once(name: str, device: str, out: Path, preset: str = "quick") -> float:
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "core", "run", name, "--preset", preset, "--device", device, "--out", str(out)]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--smoke", action="store_true", help="each tiny preset once, to check that it runs")
    args = ap.parse_args()
    preset = "tiny" if args.smoke else "quick"
    with tempfile.TemporaryDirectory() as tmp:
        times = {name: [] for name in BOUNDS}
        for _ in range(1 if args.smoke else args.repeats):  # interleaved: a background load falls on both alike
            for name in BOUNDS:
                times[name].append(once(name, args.device, Path(tmp) / f"{name}.csv", preset))
    for name, ts in times.items():
        med = statistics.median(ts)
        verdict = "within" if max(ts) <= BOUNDS[name] else "OVER"
        print(f"{name:10s} {preset}: median {med:5.1f} s (range {min(ts):.1f}–{max(ts):.1f} s over {len(ts)} runs); "
              f"{verdict} its bound of {BOUNDS[name]:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
