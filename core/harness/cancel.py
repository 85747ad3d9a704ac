"""Stopping a run in the middle of a point: a check that the harness makes between timed repeats and training steps.

A page's Stop only sets a flag, and one point can take minutes, so the timing and training loops call `check()`
between repeats and steps, outside the timed region. `stop_when(...)` sets the condition per context, so two
sessions' runs never see each other's Stop.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable

_should_stop: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar("should_stop", default=None)


class Stopped(Exception):
    """Raised by `check()` once the run's stop condition holds; what was measured before it is kept by the caller."""


@contextlib.contextmanager
def stop_when(condition: Callable[[], bool]):
    """Inside the block, `check()` raises `Stopped` as soon as `condition()` is true."""
    token = _should_stop.set(condition)
    try:
        yield
    finally:
        _should_stop.reset(token)


def check() -> None:
    """Raise `Stopped` if the current run was asked to stop; free when no condition is set (the CLI)."""
    condition = _should_stop.get()
    if condition is not None and condition():
        raise Stopped
