"""The implementation under test, run in a child process (:mod:`derive.impl.run.worker`).

``FILE.py:func`` and ``package.module:func`` (``func`` may be dotted, ``Class.method``)
both work; a callable is passed to the child by pickling (by reference: it must be
importable there, e.g. defined at module level). The child imports it and calls it; this
process only sends inputs and receives float64 arrays over a private pipe, so nothing the
user's code does can print into the report or decide the verdict:

* it calls ``sys.exit``/``os._exit``, is killed, or does not answer within the timeout
  (per import and per call) → :class:`~derive.errors.InputError` (exit 2) saying what
  happened; the child is killed;
* it writes to file descriptor 1 → the same (``print`` goes to standard error, which is
  relayed to ours);
* it returns something that is not an array of the input's shape → the same, naming the
  type or shape received;
* it raises on a valid input → :class:`ImplRaised`.

Each check starts its own worker, except inside :func:`one_worker` (derive's own documents,
whose examples are derive's constant sources): there the checks run one after another in one
worker, each importing its target afresh after the previous one is done with it (a worker
stopped for a timeout, an exit or a bad reply is never reused), so numpy is imported once.

The callable takes a row array (numpy or torch: detected by calling it once on [0, 1])
and returns the weights; it may also take ``dim`` (or ``axis``), ``mask`` (boolean, True
= allowed) and the normalizer's parameters as keywords, which are then passed.
"""

from __future__ import annotations

import os
import pickle
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from derive.errors import InputError
from derive.sandbox.child import brief  # one wording for exceptions, parent and child
from derive.sandbox.process import Worker, decode  # noqa: F401  (decode: re-exported)

__all__ = ["DEFAULT_TIMEOUT", "ImplRaised", "Target", "brief", "load", "one_worker", "shown"]

DEFAULT_TIMEOUT = 60.0
HELD = 4  # value arrays the worker keeps for kernel-form calls (worker.HELD)
WORKER = Path(__file__).with_name("worker.py")  # the sandbox service of derive impl
_SHARED: list = []  # inside one_worker(): [the idle worker, or None while a check holds it or none is open]


@contextmanager
def one_worker():
    """Within the block, the checks without an ``env`` run one at a time in one worker process
    (started by the first, handed on by each check's end while it still runs; stopped at the
    block's end). For derive's own examples, not for a user's code: one check's target can
    change what the next sees in that process."""
    _SHARED.append(None)
    try:
        yield
    finally:
        idle = _SHARED.pop()
        if idle is not None:
            idle.close()


def _worker(name: str, timeout: float, env: dict | None) -> tuple[Worker, bool]:
    """(a worker for a new target, whether it goes back to :func:`one_worker`'s block at the end)."""
    if not _SHARED or env:
        return Worker(name, timeout, env, WORKER), False
    idle, _SHARED[-1] = _SHARED[-1], None
    if idle is None or idle.proc is None or idle.proc.poll() is not None:
        if idle is not None:
            idle.close()
        return Worker(name, timeout, env, WORKER), True
    idle.name, idle.timeout = name, timeout
    return idle, True


def shown(x: np.ndarray) -> str:
    flat = np.ravel(x)
    text = ", ".join(repr(v) if np.isfinite(v) else ("inf" if v > 0 else "-inf") for v in map(float, flat[:8]))
    return "[" + text + (", ..." if flat.size > 8 else "") + "]"


class ImplRaised(Exception):
    """The implementation raised on a valid input."""

    def __init__(self, text: str, x: np.ndarray):
        super().__init__(text)
        self.shape = tuple(x.shape)
        self.values = shown(x)


