"""The command line: `python -m core list | run | reference | checkpoints`. Needs torch, numpy and pandas only.

Bad input (unknown experiment or field, a value out of range, an absent device) exits with status 2 and one line
on stderr naming the field and what is allowed; never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

ENV_COLUMNS = ("device", "device_type", "device_memory_bytes", "torch_version", "threads", "date", "git_commit")


def _parse_sets(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ValueError(f"--set: {pair!r} must look like FIELD=VALUE")
        k, v = pair.split("=", 1)
        out[k.strip()] = v
    return out


def cmd_list(args) -> int:
    from core.config import describe_range, field_info
    from core.experiments import EXPERIMENTS

    for name, exp in EXPERIMENTS.items():
        print(f"{name}: {exp.summary}")
        print(f"  presets: {', '.join(exp.presets)}")
        for info in field_info(exp.config_cls):
            d = info["default"]
            default = ",".join(map(str, d)) if isinstance(d, tuple) else d
            print(
                f"  {info['name']:<14} default {default!s:<24} allowed {describe_range(info)}"
                + (f"  — {info['help']}" if info.get("help") else "")
            )
        print()
    return 0


def table(df: pd.DataFrame, max_rows: int = 60) -> str:
    """The rows as text, environment columns left out; long results show their head and tail (the CSV has all)."""
    shown = df[[c for c in df.columns if c not in ENV_COLUMNS and c != "source" and df[c].notna().any()]]
    with pd.option_context(
        "display.width", 200, "display.max_columns", 30, "display.float_format", lambda v: f"{v:.4g}"
    ):
        if len(shown) <= max_rows:
            return shown.to_string(index=False)
        head, tail = shown.head(max_rows // 2), shown.tail(10)
        return (
            head.to_string(index=False)
            + f"\n… {len(shown) - len(head) - len(tail)} more rows (all in the CSV) …\n"
            + tail.to_string(index=False, header=False)
        )


def run_one(
    name: str, preset: str, device: str | None, seed: int | None, sets: dict, out: str | None, quiet: bool = False
) -> pd.DataFrame:
    from core.device import configure_threads, measuring
    from core.experiments import get
    from core.i18n import translator
    from core.results import save_csv

    exp = get(name)
    overrides = dict(sets)
    if device is not None:
        overrides["device"] = device
    if seed is not None:
        overrides["seed"] = seed
    cfg = exp.config(preset, overrides)
    configure_threads()
    t0 = time.perf_counter()

    def progress(p):
        if not quiet:
            print(f"\r[{p.done}/{p.total}] {p.message:<50}", end="", file=sys.stderr, flush=True)

    with measuring():
        df = exp.run(cfg, on_progress=progress)
    if not quiet:
        print(f"\r{name}: {len(df)} rows in {time.perf_counter() - t0:.1f} s" + " " * 40, file=sys.stderr)
    print(table(df))
    if exp.takeaways is not None:
        for line in exp.takeaways(df, translator("en")):
            print("•", line)
    if out:
        path = save_csv(df, out)
        print(f"wrote {path}", file=sys.stderr)
    return df


def cmd_run(args) -> int:
    run_one(args.experiment, args.preset, args.device, args.seed, _parse_sets(args.set), args.out)
    return 0


def cmd_reference(args) -> int:
    """Every experiment's full preset, written to data/reference/<experiment>-<device>.csv."""
    from core.device import device_label, resolve_device
    from core.experiments import EXPERIMENTS
    from core.results import REFERENCE_DIR, reference_path

    dev = resolve_device(args.device)
    names = args.only or list(EXPERIMENTS)
    for name in names:
        exp = EXPERIMENTS.get(name)
        if exp is None:
            raise ValueError(f"--only: {name!r} is not one of {', '.join(EXPERIMENTS)}")
    for name in names:
        out = (
            reference_path(name, device_label(dev), dev.type)
            if args.out_dir is None
            else Path(args.out_dir) / reference_path(name, device_label(dev), dev.type).name
        )
        print(
            f"== {name} → {out.relative_to(REFERENCE_DIR.parent.parent) if out.is_relative_to(REFERENCE_DIR.parent.parent) else out}",
            file=sys.stderr,
        )
        run_one(name, args.preset, args.device, None, {}, str(out))
    return 0


def cmd_checkpoints(args) -> int:
    from core.checkpoints import cli

    return cli(args)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m core", description="Transformer Bottleneck Lab: run experiments without the dashboard."
    )
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="experiments, presets, config fields with defaults and allowed ranges")
    r = sub.add_parser("run", help="run one experiment and write its CSV")
    r.add_argument("experiment")
    r.add_argument("--preset", default="quick")
    r.add_argument("--device", default=None, help="auto|cpu|cuda|mps (default: the preset's, auto)")
    r.add_argument("--seed", default=None)
    r.add_argument("--set", action="append", metavar="FIELD=VALUE", help="override a config field (lists: a,b,c)")
    r.add_argument("--out", default=None, metavar="FILE.csv")
    ref = sub.add_parser("reference", help="run every experiment's full preset into data/reference/")
    ref.add_argument("--device", default="auto")
    ref.add_argument("--preset", default="full")
    ref.add_argument("--only", nargs="*", help="only these experiments")
    ref.add_argument("--out-dir", default=None)
    ck = sub.add_parser("checkpoints", help="train the small recall models shipped in data/checkpoints/")
    ck.add_argument("--out-dir", default=None)
    ck.add_argument("--steps", default=None, help="training steps per model (default: the shipped spec's)")
    return ap


COMMANDS = {"list": cmd_list, "run": cmd_run, "reference": cmd_reference, "checkpoints": cmd_checkpoints}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
