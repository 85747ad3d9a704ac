"""The zygote: one warm process that imports torch and every experiment once, and forks each live-run worker.

A spawned worker pays for importing torch before it can take its job (scripts/bench_worker.py times it); on Linux
the server keeps one `python -m core worker --zygote` (Android's and Chromium's name) and forks each worker from it.
The zygote keeps one torch thread and touches no accelerator, so a fork inherits no thread pool or CUDA context,
and runs core.server.worker.serve in its main thread. Not on macOS, whose frameworks are unsafe to fork.
"""

from __future__ import annotations

import itertools
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Zygote:
    """The server's side of one zygote process (`serve_forks`): starts it, asks it for workers, hears when each ends."""

    def __init__(self, command):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self._proc = subprocess.Popen(
                (*command, "--zygote"),
                cwd=ROOT,
                stdin=theirs,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._sock, self._ready, self._gone = ours, False, False
        self._changed = threading.Condition()
        self._asked = itertools.count(1)
        self._pids: dict[int, int] = {}  # request → the pid of the worker the zygote forked for it
        self._ended: dict[int, int] = {}  # worker pid → its exit status (read by every thread that waits for it)
        threading.Thread(target=self._listen, name="zygote", daemon=True).start()

    def alive(self) -> bool:
        return not self._gone and self._proc.poll() is None

    def ready(self) -> bool:
        return self._ready and self.alive()

    def fork(self, stderr) -> Forked:
        """A fresh worker, its stdin and stdout piped to this server and its stderr to the file `stderr`."""
        job_r, job_w = os.pipe()
        out_r, out_w = os.pipe()
        asked = next(self._asked)
        with self._changed:
            try:
                socket.send_fds(self._sock, [f"fork {asked}".encode()], [job_r, out_w, stderr.fileno()])
            except OSError:
                pass  # the zygote is gone: a worker that never started, whose job 'died'
            finally:
                os.close(job_r)
                os.close(out_w)
            self._changed.wait_for(lambda: asked in self._pids or self._gone, timeout=10)
            pid = self._pids.pop(asked, -1)
        stdin = os.fdopen(job_w, "w", buffering=1, encoding="utf-8")
        return Forked(pid, self, stdin, os.fdopen(out_r, "r", encoding="utf-8"), stderr)

    def status(self, pid: int, timeout: float | None = None) -> int | None:
        """The worker's exit status once the zygote has reaped it; 1 if the zygote is gone first (its workers'
        parent watch ends each with 1)."""
        with self._changed:
            self._changed.wait_for(lambda: pid in self._ended or self._gone, timeout=timeout)
            return self._ended.get(pid, 1 if self._gone else None)

    def close(self) -> None:
        with self._changed:
            self._gone = True
            self._changed.notify_all()
        self._sock.close()  # its end: it leaves the loop, and each worker's parent watch ends that worker
        self._proc.terminate()
        try:
            self._proc.wait(5)  # reaped, not left a zombie of this server
        except subprocess.TimeoutExpired:
            self._proc.kill()

    def _listen(self) -> None:
        try:
            while message := self._sock.recv(64).decode():
                kind, *numbers = message.split()
                with self._changed:
                    self._ready = self._ready or kind == "ready"
                    if kind == "pid":  # a pid used again forgets the ended worker that had it
                        self._pids[int(numbers[0])] = int(numbers[1])
                        self._ended.pop(int(numbers[1]), None)
                    elif kind == "exit":
                        self._ended[int(numbers[0])] = int(numbers[1])
                    self._changed.notify_all()
        except OSError:
            pass
        with self._changed:
            self._gone = True
            self._changed.notify_all()


class Forked:
    """A worker forked by the zygote, as subprocess.Popen's surface that JobQueue uses."""

    def __init__(self, pid: int, zygote: Zygote, stdin, stdout, stderr):
        self.pid, self._zygote, self.stdin, self.stdout, self._stderr = pid, zygote, stdin, stdout, stderr
        self.returncode: int | None = None if pid > 0 else 1

    def poll(self) -> int | None:
        return self.wait(0) if self.returncode is None else self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._zygote.status(self.pid, timeout)
        if self.returncode is None and timeout != 0:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def serve_forks(control: socket.socket) -> int:
    """The warm parent of every worker: import, then fork one fresh worker per request until the server goes away.
    Over a SOCK_SEQPACKET socket: `fork ID` with three fds in, `pid ID PID` and `exit PID STATUS` out."""
    import torch

    # one torch thread: a fork of an OpenMP pool hangs at its first parallel op; each worker sets its own count
    torch.set_num_threads(1)
    import core.experiments  # noqa: F401 - what every worker needs, imported once
    from core.server.worker import serve

    control.send(b"ready")
    children: set[int] = set()
    while True:
        asked, _, _ = select.select([control], [], [], 0.2)
        for pid in list(children):
            done, wait_status = os.waitpid(pid, os.WNOHANG)
            if done:
                children.discard(pid)
                control.send(f"exit {pid} {os.waitstatus_to_exitcode(wait_status)}".encode())
        if not asked:
            continue
        message, fds, _, _ = socket.recv_fds(control, 64, 3)
        if not message:
            return 0  # the server is gone; each worker's parent watch ends it within a second
        pid = os.fork()
        if pid == 0:  # the worker: its own session (Stop signals its group), the server's pipes as 0, 1, 2
            control.close()
            os.setsid()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
                os.close(fd)
            code = 1
            try:
                code = serve()
            except BaseException:  # noqa: BLE001 - what a spawned worker's interpreter would print on its way out
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        for fd in fds:
            os.close(fd)
        children.add(pid)
        control.send(f"pid {message.decode().split()[-1]} {pid}".encode())
