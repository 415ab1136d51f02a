"""A hard wall-clock bound for the numeric searches of the claim provers.

Unlike :func:`derive.prove.timeout.time_limit`, hitting it raises :class:`Deadline`, a
``BaseException``: neither Hypothesis (which treats an ``Exception`` in a test as a failure
to shrink, re-running examples with no alarm left) nor a broad ``except Exception`` can
swallow it. Not to be nested with ``time_limit`` (both use SIGALRM).
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

__all__ = ["Deadline", "hard_limit"]


class Deadline(BaseException):
    pass


@contextmanager
def hard_limit(seconds: float):
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise Deadline(f"time limit of {seconds:g} s hit")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
