"""A list of independent tasks computed by this process and forked helpers together.

:func:`share` hands out the tasks in list order: this process and each helper take the next
task whenever they are free, and the helpers send their results back pickled. This process
works too rather than wait: reading a result back rebuilds its expressions, which costs a
fraction of computing it, so the results computed here are the cheapest to have. A task a
helper fails on (an exception, a result that does not pickle, a helper that dies) is
computed again here, where it succeeds or raises exactly as it would have alone. The
results are those of ``[compute(t) for t in tasks]``: the computations are deterministic,
and where each one ran does not change it.

Use it only for a document built alone (see :func:`spare_helpers`): beside other documents
the cores are taken and a helper only adds work.

    >>> share([1, 2, 3], lambda x: x * x, helpers=0)
    [1, 4, 9]
"""

from __future__ import annotations

import gc
import multiprocessing
import pickle
import multiprocessing.connection
from collections.abc import Callable, Sequence
from typing import TypeVar

from derive import shared

__all__ = ["share", "spare_helpers"]

T = TypeVar("T")


def spare_helpers() -> int:
    """Helpers a computation may fork: one on a machine with two or more cores for this
    process, none beside other documents in a parallel build, where fork is missing, or in a
    helper or worker process itself (a daemon, which may not have children)."""
    if (shared.in_parallel_build() or "fork" not in multiprocessing.get_all_start_methods()
            or multiprocessing.current_process().daemon):
        return 0
    return 1 if shared.cores() >= 2 else 0


def share(tasks: Sequence, compute: Callable[..., T], helpers: int,
          done: Callable[[int], None] | None = None) -> list[T]:
    """``[compute(t) for t in tasks]``, computed by this process and ``helpers`` forked ones.

    ``done(k)`` is called in this process as the result of task ``k`` arrives (progress).
    With no helpers, or when they cannot be started, everything is computed here.
    """
    tasks = list(tasks)
    results: dict[int, T] = {}

    def finished(k: int, ok: bool, value) -> None:
        results[k] = value if ok else compute(tasks[k])  # a helper's failure is met again here
        if done is not None:
            done(k)

    if helpers > 0 and tasks:
        _together(tasks, compute, helpers, finished)
    for k in range(len(tasks)):
        if k not in results:
            finished(k, False, None)
    return [results[k] for k in range(len(tasks))]


def _together(tasks: list, compute: Callable, helpers: int, finished: Callable) -> None:
    try:
        taken = multiprocessing.get_context("fork").Value("i", 0)
    except (OSError, ValueError, RuntimeError):
        return  # no shared counter (no fork, no shared memory): this process computes everything
    inboxes: dict = {}  # receiving end of a helper's pipe → the helper
    try:
        for _ in range(helpers):
            try:
                recv, proc = fork(_helper, tasks, compute, taken)
            except (OSError, ValueError, RuntimeError):
                break  # no (more) helpers: this process computes what they would have
            inboxes[recv] = proc
        got: set[int] = set()

        def receive(wait: bool) -> None:
            while inboxes:
                ready = multiprocessing.connection.wait(list(inboxes), timeout=None if wait else 0)
                if not ready:
                    return
                for conn in ready:
                    try:
                        k, data = conn.recv()
                    except Exception:  # noqa: BLE001 - EOF: the helper is done, or died mid-message
                        conn.close()
                        inboxes.pop(conn).join()
                        continue
                    got.add(k)
                    try:
                        ok, value = data is not None, pickle.loads(data) if data is not None else None
                    except Exception:  # noqa: BLE001 - a result that does not load is computed here
                        ok, value = False, None
                    finished(k, ok, value)
                wait = False

        while (k := _take(taken)) < len(tasks):
            got.add(k)
            finished(k, True, compute(tasks[k]))
            receive(False)
        while len(got) < len(tasks) and inboxes:
            receive(True)
    finally:
        for conn, proc in inboxes.items():
            conn.close()
            proc.terminate()
            proc.join()


def fork(target: Callable, *args):
    """(receiving end, process): ``target(sending end, *args)`` in a forked daemon process.

    Only the child holds the sending end, so the receiving end sees EOF when the child exits
    or dies, whatever it was writing."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=target, args=(send, *args), daemon=True)
    # Frozen, the objects the child inherits are left out of its garbage collections,
    # which would otherwise visit (and so copy) every page of this process's heap.
    gc.freeze()
    try:
        proc.start()
    except BaseException:
        recv.close()
        raise
    finally:
        gc.unfreeze()
        send.close()
    return recv, proc


def _take(taken) -> int:
    """The index of the next task, taken by exactly one process."""
    with taken.get_lock():
        k = taken.value
        taken.value += 1
    return k


def _helper(conn, tasks: list, compute: Callable, taken) -> None:
    """A forked helper: compute the next task until none is left, sending back (index, pickled
    result), or (index, None) for a task that failed or whose result does not pickle."""
    while (k := _take(taken)) < len(tasks):
        try:
            data = pickle.dumps(compute(tasks[k]), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - this process computes the task again and meets the error itself
            data = None
        conn.send((k, data))
