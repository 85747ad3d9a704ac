"""One experiment run with its rows kept: the path `python -m core run` and a page's worker share.

A failure, the time limit, Ctrl-C or SIGTERM still writes the rows and a status row, then propagates as RunFailed,
TimeLimit, KeyboardInterrupt or Terminated (core.cli turns each into its exit status).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

import pandas as pd

from core.harness.device import ENV_COLUMNS

# a test hook: 'NAME=error|hang|kill|late,…' makes experiment NAME fail after its first rows ('late': its time limit
# is reached there, whatever the clock says, so a test of the limit needs no host fast enough to measure first)
INJECT_ENV = "LAB_INJECT"


class Terminated(BaseException):
    """SIGTERM arrived (a time limit enforced from outside): what was measured is written before the exit."""


class TimeLimit(Exception):
    """The run's own `--time-limit` passed (checked between repeats, training steps and points)."""


class RunFailed(Exception):
    """An experiment failed while running; its rows and a status row were written, the traceback printed."""


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
    from core.harness import cancel

    if what == "kill":  # as the kernel's OOM killer or a segfault would: no chance to write anything
        os.kill(os.getpid(), signal.SIGKILL)
    if what == "hang":  # as a kernel that never returns would: only a time limit ends it
        while True:
            time.sleep(0.1)
            cancel.check()
    raise RuntimeError(f"injected failure ({INJECT_ENV}) after {rows} rows")


def why_stopped(err: BaseException, time_limit: float | None) -> str:
    if isinstance(err, TimeLimit):
        return f"the time limit of {time_limit:,.0f} s was reached; the points after these were not measured"
    if isinstance(err, Terminated):
        return "terminated from outside (a time limit?) before it finished"
    if isinstance(err, KeyboardInterrupt):
        return "interrupted before it finished"
    text = " ".join(str(err).split())[:300] or "no message"
    return f"failed with {type(err).__name__}: {text}"


def run_one(
    name: str,
    preset: str,
    device: str | None,
    seed: int | None,
    sets: dict,
    out: str | Path | None,
    quiet: bool = False,
    time_limit: float | None = None,
    out_dir: Path | None = None,
    threads: int | None = None,
    on_progress=None,
) -> pd.DataFrame:
    """Validate, run with rows written as they come (to `out`, or `out_dir`/<experiment>-<type>-<device>.csv),
    print the table and takeaways; any failure writes the rows and a status row, then propagates."""
    from core.experiments import get
    from core.harness import cancel
    from core.harness.device import configure_threads, device_label, environment, measuring, resolve_device
    from core.store.outputs import RowWriter
    from core.store.results import reference_path
    from core.terms.i18n import translator

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
    out_of_time = []  # the 'late' hook's mark: the limit counts as reached

    def late() -> bool:
        return deadline is not None and (bool(out_of_time) or time.monotonic() > deadline)

    def progress(p):
        if writer is not None and p.rows:
            writer.add(p.rows)
        if on_progress is not None:
            on_progress(p)
        if inject == "late" and p.rows:
            out_of_time.append(True)
        elif inject and p.rows:
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
        why = why_stopped(err, time_limit)
        # the rows counted before `stop` adds the status row (an f-string is evaluated left to right)
        kept = f"; {len(writer.rows)} rows kept in {writer.stop(why, env)}" if writer is not None else ""
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


@contextlib.contextmanager
def sigterm_raises():
    """Inside the block SIGTERM raises Terminated (so the rows are written); the handler before is restored after."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return

    def terminate(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one (the reference run's, after the group's) must not
        raise Terminated  # interrupt the writing of the rows

    before = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
