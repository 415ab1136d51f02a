"""A CPU-time bound on a symbolic or numeric step: hitting it means *undecided*, never a hang.

The bound counts the CPU time of this process (``ITIMER_PROF``), not wall-clock time, so a
verdict does not change when other processes load the machine: a document built on a
busy CI runner says what it says on an idle laptop. (The steps bounded here compute; they
do not wait on I/O.)

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
_TIMER, _SIGNAL = signal.ITIMER_PROF, signal.SIGPROF  # process CPU time (user + system)


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

    start = time.process_time()
    outer_remaining, outer_interval = signal.getitimer(_TIMER)
    budget = seconds if not outer_remaining else min(seconds, outer_remaining)
    old = signal.signal(_SIGNAL, _raise)
    old_hook, sys.unraisablehook = sys.unraisablehook, _quiet
    signal.setitimer(_TIMER, budget, REPEAT)
    try:
        yield
    finally:
        signal.setitimer(_TIMER, 0)
        signal.signal(_SIGNAL, old)
        sys.unraisablehook = old_hook
        if outer_remaining:
            left = max(outer_remaining - (time.process_time() - start), 1e-3)
            signal.setitimer(_TIMER, left, outer_interval)
