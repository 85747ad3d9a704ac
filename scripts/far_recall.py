"""Train the chapter's pair on recall at d = 800 ("Alice … she"), one (model, seed) run at a time, resumable.

    python scripts/far_recall.py --out out/far_recall.csv [--seeds 3]

Each finished run's rows are appended to --out; a rerun skips the runs already there, so a killed job loses at most
the run it was in. The rows are long_range's own (preset `far`); `--ship` writes them as the long_range reference file of the
device they were measured on, beside the grid's (the page concludes from the fullest run, and draws this one too).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.experiments import long_range
from core.store.results import reference_path, save_csv, tidy


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="CSV the finished runs are appended to")
    p.add_argument("--seeds", type=int, default=None, help="seeds per model (default: the preset's)")
    p.add_argument("--ship", action="store_true", help="write --out's rows as this device's long_range reference file")
    args = p.parse_args(argv)
    if args.ship:
        rows = pd.read_csv(args.out)
        path = reference_path("long_range", str(rows["device"].iloc[0]), str(rows["device_type"].iloc[0]))
        if path.exists():
            print(f"--ship: {path} exists; remove it first", file=sys.stderr)
            return 2
        save_csv(rows, path)
        print(f"{len(rows)} rows shipped as {path}")
        return 0
    cfg = long_range.EXPERIMENT.config("far")
    seeds = args.seeds or cfg.seeds
    have = pd.read_csv(args.out) if args.out.exists() else None
    for seed in range(cfg.seed, cfg.seed + seeds):
        for model in cfg.models:
            if have is not None and ((have["model"] == model) & (have["seed"] == seed)).any():
                continue
            one = long_range.EXPERIMENT.config("far", {"models": (model,), "seed": seed, "seeds": 1})
            print(f"training {model} seed {seed} at d={one.distances}", flush=True)
            df = long_range.run(one, on_progress=lambda p: print(f"  {p.message}", flush=True))
            df = tidy(df, df.columns)
            df.to_csv(args.out, mode="a", header=not args.out.exists(), index=False)
            last = df.iloc[-1]
            print(f"done {model} seed {seed}: step {last['step']} accuracy {last['accuracy']:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
