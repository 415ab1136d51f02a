"""Equation checks computed in worker processes while a document goes on building.

Proving a step and cross-checking it are pure computations on its expressions. While the
build runs a document's ``document()`` inside :func:`deferring`, and the document has spare
cores (it is not built beside other documents, the process may use two cores, and processes
can be forked), :meth:`~derive.document.api.Document.equation` and
:meth:`~derive.document.api.Document.chain` hand each step to a worker process and return at
once. Each step gets a process of its own, forked when it starts, at most :data:`WORKERS` at
a time: the worker holds the very expressions and the warm caches the document has at that
moment (nothing is pickled on the way there; sent to a long-lived pool, the expressions
would arrive as rebuilt copies, slower to look up in caches and, for an unevaluated
product, not even the same statement), and sends back the verdicts and check result.
The step's verdicts and check result are placeholders of their own types until then,
filled in when the step is *settled*:

* reading any field of a placeholder settles its step, after every pending step added
  before it, so nothing ever sees an unchecked result (not a proof module, not the
  renderer), and the first failing step in document order is the one raised;
* :meth:`~derive.document.api.Document.finish`, which the build calls after ``document()``,
  settles every step; the end of :func:`deferring` stops any worker still running.

A step whose worker does not deliver a result, for whatever reason (it could not be
started or died, the step failed, its result does not pickle), is computed again in this
process when it is settled, where it succeeds or raises
:class:`~derive.errors.StepFailed` exactly as it would have when added. Outside
:func:`deferring` (tests, doctests, library use) nothing is deferred:

    >>> active() is None
    True
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import multiprocessing
import multiprocessing.connection
import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future

from derive import parallel, shared
from derive.progress import note

__all__ = ["Deferral", "Step", "active", "deferring", "fill", "placeholder", "settle_all"]

WORKERS = 2
_ACTIVE: list = []  # the Deferral in effect, if any (one per process: see Deferral.owner)


def _spare_cores() -> bool:
    """A document alone on a machine where it may use several cores, and fork is available."""
    return parallel.spare_helpers() > 0


@contextlib.contextmanager
def deferring():
    """Within: documents check their equations in worker processes when they have spare cores.

    On the way out every step still pending is settled (a failing one raises, also when the
    body raised: an earlier failing step is where the document would have stopped), then any
    worker still running is stopped. A nested use shares the outer one.
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


class _NoResult(Exception):
    """A worker delivered nothing: the step is computed in the document's process."""


class Deferral:
    """Steps waiting for a worker, and at most :data:`WORKERS` workers, one step each."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.started = False  # a worker was forked
        self.waiting: deque = deque()  # (future, what, fn, args), in document order
        self.running: dict = {}  # receiving end of a worker's pipe → (process, future)
        self.broken = False  # a worker could not be started: compute in this process
        self.queues: list[list] = []  # each document's list of pending steps

    def submit(self, queue: list, what: tuple[str, str], fn: Callable, *args) -> Step | None:
        """A pending step of ``queue`` computing ``fn(*args)`` in a worker; None: compute it now.

        ``what`` is (document, step) for the progress note the worker prints.
        """
        if self.broken:
            return None
        future: Future = Future()
        self.waiting.append((future, what, fn, args))
        if not any(q is queue for q in self.queues):
            self.queues.append(queue)
        self.poll()
        if self.broken and future.done():  # no worker could be started: computed now, as without one
            return None
        return Step(queue, future, lambda: fn(*args), self)

    def poll(self, block: bool = False) -> None:
        """Collect the results of finished workers (``block``: wait for one) and start waiting
        steps while fewer than :data:`WORKERS` run."""
        self._start()
        if self.running:
            ready = multiprocessing.connection.wait(list(self.running), timeout=None if block else 0)
            for conn in ready:
                proc, future = self.running.pop(conn)
                try:
                    status, value = conn.recv()
                except Exception:  # noqa: BLE001 - the worker died, or its result does not load here
                    status, value = "error", None
                conn.close()
                proc.join()
                if status == "ok":
                    future.set_result(value)
                else:
                    future.set_exception(_NoResult())
            self._start()

    def _start(self) -> None:
        while self.waiting and len(self.running) < WORKERS:
            future, what, fn, args = self.waiting.popleft()
            if not self.started:
                _warm()
                self.started = True
            try:
                recv, proc = _fork(_worker, what, fn, args)
            except Exception:  # noqa: BLE001 - no process (OSError), or none allowed here (a daemon's child)
                self.broken = True
                future.set_exception(_NoResult())
                self._drop_waiting()
                return
            self.running[recv] = (proc, future)

    def _drop_waiting(self) -> None:
        while self.waiting:
            self.waiting.popleft()[0].set_exception(_NoResult())

    def settle_all(self) -> None:
        for queue in self.queues:
            settle_all(queue)

    def close(self) -> None:
        """Stop the workers still running; their steps are then computed here if settled."""
        self._drop_waiting()
        for conn, (proc, future) in list(self.running.items()):
            proc.terminate()
            proc.join()
            conn.close()
            future.set_exception(_NoResult())
        self.running.clear()


# Modules the provers and the cross-check import on first use (SymPy's simplify imports its
# units, Hypothesis and NumPy their random generators): imported here before the first worker
# is forked, or every worker would import them again. Any that is missing is skipped.
WARM_IMPORTS = ("numpy.random", "secrets", "hypothesis.internal.conjecture.optimiser",
                "sympy.physics.units", "sympy.physics.units.util")


def _warm() -> None:
    for name in WARM_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


_fork = parallel.fork


def _worker(conn, what: tuple[str, str], fn: Callable, args: tuple) -> None:
    """In a worker: one step's computation, sent back as ("ok", result) or ("error", None)."""
    note(what[0], f"checking {what[1]} (worker process)")
    try:
        payload = ("ok", fn(*args))
    except BaseException:  # noqa: BLE001 - the document's process computes the step again and raises
        payload = ("error", None)
    try:
        conn.send(payload)
    except Exception:  # noqa: BLE001 - a result that does not pickle: computed again there
        conn.send(("error", None))
    conn.close()


