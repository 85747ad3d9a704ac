"""`python -m core worker`: a page's live run, in a process of its own, through the command line's own path.

Inside the web server a run would share its threads, its heap and its life; a worker measures in its own main
thread, as `python -m core run` does, and can be stopped at once or die alone.

The protocol, one JSON object per line:
- the worker imports the experiments and says `{"type": "ready", "pid": …}`;
- the server sends one job: `{"experiment": NAME, "config": {…}, "threads": N, "settle_s": S}`;
- the worker says `{"type": "started"}`, `{"type": "progress", "done", "total", "message", "rows": [...]}` per chunk,
  then `{"type": "done"}`, `{"type": "bad_input", "error": …}` or `{"type": "failed", "error": …}`.
SIGTERM ends the run at once; what it prints for a person goes to stderr. The worker ends when its server does.
"""

from __future__ import annotations

import json
import os
import sys


def _die_with_parent(every_s: float = 1.0) -> None:
    """End this worker if its server goes away mid-run (a waiting worker sees its stdin close).
    Not PR_SET_PDEATHSIG: that fires when the starting *thread* ends, and a page's thread ends every rerun."""
    import threading
    import time

    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _plain(value):
    """A value of a row as JSON holds it (numpy and torch scalars as Python numbers)."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    return str(value)


def encode(message: dict) -> str:
    """One protocol line; NaN and infinities stay numbers (Python's json reads them back)."""
    return json.dumps(message, default=_plain, allow_nan=True)


def decode(line: str) -> dict:
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a protocol line is a JSON object")  # noqa: TRY004 - bad input, like bad JSON
    return message


def serve(stdin=None, stdout=None) -> int:
    """Wait for one job, run it, report; the exit status is 0 whatever the run did (the messages say it)."""
    from core.run_record import RunFailed, Terminated, run_one, sigterm_raises

    stdin = stdin or sys.stdin
    proto = stdout or os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    sys.stdout = sys.stderr  # what the run prints for a person is not the protocol

    def send(message: dict) -> None:
        proto.write(encode(message) + "\n")
        proto.flush()

    _die_with_parent()
    import core.experiments  # noqa: F401 - torch and every experiment, before the job comes: a spare waits warm

    send({"type": "ready", "pid": os.getpid()})
    line = stdin.readline()
    if not line.strip():
        return 0  # the server went away, or let its spare go
    try:
        job = decode(line)
        name, config = str(job["experiment"]), dict(job["config"])
        threads = int(job.get("threads") or 0) or None
        settle_s = min(5.0, max(0.0, float(job.get("settle_s") or 0)))
    except (ValueError, KeyError, TypeError) as err:
        send({"type": "bad_input", "error": f"not a job: {err}"})
        return 0

    send({"type": "started"})  # the job is in hand: what a page waits for beyond this is the run itself
    if settle_s:  # the browser redraws the page for the rerun its Run began: not on the cores of the first points
        import time

        time.sleep(settle_s)

    def progress(p) -> None:
        send({"type": "progress", "done": p.done, "total": p.total, "message": p.message, "rows": list(p.rows)})

    try:
        with sigterm_raises():
            run_one(name, "quick", None, None, config, None, quiet=True, threads=threads, on_progress=progress)
    except ValueError as err:  # the config was refused before anything ran
        send({"type": "bad_input", "error": str(err)})
    except Terminated:
        send({"type": "failed", "error": "stopped"})
    except RunFailed as err:
        send({"type": "failed", "error": str(err)})
    else:
        send({"type": "done"})
    return 0
