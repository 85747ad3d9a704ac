"""`python -m core reference`: every experiment's preset, each in a process of its own, each under its own time limit.

A GPU session is rare and short, so nothing it measures may be lost to one failure: each experiment runs as
`python -m core run NAME --time-limit S` in a child that writes rows as it goes and ends with a status row (this
parent writes it for a child killed or dead). A broken CUDA context dies with its process; the parent never
touches the device.
"""

from __future__ import annotations

import datetime as _dt
import functools
import signal
import subprocess
import sys
import time
from pathlib import Path

from core.run_record import Terminated, positive_seconds
from core.store.outputs import add_stop_row, check_out_dir, summary
from core.store.results import REFERENCE_DIR, ROOT
from core.terms import status

GRACE_S = 15  # after SIGTERM, at most this long for the child to write its rows before SIGKILL …
SOFT_MARGIN_S = 15  # … and the child's own limit ends at most this long before the SIGTERM
SHORT_SHARE = 0.1, 0.15  # a short limit's grace and margin: these shares of it (at least 1 s each)


def stops(limit: float) -> tuple[float, float]:
    """(the child's own time limit, when the parent sends SIGTERM), in seconds from the start, for an experiment
    allowed `limit` seconds in all: SIGKILL comes at `limit`, so nothing outlives it."""
    grace = min(GRACE_S, max(1.0, SHORT_SHARE[0] * limit))
    margin = min(SOFT_MARGIN_S, max(1.0, SHORT_SHARE[1] * limit))
    return max(limit - grace - margin, 0.5 * limit), limit - grace


def log_line(path: Path | None, line: str) -> None:
    """`line` to stderr and, timestamped, appended and flushed line by line (a kill keeps them), to `path`."""
    stamped = f"{_dt.datetime.now(_dt.UTC).strftime('%Y-%m-%dT%H:%M:%SZ')} {line}"
    print(f"== {line}", file=sys.stderr, flush=True)
    if path is not None:
        with open(path, "a", encoding="utf-8") as f:
            f.write(stamped + "\n")


def time_limits(values: list[str], names: list[str]) -> dict[str, float | None]:
    """'SECONDS' for every experiment and 'NAME=SECONDS' for one (the later wins): the limit of each in `names`."""
    default, per = None, {}
    for value in values:
        name, _, seconds = value.rpartition("=")
        if name and name not in names:
            raise ValueError(f"--time-limit: {name!r} is not among the experiments run ({', '.join(names)})")
        if name:
            per[name] = positive_seconds("--time-limit", seconds)
        else:
            default = positive_seconds("--time-limit", seconds)
    return {n: per.get(n, default) for n in names}


def cli(args) -> int:
    from core.experiments import EXPERIMENTS
    from core.harness.device import resolve_device

    names = args.only or list(EXPERIMENTS)
    for name in names:
        if name not in EXPERIMENTS:
            raise ValueError(f"--only: {name!r} is not one of {', '.join(EXPERIMENTS)}")
        EXPERIMENTS[name].config(args.preset)  # an unknown preset is bad input now, not a failure later
    if len(set(names)) != len(names):
        raise ValueError("--only: an experiment is named twice")
    resolve_device(args.device)  # absent: bad input (this only asks whether the device exists)
    limits = time_limits(args.time_limit, names)
    out_dir = check_out_dir("--out-dir", args.out_dir or REFERENCE_DIR)
    log_path = Path(args.log) if args.log else (out_dir / "reference.log" if args.out_dir else None)
    if log_path is not None:
        if log_path.is_dir():
            raise ValueError(f"--log: {str(log_path)!r} is a folder; give a file name")
        check_out_dir("--log", log_path.parent)
    log = functools.partial(log_line, log_path)
    deadline = _deadline(args.deadline)
    done, outcomes = 0, []
    for i, name in enumerate(names):
        limit = limits[name]
        if deadline is not None:  # this one may use what the ones before left, never what the later ones are given
            promised = sum(limits[later] or 0 for later in names[i + 1 :])
            limit = deadline - time.time() - promised  # wall clock on purpose: the deadline is the script's
            if limit < MIN_TURN_S:
                note = f"not started: the session's time ran out ({max(limit, 0):,.0f} s left for it)"
                where = add_stop_row(out_dir / f"{name}-{args.device}-not-started.csv", note, {"device": args.device})
                log(f"NOT STARTED {name}: {note}; status row in {where}")
                outcomes.append((name, "NOT STARTED", 0.0, limit, 1, {status.STOPPED: 1}))
                continue
        try:
            ok, outcome = run_isolated(name, args.preset, args.device, out_dir, limit, log)
            done += ok
            outcomes.append(outcome)
        except Terminated:
            log(f"stopped from outside during {name}: the experiments after it were not started")
            raise
        except Exception as err:  # noqa: BLE001 - the reference's own trouble is logged; the next experiment runs
            note = f"the reference run failed ({type(err).__name__}: {' '.join(str(err).split())[:200]})"
            try:
                where = add_stop_row(out_dir / f"{name}-{args.device}-failed.csv", note, {"device": args.device})
            except OSError:
                where = "no file (nothing could be written)"
            log(f"FAILED {name}: {note}; status row in {where}")
            outcomes.append((name, "FAILED", 0.0, limit, 1, {status.STOPPED: 1}))
    for name, outcome, seconds, limit, rows, counts in outcomes:
        allowed = f" of {limit:,.0f} s" if limit else ""
        counted = ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"
        log(f"summary {name}: {outcome}, {seconds:,.0f} s{allowed}, {rows} rows ({counted})")
    log(f"finished: {done} of {len(names)} experiments complete, results in {out_dir}")
    return 0 if done == len(names) else 1


