"""Equation checks computed in two worker processes while a document goes on building.

Proving a step and cross-checking it are pure computations on its expressions. While the
build runs a document's ``document()`` inside :func:`deferring`, and the document has spare
cores (it is not built beside other documents, the process may use two cores, and processes
can be forked), :meth:`~derive.document.api.Document.equation` and
:meth:`~derive.document.api.Document.chain` hand each step to a pool of two forked workers
and return at once. The step's verdicts and check result are then placeholders of their
own types, filled in when the step is *settled*:

* reading any field of a placeholder settles its step, after every pending step added
  before it, so nothing ever sees an unchecked result (not a proof module, not the
  renderer), and the first failing step in document order is the one raised;
* :meth:`~derive.document.api.Document.finish`, which the build calls after ``document()``,
  settles every step, and the end of :func:`deferring` shuts the pool down.

A step whose worker does not deliver a result, for whatever reason (the pool could not
start or died, the step failed), is computed again in this process when it is settled, where
it succeeds or raises :class:`~derive.errors.StepFailed` exactly as it would have when added;
a step whose expressions cannot be sent to a worker unchanged (they do not pickle, or
SymPy rebuilds them into another expression) is computed at once. Outside
:func:`deferring` (tests, doctests, library use) nothing is deferred:

    >>> active() is None
    True
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import pickle
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor

from derive import shared
from derive.progress import note

__all__ = ["Deferral", "Step", "active", "deferring", "fill", "placeholder", "settle_all"]

WORKERS = 2
_ACTIVE: list = []  # the Deferral in effect, if any (one per process: see Deferral.owner)


def _spare_cores() -> bool:
    """A document alone on a machine where it may use several cores, and fork is available."""
    return (not shared.in_parallel_build() and shared.cores() >= 2
            and "fork" in multiprocessing.get_all_start_methods())


@contextlib.contextmanager
def deferring():
    """Within: documents check their equations in worker processes when they have spare cores.

    On the way out every step still pending is settled (a failing one raises, also when the
    body raised: an earlier failing step is where the document would have stopped), then the
    pool is shut down. A nested use shares the outer one.
    """
    if active() is not None or not _spare_cores():
        yield None
        return
    deferral = Deferral()
    _ACTIVE.append(deferral)
    try:
        yield deferral
        deferral.settle_all()
    except Exception:
        deferral.settle_all()  # an earlier failing step is what the document would have raised
        raise
    finally:
        _ACTIVE.remove(deferral)
        deferral.close()


def active() -> Deferral | None:
    """The deferral in effect in this process (never one inherited by a forked worker)."""
    return next((d for d in _ACTIVE if d.owner == os.getpid()), None)


class Deferral:
    """A lazily started pool of :data:`WORKERS` forked processes and the steps sent to it."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.pool: ProcessPoolExecutor | None = None
        self.broken = False  # the pool could not start or died: compute in this process
        self.queues: list[list] = []  # each document's list of pending steps

    def submit(self, queue: list, what: tuple[str, str], fn: Callable, *args) -> Future | None:
        """``fn(*args)`` in a worker, or None: compute it here (no pool, or args cannot travel).

        ``what`` is (document, step) for the progress note the worker prints.
        """
        if self.broken:
            return None
        try:
            payload = pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL)
            # SymPy rebuilds an expression from its arguments, evaluating: an unevaluated
            # product such as exp(a)·exp(b) would arrive as exp(a + b), a different statement
            if pickle.loads(payload) != (fn, args):
                return None
        except Exception:  # noqa: BLE001 - e.g. a lambda inside an expression: not sent
            return None
        try:
            if self.pool is None:  # at the first deferred step: the workers inherit warm caches
                self.pool = ProcessPoolExecutor(max_workers=WORKERS, mp_context=multiprocessing.get_context("fork"))
                # Frozen, the objects the workers inherit are left out of their garbage collections,
                # which would otherwise visit (and so copy) every page of this process's heap.
                gc.freeze()
                try:
                    future = self.pool.submit(_run, what, payload)  # forks the workers
                finally:
                    gc.unfreeze()
            else:
                future = self.pool.submit(_run, what, payload)
        except (OSError, ValueError, RuntimeError, ImportError):  # BrokenProcessPool is a RuntimeError
            self.broken = True
            return None
        if not any(q is queue for q in self.queues):
            self.queues.append(queue)
        return future

    def settle_all(self) -> None:
        for queue in self.queues:
            settle_all(queue)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def _run(what: tuple[str, str], payload: bytes):
    """In a worker: one step's computation."""
    note(what[0], f"checking {what[1]} (worker process)")
    fn, args = pickle.loads(payload)
    return fn(*args)


class Step:
    """A step computed in a worker: ``future`` delivers what ``compute()`` returns, and
    ``fill(outcome)`` (set once its placeholders exist) puts it in the document."""

    def __init__(self, queue: list, future: Future, compute: Callable[[], object]) -> None:
        self.queue, self.future, self.compute = queue, future, compute
        self.fill: Callable[[object], None] = lambda outcome: None
        self.done = False
        self.error: Exception | None = None
        queue.append(self)

    def settle(self) -> None:
        """Settle this step and, first, every pending step added before it."""
        while not self.done:
            self.queue[0]._resolve()
            self.queue.pop(0)

    def _resolve(self) -> None:
        if self.error is not None:
            raise self.error
        try:
            outcome = self.future.result()
        except Exception:  # noqa: BLE001 - any failure in or of the worker: compute it here
            outcome = None
        if outcome is None:
            try:
                outcome = self.compute()  # raises StepFailed as the step would have when added
            except Exception as exc:
                self.error = exc
                raise
        self.fill(outcome)
        self.done = True


def settle_all(queue: list) -> None:
    """Settle every pending step of ``queue`` in order; the first failing one raises."""
    if queue:
        queue[-1].settle()


class _Placeholder:
    """Mixin of a placeholder: reading a field it does not have yet settles its step."""

    def __getattr__(self, attr: str):
        step = self.__dict__.get("_pending_step")
        if step is None or attr.startswith("__"):
            raise AttributeError(attr)
        step.settle()
        return getattr(self, attr)


_TYPES: dict[type, type] = {}


def placeholder(cls: type, step: Step, **known):
    """An empty ``cls`` (of a subclass of it until filled) whose fields settle ``step``;
    ``known`` fields are set already (a check's name: checks can be filtered without waiting)."""
    kind = _TYPES.get(cls)
    if kind is None:
        kind = _TYPES[cls] = type(f"Pending{cls.__name__}", (_Placeholder, cls), {})
    obj = object.__new__(kind)
    obj.__dict__.update(known)
    obj.__dict__["_pending_step"] = step
    return obj


def fill(obj, value) -> None:
    """Make the placeholder ``obj`` into an equal of ``value``, of ``value``'s type, in place."""
    obj.__dict__.clear()
    obj.__dict__.update(value.__dict__)
    object.__setattr__(obj, "__class__", type(value))
