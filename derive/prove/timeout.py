"""A wall-clock bound on a symbolic or numeric step: hitting it means *undecided*, never a hang.

:class:`TimeLimit` is a ``BaseException``: neither a broad ``except Exception`` inside SymPy
nor Hypothesis (which treats an ``Exception`` in a test as a failure to shrink) can swallow
it. Once the bound is hit the alarm repeats every ``REPEAT`` seconds until the block is
left, because an exception raised inside ``__del__`` or a weakref callback is dropped by
Python. Bounds nest: an inner bound never outlives the outer one, and the outer bound is
restored, less the time spent, when the inner block ends.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from contextlib import contextmanager

__all__ = ["TimeLimit", "time_limit"]

REPEAT = 0.05  # seconds between repeated alarms once a bound is hit


class TimeLimit(BaseException):
    """A time bound was hit."""


@contextmanager
def time_limit(seconds: float):
    """Raise :class:`TimeLimit` after ``seconds`` (main thread only; elsewhere unbounded)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise TimeLimit(f"time limit of {seconds:g} s hit")

    def _quiet(unraisable):  # a dropped TimeLimit is expected; print nothing for it
        if not isinstance(unraisable.exc_value, TimeLimit):
            old_hook(unraisable)

    start = time.monotonic()
    outer_remaining, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    budget = seconds if not outer_remaining else min(seconds, outer_remaining)
    old = signal.signal(signal.SIGALRM, _raise)
    old_hook, sys.unraisablehook = sys.unraisablehook, _quiet
    signal.setitimer(signal.ITIMER_REAL, budget, REPEAT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        sys.unraisablehook = old_hook
        if outer_remaining:
            left = max(outer_remaining - (time.monotonic() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)