MIN_TURN_S = 5.0  # under this, an experiment cannot even import torch: it is not started


def _deadline(value) -> float | None:
    """--deadline: the whole session's end, in seconds since the epoch (the script's start plus its plan)."""
    if value in (None, ""):
        return None
    try:
        deadline = float(value)
    except ValueError:
        raise ValueError(f"--deadline: {value!r} is not a time in seconds since the epoch") from None
    if not time.time() - 86400 < deadline < time.time() + 86400 * 30:
        raise ValueError(f"--deadline: {value!r} is not within a day before and 30 days after now")
    return deadline


def run_isolated(name: str, preset: str, device: str, out_dir: Path, limit: float | None, log) -> tuple:
    """Run one experiment in a child process for at most `limit` seconds in all: (True if it finished normally,
    (name, outcome, seconds, limit, rows, count per status))."""
    cmd = [sys.executable, "-m", "core", "run", name, "--preset", preset, "--device", device, "--out-dir", str(out_dir)]
    own, term = stops(limit) if limit is not None else (None, None)
    if own is not None:
        cmd += ["--time-limit", f"{own:.1f}"]
    log(f"start {name}: preset {preset}, device {device}" + (f", time limit {limit:,.0f} s" if limit else ""))
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT)
    killed, outer, at_limit = None, None, False
    try:
        rc = proc.wait(timeout=term)
    except (subprocess.TimeoutExpired, Terminated) as stop:  # its limit, or this reference run was told to stop
        outer = stop if isinstance(stop, Terminated) else None
        at_limit = outer is None
        proc.terminate()  # the child writes its rows and a status row on SIGTERM
        grace = GRACE_S if limit is None or outer else max(limit - (time.monotonic() - t0), 0.5)
        try:
            rc = proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            killed = f"killed: still running {grace:,.0f} s after " + (
                "the reference run was stopped" if outer else f"its SIGTERM, at its time limit of {limit:,.0f} s"
            )
    seconds = time.monotonic() - t0
    path = _written(out_dir, name, t0)
    rows, counts, last = summary(path) if path is not None else (0, {}, {})
    if rc != 0 and last.get("status") != status.STOPPED:  # it could not say why itself
        path = add_stop_row(
            path or out_dir / f"{name}-{device}-failed.csv", killed or _exit_note(rc), {"device": device}
        )
        rows, counts, last = summary(path)
    # stopped here at its limit: the outcome is the limit whatever the exit code (SIGTERM may beat its own 124)
    outcome = "done" if rc == 0 else "TIME LIMIT" if rc in (124, 143) or at_limit else "FAILED"
    counted = ", ".join(f"{k} {v}" for k, v in counts.items())
    log(
        f"{outcome} {name}: exit {rc} after {seconds:,.0f} s, {rows} rows ({counted}) in {path}"
        + (f"; {last.get('note', '')}" if rc != 0 else "")
    )
    if outer is not None:
        raise outer  # the experiments after this one are not started
    return rc == 0, (name, outcome, seconds, limit, rows, counts)


def _written(out_dir: Path, name: str, since: float) -> Path | None:
    """The CSV this run of `name` wrote (the newest of its files changed since it started), if any."""
    found = [p for p in out_dir.glob(f"{name}-*.csv") if p.stat().st_mtime >= since - 1]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def _exit_note(rc: int) -> str:
    if rc < 0:
        sig = signal.Signals(-rc).name
        return f"killed by {sig} before it could write a status row" + (
            " (out of host memory?)" if sig == "SIGKILL" else ""
        )
    return f"exited with status {rc} before it could write a status row (bad input? see the session log)"
