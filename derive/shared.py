"""Results computed once per build and shared between documents built in parallel.

Several documents need the same derivations (softmax₁'s properties appear in the
normalizers table, in softmax-one and in qk-bias; the token equivalences in normalizers and
softmax-one). When the build runs documents in separate processes it points
``DERIVE_SHARED_DIR`` at a folder that lives for that one build; :func:`once` then computes
a result in the first process that asks for it, under a file lock, and every other process
waits for it and reads it back. Nothing outlives the build, so a shared result is exactly
what each document would have computed itself (the computations are deterministic), and a
cold build stays cold.

Without the variable (a single document, a test, the library) :func:`once` just computes.

    >>> import os
    >>> _ = os.environ.pop(ENV, None)
    >>> once("demo", lambda: 6 * 7)
    42
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

__all__ = ["ENV", "once"]

ENV = "DERIVE_SHARED_DIR"
T = TypeVar("T")


def once(key: str, compute: Callable[[], T]) -> T:
    """``compute()``, computed once per build across processes (see the module docstring).

    ``key`` must name everything the result depends on. A result that cannot be pickled
    is returned unshared; an exception in ``compute`` propagates and stores nothing.
    """
    folder = os.environ.get(ENV)
    if not folder or not Path(folder).is_dir():
        return compute()
    name = hashlib.sha256(key.encode()).hexdigest()[:32]
    path = Path(folder) / f"{name}.pickle"
    with open(Path(folder) / f"{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if path.exists():
            try:
                return pickle.loads(path.read_bytes())
            except Exception:  # noqa: BLE001 - a damaged entry is recomputed
                pass
        value = compute()
        try:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - not everything pickles (lambdas); then it is not shared
            return value
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        return value
