"""Train the chapter's pair on recall at d = 800 ("Alice … she"), one (model, seed) run at a time, resumable.

    python scripts/far_recall.py --out out/far_recall.csv [--seeds 3]

Each finished run's rows are appended to --out; a rerun skips the runs already there, so a killed job loses at most
the run it was in. The rows are long_range's own (preset `far`); merge them into the long_range reference with
`--merge PATH`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.experiments import long_range
from core.store.results import tidy


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="CSV the finished runs are appended to")
    p.add_argument("--seeds", type=int, default=None, help="seeds per model (default: the preset's)")
    p.add_argument("--merge", type=Path, default=None, help="append --out's rows to this reference CSV, then stop")
    args = p.parse_args(argv)
    if args.merge is not None:
        rows, ref = pd.read_csv(args.out), pd.read_csv(args.merge)
        done = ref[(ref["distance"] >= long_range.FAR) & (ref["task"] == "recall")]
        if len(done):
            print(f"{args.merge} already holds rows at d >= {long_range.FAR}", file=sys.stderr)
            return 2
        pd.concat([ref, rows[ref.columns]], ignore_index=True).to_csv(args.merge, index=False)
        print(f"{len(rows)} rows added to {args.merge}")
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