@dataclass
class Target:
    name: str
    worker: Worker | None = None
    api: str = "numpy"  # numpy | torch
    keywords: set[str] | None = None
    dim_kw: str | None = None
    takes_mask: bool = False
    param_kws: tuple[str, ...] = ()
    mutates: bool = False  # the function changed its input array in place (seen at least once)
    extra: dict = field(default_factory=dict)
    held: list = field(default_factory=list)  # keys of the value arrays the worker keeps (oldest first)
    shared: bool = False  # the worker goes back to one_worker()'s block when the check ends
    loaded: tuple = ()  # how :func:`load` started it: what :meth:`restart` repeats

    def restart(self) -> None:
        """A new worker with the target imported afresh, after the last one crashed (its API as
        detected before): the calls after a crash run as if the check had started there."""
        self.stop()
        fresh = load(*self.loaded)
        self.worker, fresh.worker = fresh.worker, None

    def call(self, x: np.ndarray, dtype: str, dim: int, mask=None, params=None, grad=None):
        """Output as float64 numpy (and, with ``grad`` weights c, d⟨c, y⟩/dx).

        A complex output is returned as is (complex128): the checker judges it.
        """
        doing = f"being called on a {dtype} input of shape {list(x.shape)}: {shown(x)}"
        reply = self.worker.request(("call", np.ascontiguousarray(x, dtype=np.float64), dtype, dim,
                                     None if mask is None else np.asarray(mask), dict(params or {}),
                                     None if grad is None else np.asarray(grad, dtype=np.float64)), doing)
        if reply[0] == "raised":
            raise ImplRaised(reply[1], x)
        if reply[0] == "bad":
            self.stop()
            raise InputError(f"{self.name} {reply[1]} (on a {dtype} input of shape {list(x.shape)}); no verdict")
        if not _well_formed(reply, x.shape):
            self.stop()
            raise InputError(f"the process running {self.name} sent a malformed reply while {doing} (something "
                             f"wrote to derive's private pipe); no verdict")
        _, y, g, notes = reply
        self.mutates |= notes["mutated"]
        return y, g

    def kcall(self, form: str, x: np.ndarray, v: np.ndarray, third, params: dict, dtype: str,
              vkey=None) -> dict:
        """A kernel-form call fn(x, v, block | splits | dout, **params): {name: float64 array}.

        ``vkey``: (a name of the values, ``v.shape``): the same name, the same values in C order, in
        any layout; the worker keeps the last few it received, so calls on the same values send them once."""
        doing = (f"being called in {form} form on {dtype} scores of shape {list(x.shape)}: {shown(x)}"
                 + (f", {'block' if form == 'online' else 'splits'} = {third}" if form != "backward" else ""))
        third = np.ascontiguousarray(third, dtype=np.float64) if isinstance(third, np.ndarray) else int(third)
        held = vkey is not None and vkey[0] in self.held
        if vkey is not None and not held:
            self.held = (self.held + [vkey[0]])[-HELD:]  # the worker keeps as many, dropping the oldest
        reply = self.worker.request(("kcall", form, np.ascontiguousarray(x, dtype=np.float64),
                                     None if held else np.ascontiguousarray(v, dtype=np.float64), third,
                                     dict(params or {}), dtype, vkey), doing)
        if reply[0] == "raised":
            raise ImplRaised(reply[1], x)
        if reply[0] == "bad":
            self.stop()
            raise InputError(f"{self.name} {reply[1]} (in {form} form, on {dtype} scores of shape "
                             f"{list(x.shape)}); no verdict")
        names = reply[1] if len(reply) >= 2 else None
        if (reply[0] != "ok" or not isinstance(names, list) or len(reply) != 2 + len(names)
                or not all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in reply[2:])):
            self.stop()
            raise InputError(f"the process running {self.name} sent a malformed reply while {doing} (something "
                             f"wrote to derive's private pipe); no verdict")
        got = dict(zip(names, reply[2:]))
        self.mutates |= got.pop("mutated", None) is not None
        return got

    def stop(self) -> None:
        """Stop the worker (its reply was not one derive sends): it is never handed on."""
        if self.worker is not None:
            self.worker.close()

    def close(self) -> None:
        worker, self.worker = self.worker, None
        if worker is None:
            return
        if self.shared and worker.proc is not None and _SHARED and _SHARED[-1] is None:
            _SHARED[-1] = worker  # still running and answering: the next check's worker
        else:
            worker.close()


def _well_formed(reply: tuple, shape: tuple) -> bool:
    """An ("ok", y, g, notes) reply whose arrays are what the worker sends for this input."""
    if len(reply) != 4 or reply[0] != "ok":
        return False
    _, y, g, notes = reply
    return (isinstance(y, np.ndarray) and y.dtype in (np.float64, np.complex128) and y.shape == tuple(shape)
            and (g is None or (isinstance(g, np.ndarray) and g.dtype == np.float64 and g.shape == tuple(shape)))
            and isinstance(notes, dict) and isinstance(notes.get("mutated"), bool)
            and isinstance(notes.get("complex"), bool))


def load(fn_or_spec, name: str, params: tuple[str, ...], dim: int, dtype: str,
         timeout: float = DEFAULT_TIMEOUT, form: str = "row", env: dict | None = None, heads: int = 0) -> Target:
    """Start a worker, import ``fn_or_spec`` there and detect its calling convention.

    ``form`` is ``row`` (fn(x) → weights) or a kernel form (``online``, ``split``, ``backward``:
    see :mod:`derive.impl.forms.kernel`). ``env`` is added to the child's environment before it
    imports anything (e.g. ``{"TRITON_INTERPRET": "1"}``)."""
    if isinstance(fn_or_spec, str):
        where, _, attr = fn_or_spec.rpartition(":")
        if ":" not in fn_or_spec or not where or not attr:
            raise InputError(f"cannot import {fn_or_spec!r}: expected MODULE_OR_FILE:FUNCTION, e.g. impl.py:softmax1")
        if (where.endswith(".py") or os.sep in where or "/" in where) and not Path(where).is_file():
            raise InputError(f"cannot import {fn_or_spec!r}: no file {where}")
        payload = fn_or_spec
    else:
        try:
            payload = pickle.dumps(fn_or_spec)
        except Exception as exc:  # noqa: BLE001 - lambdas, closures, bound objects
            raise InputError(f"cannot run {name} in a separate process: it cannot be pickled ({brief(exc)}); "
                             f"define it at module level or pass FILE.py:FUNCTION") from None
    path = list(sys.path)
    if "" not in path and os.getcwd() not in path:
        path.insert(0, os.getcwd())
    worker, shared = _worker(name, timeout, env)
    try:
        reply = worker.request(("load", payload, path, tuple(params), dim), "being imported")
        if reply[0] == "ok" and form == "row":
            reply = worker.request(("probe", dim, dtype), "being called on the input [0.0, 1.0]")
        elif reply[0] == "ok" and form == "attention":  # its signature only: the first call detects the api
            reply = worker.request(("aprobe",), "being inspected")
        elif reply[0] == "ok":
            reply = worker.request(("kprobe", form, heads), f"being called in {form} form on a tiny input")
    except BaseException:
        worker.close()
        raise
    if reply[0] != "ok":
        worker.close()
        message = reply[1]
        raise InputError(message if message.startswith("cannot") else f"{name} {message}")
    info = reply[1]
    return Target(name=name, worker=worker, shared=shared, api=info["api"],
                  loaded=(fn_or_spec, name, params, dim, dtype, timeout, form, env, heads),
                  keywords=None if info["keywords"] is None else set(info["keywords"]),
                  dim_kw=info["dim_kw"], takes_mask=info["takes_mask"], param_kws=tuple(info["param_kws"]),
                  extra={"signature": info.get("signature")} if form == "attention" else {})