class Step:
    """A step computed in a worker: ``future`` delivers what ``compute()`` returns, and
    ``fill(outcome)`` (set once its placeholders exist) puts it in the document."""

    def __init__(self, queue: list, future: Future, compute: Callable[[], object], deferral: Deferral) -> None:
        self.queue, self.future, self.compute, self.deferral = queue, future, compute, deferral
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
        while not self.future.done() and (self.deferral.running or self.deferral.waiting):
            self.deferral.poll(block=True)
        try:
            if not self.future.done():
                raise _NoResult
            outcome = self.future.result()
        except _NoResult:
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
        _settled(self)
        return getattr(self, attr)

    def __eq__(self, other):
        _settled(self)
        return self == other

    def __hash__(self):
        _settled(self)
        return hash(self)

    def __reduce_ex__(self, protocol):  # copy, deepcopy, pickle: of the settled value
        _settled(self)
        return self.__reduce_ex__(protocol)


def _settled(obj) -> None:
    """Settle the step of the placeholder ``obj``; it is then an object of the real class."""
    obj.__dict__["_pending_step"].settle()
    if isinstance(obj, _Placeholder):  # a copy made before the step was settled: nothing fills it
        raise RuntimeError("a placeholder that its step does not fill (copied before it was settled)")


def _field(name: str) -> property:
    """A dataclass field of a placeholder: its class default must not answer before the step is settled."""
    def get(self):
        if name in self.__dict__:  # a field known at once (a check's name)
            return self.__dict__[name]
        _settled(self)
        return getattr(self, name)
    return property(get)


_TYPES: dict[type, type] = {}


def placeholder(cls: type, step: Step, **known):
    """An empty ``cls`` (of a subclass of it until filled) whose fields settle ``step``;
    ``known`` fields are set already (a check's name: checks can be filtered without waiting)."""
    kind = _TYPES.get(cls)
    if kind is None:
        fields = {f.name: _field(f.name) for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
        kind = _TYPES[cls] = type(f"Pending{cls.__name__}", (_Placeholder, cls), fields)
    obj = object.__new__(kind)
    obj.__dict__.update(known)
    obj.__dict__["_pending_step"] = step
    return obj


def fill(obj, value) -> None:
    """Make the placeholder ``obj`` into an equal of ``value``, of ``value``'s type, in place."""
    obj.__dict__.clear()
    obj.__dict__.update(value.__dict__)
    object.__setattr__(obj, "__class__", type(value))
