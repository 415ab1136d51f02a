"""A hard wall-clock bound for the numeric searches of the claim provers.

Unlike :func:`derive.prove.timeout.time_limit`, hitting it raises :class:`Deadline`, a
``BaseException``: neither Hypothesis (which treats an ``Exception`` in a test as a failure
to shrink, re-running examples with no alarm left) nor a broad ``except Exception`` can
swallow it. Not to be nested with ``time_limit`` (both use SIGALRM).
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager

__all__ = ["Deadline", "bounded_prove_zero", "hard_limit"]


class Deadline(BaseException):
    pass


REPEAT = 0.05  # seconds between repeated alarms once the bound is hit


@contextmanager
def hard_limit(seconds: float):
    """Raise :class:`Deadline` after ``seconds``, and again every REPEAT seconds until the
    block is left: an exception raised inside ``__del__`` or a weakref callback is dropped
    by Python, so one alarm is not enough."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise Deadline(f"time limit of {seconds:g} s hit")

    def _quiet(unraisable):  # a dropped Deadline is expected; print nothing for it
        if not isinstance(unraisable.exc_value, Deadline):
            old_hook(unraisable)

    old = signal.signal(signal.SIGALRM, _raise)
    old_hook, sys.unraisablehook = sys.unraisablehook, _quiet
    signal.setitimer(signal.ITIMER_REAL, seconds, REPEAT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        sys.unraisablehook = old_hook


def bounded_prove_zero(expr, cfg):
    """:func:`derive.prove.equality.prove_zero` under a hard bound.

    The engine's own bound raises an ``Exception``, which a ``try/except Exception``
    somewhere inside SymPy may swallow (then nothing stops the rewrite); here the engine's
    bound is switched off and this module's ``BaseException`` bound is used instead.
    """
    from derive.prove.equality import prove_zero

    try:
        with hard_limit(cfg.time_limit):
            return prove_zero(expr, cfg.merge(time_limit=0))
    except Deadline:
        return False, f"time limit of {cfg.time_limit:g} s hit", None
    except Exception as exc:  # noqa: BLE001 - e.g. StopIteration deep inside SymPy
        return False, f"the simplifier failed: {type(exc).__name__}", None
