"""A wall-clock bound on a symbolic step; hitting it means *undecided*, never a hang."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

__all__ = ["TimeLimit", "time_limit"]


class TimeLimit(Exception):
    pass


@contextmanager
def time_limit(seconds: float):
    """Raise :class:`TimeLimit` after ``seconds`` (main thread only; elsewhere unbounded)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise TimeLimit(f"time limit of {seconds:g} s hit")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
