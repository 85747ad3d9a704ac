"""The server's live runs: each in a worker process (core.server.worker), one measuring at a time for the whole server.

A page submits a job (an experiment and its config) and follows it: its place and wait while queued, then the rows
as the worker measures them in its own main thread. Stop ends the worker at once; a worker that dies leaves a job
saying so, with its rows kept. On Linux workers fork from a warm zygote (core.server.zygote), elsewhere one spare
worker waits warm. Torch-free and streamlit-free: ui.live draws it, the tests drive it directly.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from core.server.worker import decode, encode
from core.server.zygote import Forked, Zygote

ROOT = Path(__file__).resolve().parents[2]
WORKER = (sys.executable, "-m", "core", "worker")
GRACE_S = 0.5  # after SIGTERM, this long for the worker to end by itself before SIGKILL
TICKET_TTL_S = 15.0  # a waiting job whose page stopped looking at it (a closed tab) leaves the queue
PACE_FROM = 0.25  # the share of a run done before its pace says how long the rest will take
DEFAULT_RUN_S = 30.0  # the wait estimate for an experiment this server has not run yet (a quick preset's length)
FORKS = sys.platform == "linux"  # fork after importing torch: safe on Linux, not with macOS's frameworks
WAITING, RUNNING = "queued", "running"  # then it ends: done, stopped, cancelled, failed, bad_input or died


@dataclasses.dataclass(eq=False)
class Job:
    """One live run of one session's page: its place, its progress, its rows (appended as they arrive)."""

    id: int
    owner: str
    experiment: str
    config: dict
    threads: int | None
    state: str = WAITING
    rows: list = dataclasses.field(default_factory=list)
    done: int = 0
    total: int = 0
    kept: int = 0  # the work whose rows have arrived: what a Stop message counts
    message: str = ""
    error: str | None = None
    pid: int | None = None
    submitted: float = 0.0
    started: float | None = None
    in_hand: float | None = None  # when the worker said it had the job (the worker's own start is behind it)
    ended: float | None = None
    seen: float = 0.0
    stop_asked: bool = False
    settle_s: float = 0.0
    moved: float | None = None  # when `done` last grew

    @property
    def active(self) -> bool:
        return self.state in (WAITING, RUNNING)


