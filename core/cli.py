"""The command line: `python -m core list | run | reference | smoke | env | checkpoints`. Needs torch, numpy, pandas.

Bad input (unknown experiment or field, a value out of range, an absent device, an output path that cannot be
written) exits with status 2 and one line on stderr naming the option or field and what is allowed, before
anything is measured; never a traceback. `run --out` writes the rows as they are measured; a run that fails or
reaches its time limit keeps them and ends its CSV with a status row ('stopped', the reason in the note), exit 1
(a failure) or 124 (the time limit). `reference` runs each experiment that way in a process of its own
(core/reference.py).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

import pandas as pd

from core.device import ENV_COLUMNS

INJECT_ENV = "LAB_INJECT"  # a test hook: 'NAME=error|hang|kill,…' makes experiment NAME fail after its first rows


class Terminated(BaseException):
    """SIGTERM arrived (a time limit enforced from outside): what was measured is written before the exit."""


class TimeLimit(Exception):
    """The run's own `--time-limit` passed (checked between repeats, training steps and points)."""


class RunFailed(Exception):
    """An experiment failed while running; its rows and a status row were written, the traceback printed."""


def _parse_sets(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ValueError(f"--set: {pair!r} must look like FIELD=VALUE")
        k, v = pair.split("=", 1)
        out[k.strip()] = v
    return out


def positive_seconds(option: str, value) -> float | None:
    """A time limit in seconds (None or 0: none); ValueError naming `option` otherwise."""
    if value in (None, "", "0"):
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{option}: {value!r} is not a number of seconds") from None
    if not 0 < seconds < 1e7:
        raise ValueError(f"{option}: {value!r} must be a positive number of seconds")
    return seconds


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


def _injected(name: str) -> str | None:
    """What the test hook asks of experiment `name` ('error', 'hang' or 'kill'), if anything."""
    for item in os.environ.get(INJECT_ENV, "").split(","):
        key, _, what = item.partition("=")
        if key.strip() == name:
            return what.strip() or "error"
    return None


def _inject(what: str, rows: int) -> None:
    from core import cancel

    if what == "kill":  # as the kernel's OOM killer or a segfault would: no chance to write anything
        os.kill(os.getpid(), signal.SIGKILL)
    if what == "hang":  # as a kernel that never returns would: only a time limit ends it
        while True:
            time.sleep(0.1)
            cancel.check()
    raise RuntimeError(f"injected failure ({INJECT_ENV}) after {rows} rows")


def _why(err: BaseException, time_limit: float | None) -> str:
    if isinstance(err, TimeLimit):
        return f"the time limit of {time_limit:,.0f} s was reached; the points after these were not measured"
    if isinstance(err, Terminated):
        return "terminated from outside (a time limit?) before it finished"
    if isinstance(err, KeyboardInterrupt):
        return "interrupted before it finished"
    text = " ".join(str(err).split())[:300] or "no message"
    return f"failed with {type(err).__name__}: {text}"


def run_one(name: str, preset: str, device: str | None, seed: int | None, sets: dict, out: str | Path | None,
            quiet: bool = False, time_limit: float | None = None, out_dir: Path | None = None,
            threads: int | None = None, on_progress=None) -> pd.DataFrame:  # fmt: skip
    """Validate, run with its rows written as they come (to `out`, or into `out_dir` named like the reference files:
    <experiment>-<device type>-<device name>.csv), then print the table and the takeaways. An error, the time limit,
    Ctrl-C or SIGTERM still writes the rows measured and a status row, then propagates. `threads`: torch's thread
    count (default: one per core); `on_progress(p)`: called with every progress report (a page's worker sends it
    on, core.worker)."""
    from core import cancel
    from core.device import configure_threads, device_label, environment, measuring, resolve_device
    from core.experiments import get
    from core.i18n import translator
    from core.outputs import RowWriter
    from core.results import reference_path

    exp = get(name)
    overrides = dict(sets)
    if device is not None:
        overrides["device"] = device
    if seed is not None:
        overrides["seed"] = seed
    cfg = exp.config(preset, overrides)  # bad input: ValueError, before anything runs
    configure_threads(threads)
    dev = resolve_device(getattr(cfg, "device", "auto"))
    env = environment(dev)
    if out_dir is not None:
        out = out_dir / reference_path(name, device_label(dev), dev.type).name
    writer = RowWriter(out, on_message=lambda m: print(f"warning: {m}", file=sys.stderr)) if out else None
    inject, t0 = _injected(name), time.perf_counter()
    deadline = None if time_limit is None else time.monotonic() + time_limit

    def late() -> bool:
        return deadline is not None and time.monotonic() > deadline

    def progress(p):
        if writer is not None and p.rows:
            writer.add(p.rows)
        if on_progress is not None:
            on_progress(p)
        if inject and p.rows:
            _inject(inject, len(writer.rows) if writer else p.done)
        if not quiet:
            print(f"\r[{p.done}/{p.total}] {p.message:<50}", end="", file=sys.stderr, flush=True)
        if late():
            raise TimeLimit

    try:
        with measuring(), cancel.stop_when(late):
            df = exp.run(cfg, on_progress=progress)
    except (Exception, Terminated, KeyboardInterrupt) as caught:  # noqa: BLE001 - any failure keeps the rows
        err = TimeLimit() if isinstance(caught, cancel.Stopped) and late() else caught
        if not isinstance(err, (TimeLimit, Terminated, KeyboardInterrupt)):
            traceback.print_exception(err, file=sys.stderr)  # for the log: where it failed
        why = _why(err, time_limit)
        kept = ""
        if writer is not None:
            n_rows = len(writer.rows)
            kept = f"; {n_rows} rows kept in {writer.stop(why, env)}"
        print(f"\n{name}: {why}{kept}", file=sys.stderr)
        if isinstance(err, (TimeLimit, Terminated, KeyboardInterrupt)):
            raise err from None
        raise RunFailed(why) from err
    if not quiet:
        print(f"\r{name}: {len(df)} rows in {time.perf_counter() - t0:.1f} s" + " " * 40, file=sys.stderr)
    unwritten = None
    if writer is not None:  # the CSV first: nothing printed after it can lose the rows
        try:
            print(f"wrote {writer.write(df)}", file=sys.stderr)
        except OSError as err:  # nowhere could be written: the table below is all that is left of the rows
            unwritten = str(err)
    print(table(df))
    if exp.takeaways is not None:
        try:
            for line in exp.takeaways(df, translator("en")):
                print("•", line)
        except Exception as err:  # noqa: BLE001 - the rows are safe; a finding that cannot be computed is a message
            print(f"warning: takeaways failed ({type(err).__name__}: {err})", file=sys.stderr)
    if unwritten is not None:
        print(f"error: {unwritten}", file=sys.stderr)
        raise RunFailed(unwritten)
    return df


def cmd_run(args) -> int:
    from core.outputs import check_out_dir, check_out_file

    if args.out and args.out_dir:
        raise ValueError("--out, --out-dir: give one of them")
    limit = positive_seconds("--time-limit", args.time_limit)
    out = check_out_file("--out", args.out) if args.out else None
    out_dir = check_out_dir("--out-dir", args.out_dir) if args.out_dir else None
    with _sigterm_raises():
        run_one(args.experiment, args.preset, args.device, args.seed, _parse_sets(args.set), out, time_limit=limit,
                out_dir=out_dir)  # fmt: skip
    return 0


@contextlib.contextmanager
def _sigterm_raises():
    """Inside the block SIGTERM raises Terminated (so the rows are written); the handler before is restored after."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return

    def terminate(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one (the runner's, after the group's) must not
        raise Terminated  # interrupt the writing of the rows

    before = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def cmd_reference(args) -> int:
    from core.reference import cli

    with _sigterm_raises():  # stopped from outside: the running experiment's rows are kept and logged first
        return cli(args)


def cmd_smoke(args) -> int:
    from core.outputs import check_out_dir

    out_dir = check_out_dir("--out-dir", args.out_dir) if args.out_dir else None
    from core.smoke import run_smoke  # after the check: a bad folder costs no torch import

    with _sigterm_raises():
        return run_smoke(args.device, out_dir)


def cmd_worker(args) -> int:
    from core.worker import serve

    return serve()


def cmd_env(args) -> int:
    from core.smoke import describe_environment

    print(describe_environment(args.device))
    return 0


def cmd_checkpoints(args) -> int:
    from core.checkpoints import cli
    from core.outputs import check_out_dir

    if args.out_dir:
        check_out_dir("--out-dir", args.out_dir)
    return cli(args)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m core", description="Transformer Bottleneck Lab: run experiments without the dashboard."
    )
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="experiments, presets, config fields with defaults and allowed ranges")
    r = sub.add_parser("run", help="run one experiment and write its CSV as it is measured")
    r.add_argument("experiment")
    r.add_argument("--preset", default="quick")
    r.add_argument("--device", default=None, help="auto|cpu|cuda|mps (default: the preset's, auto)")
    r.add_argument("--seed", default=None)
    r.add_argument("--set", action="append", metavar="FIELD=VALUE", help="override a config field (lists: a,b,c)")
    r.add_argument("--out", default=None, metavar="FILE.csv")
    r.add_argument("--out-dir", default=None, help="write <experiment>-<device>.csv into this folder instead")
    r.add_argument("--time-limit", default=None, metavar="SECONDS", help="stop after this long, keeping the rows")
    ref = sub.add_parser("reference", help="every experiment's preset, each in its own process, into a folder")
    ref.add_argument("--device", default="auto")
    ref.add_argument("--preset", default="full")
    ref.add_argument("--only", nargs="*", help="only these experiments, in this order")
    ref.add_argument("--out-dir", default=None, help="default: data/reference/")
    ref.add_argument("--time-limit", action="append", default=[], metavar="[NAME=]SECONDS",
                     help="per experiment (repeatable): its rows so far are kept and the next one starts")  # fmt: skip
    ref.add_argument("--log", default=None, help="one line per experiment (default: OUT_DIR/reference.log)")
    ref.add_argument("--deadline", default=None, metavar="EPOCH_SECONDS",
                     help="the whole run ends by then: each experiment may use the time the ones before it left, "
                          "never the time given to those after it")  # fmt: skip
    sm = sub.add_parser("smoke", help="a short test of the risky paths (SDPA backends, fused RNNs, memory, OOM)")
    sm.add_argument("--device", default="auto")
    sm.add_argument("--out-dir", default=None)
    sub.add_parser("worker", help="a page's live run: one job (JSON) on stdin, its progress as JSON lines on stdout")
    ev = sub.add_parser("env", help="Python, torch, CUDA, cuDNN, the device and its free memory, TF32")
    ev.add_argument("--device", default="auto")
    ck = sub.add_parser("checkpoints", help="train the small recall models shipped in data/checkpoints/")
    ck.add_argument("--out-dir", default=None)
    ck.add_argument("--steps", default=None, help="training steps per model (default: the shipped spec's)")
    return ap


COMMANDS = {"list": cmd_list, "run": cmd_run, "reference": cmd_reference, "smoke": cmd_smoke, "env": cmd_env,
            "checkpoints": cmd_checkpoints, "worker": cmd_worker}  # fmt: skip
EXIT_CODES = ((RunFailed, 1), (TimeLimit, 124), (KeyboardInterrupt, 130), (Terminated, 143))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (Exception, Terminated, KeyboardInterrupt) as err:  # noqa: BLE001 - rows and status row already written
        for kind, code in EXIT_CODES:
            if isinstance(err, kind):
                return code
        traceback.print_exception(err, file=sys.stderr)
        print(f"error: {_why(err, None)}", file=sys.stderr)
        return 1