class JobQueue:
    """Workers for one server process: a queue, at most one measuring, at most one spare waiting warm."""

    def __init__(self, command=WORKER, spare: bool = True, clock=time.monotonic, zygote: bool | None = None):
        """`zygote`: fork workers from a warm zygote (default: the real worker on Linux); else spawn each, one spare
        kept warm when `spare`."""
        self._command, self._clock = tuple(command), clock
        self._forks = FORKS and command == WORKER if zygote is None else zygote
        self._zygote: Zygote | None = None
        self._keep_spare = spare and not self._forks
        self._lock = threading.RLock()
        self._queue: list[Job] = []
        self._current: Job | None = None
        self._procs: dict[int, subprocess.Popen] = {}
        self._spare: subprocess.Popen | None = None
        self._ids = itertools.count(1)
        self._took: dict[str, float] = {}  # experiment → seconds its last run here took (the wait estimate)

    # --- what a page calls -------------------------------------------------------------------------------------

    def submit(
        self, owner: str, experiment: str, config: dict, threads: int | None = None, settle_s: float = 0.0
    ) -> Job:
        """Queue a run; `settle_s`: the worker waits this long before measuring (the page redraws itself)."""
        now = self._clock()
        job = Job(next(self._ids), owner, experiment, dict(config), threads, submitted=now, seen=now, settle_s=settle_s)
        with self._lock:
            self._queue.append(job)
            self._advance()
        return job

    def touch(self, job: Job) -> None:
        """The page still looks at `job` (a waiting job not looked at for TICKET_TTL_S leaves the queue)."""
        job.seen = self._clock()
        with self._lock:
            self._advance()

    def stop(self, job: Job) -> None:
        """Stop `job`: a waiting one leaves the queue; a running one's worker is ended now (SIGTERM, SIGKILL after
        GRACE_S). The rows it sent stay in `job.rows`."""
        with self._lock:
            job.stop_asked = True
            if job.state == WAITING:
                self._queue.remove(job)
                self._end(job, "cancelled")
                self._advance()
                return
            proc = self._procs.get(job.id)
        if proc is not None:
            _terminate(proc)

    def position(self, job: Job) -> tuple[int, float]:
        """(1-based place among the waiting jobs, estimated seconds until it starts) for a waiting job."""
        with self._lock:
            if job not in self._queue:
                return 0, 0.0
            ahead = self._queue[: self._queue.index(job)]
            wait = self._left(self._current) if self._current is not None else 0.0
            wait += sum(self._took.get(j.experiment, DEFAULT_RUN_S) for j in ahead)
            return len(ahead) + 1, wait

    def left(self, job: Job) -> float | None:
        """Estimated seconds until a running `job` ends, counting down between its points: from its pace up to its
        last point once PACE_FROM of it is done (an experiment's first points may cost more or less than its last)
        and, where this server ran the experiment before, no less than that run's time left; None before anything
        can be estimated."""
        with self._lock:
            if job.state != RUNNING or job.started is None:
                return None
            now = self._clock()
            took = self._took.get(job.experiment)
            before = took - (now - job.started) if took is not None else None
            if not (job.total and job.moved and job.done >= PACE_FROM * job.total):
                return before
            pace = (job.moved - job.started) * job.total / job.done - (now - job.started)
            return max(pace, before if before is not None else pace)

    def prepare(self) -> None:
        """Start the zygote or spare worker now if nothing measures: the import runs while the form is read."""
        with self._lock:
            if self._current is None:
                self._ensure_spare()

    def zygote_ready(self) -> bool:
        """Whether a Run now would be a fork of a ready zygote (True where workers are spawned: there is none)."""
        return self._zygote is None or self._zygote.ready()

    def shutdown(self) -> None:
        with self._lock:
            for job in list(self._queue):
                self.stop(job)
            procs = list(self._procs.values()) + ([self._spare] if self._spare is not None else [])
            self._spare = None
        for proc in procs:
            _terminate(proc)
        if self._zygote is not None:
            self._zygote.close()

    def waiting(self) -> int:
        with self._lock:
            return len(self._queue)

    # --- inside ------------------------------------------------------------------------------------------------

    def _left(self, job: Job) -> float:
        elapsed = self._clock() - (job.started or self._clock())
        if job.done and job.total:
            return max(0.0, elapsed * (job.total - job.done) / job.done)
        return max(0.0, self._took.get(job.experiment, DEFAULT_RUN_S) - elapsed)

    def _advance(self) -> None:
        """Under the lock: drop waiting jobs nobody looks at, then start the next one if none measures."""
        now = self._clock()
        for job in [j for j in self._queue if now - j.seen > TICKET_TTL_S]:
            self._queue.remove(job)
            self._end(job, "cancelled")
        if self._current is None and self._queue:
            self._start(self._queue.pop(0))

    def _spawn(self) -> subprocess.Popen | Forked:
        log = tempfile.TemporaryFile()  # noqa: SIM115 - the worker's stderr for its whole life (a traceback)
        if self._zygote is not None and self._zygote.ready():
            return self._zygote.fork(log)
        return subprocess.Popen(
            self._command,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            bufsize=1,
            start_new_session=True,
        )

    def _ensure_spare(self) -> None:
        """Under the lock, nothing measuring: the zygote up (started again if it died), or a spare worker waiting."""
        if self._forks and (self._zygote is None or not self._zygote.alive()):
            self._zygote = Zygote(self._command)
        elif self._keep_spare and (self._spare is None or self._spare.poll() is not None):
            self._spare = self._spawn()

    def _start(self, job: Job) -> None:
        proc, self._spare = self._spare, None
        if proc is None or proc.poll() is not None:
            proc = self._spawn()
        job.state, job.started, job.pid = RUNNING, self._clock(), proc.pid
        self._current, self._procs[job.id] = job, proc
        try:
            proc.stdin.write(
                encode({k: getattr(job, k) for k in ("experiment", "config", "threads", "settle_s")}) + "\n"
            )
            proc.stdin.flush()
        except OSError:  # it died before it could take the job: the reader says how
            pass
        threading.Thread(target=self._follow, args=(job, proc), name=f"job-{job.id}", daemon=True).start()

    def _follow(self, job: Job, proc: subprocess.Popen) -> None:
        """The job's reader: its rows as they arrive, then its end (a worker that ends without saying so died)."""
        said = None
        try:
            for line in proc.stdout:
                try:
                    msg = decode(line)
                except ValueError:
                    continue  # not the protocol (a library printing to stdout): not a row
                kind = msg.get("type")
                if kind == "progress":
                    with self._lock:
                        if msg.get("done", 0) != job.done:
                            job.moved = self._clock()
                        job.rows.extend(_compact(row) for row in msg.get("rows") or [])
                        for key, default in (("done", 0), ("total", 0), ("message", "")):
                            setattr(job, key, msg.get(key, default))
                        if msg.get("rows"):
                            job.kept = job.done
                elif kind == "started":
                    job.in_hand = self._clock()
                elif kind in ("done", "failed", "bad_input"):
                    said = msg
        finally:
            rc = proc.wait()
            with self._lock:
                if job.stop_asked:
                    self._end(job, "stopped")
                elif said is not None and said["type"] == "done":
                    self._end(job, "done")
                    self._took[job.experiment] = self._clock() - job.started
                elif said is not None:
                    self._end(job, said["type"], said.get("error") or "")
                else:
                    self._end(job, "died", _death(rc))
                self._procs.pop(job.id, None)
                if self._current is job:
                    self._current = None
                self._advance()
                if self._current is None:
                    self._ensure_spare()  # after the measurement, never beside it

    def _end(self, job: Job, state: str, error: str | None = None) -> None:
        job.state, job.ended = state, self._clock()
        if error is not None:
            job.error = error


def _compact(row: dict) -> dict:
    """A row as the server keeps it: keys and short text values shared with every other row's (sys.intern).
    Each protocol line is decoded alone, so otherwise every row holds its own column names (docs/BENCHMARKS.md)."""
    return {sys.intern(k): sys.intern(v) if isinstance(v, str) and len(v) < 80 else v for k, v in row.items()}


def _terminate(proc: subprocess.Popen) -> None:
    """SIGTERM now (the worker's run stops where it is), SIGKILL after GRACE_S if it is still there."""
    if proc.poll() is not None:
        return
    try:
        proc.terminate()
    except OSError:
        return

    def kill_later():
        try:
            proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                proc.kill()

    threading.Thread(target=kill_later, daemon=True).start()


def _death(rc: int) -> str:
    """Why a worker ended without a word: its exit status as a person reads it."""
    if rc < 0:
        name = signal.Signals(-rc).name
        return f"{name}" + (" (out of memory, or killed from outside)" if name == "SIGKILL" else "")
    return f"exit status {rc}"
