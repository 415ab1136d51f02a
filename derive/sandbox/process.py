"""The parent side of :mod:`derive.sandbox`: one child process running a service.

The child runs :mod:`derive.sandbox.child` with the service's path, in its own session (so
everything it starts can be killed with it), standard input closed, standard output and
error captured in temporary files: anything on standard output ends the check (the report
owns it), standard error is relayed to ours after each request. Every request waits at most
``timeout`` seconds. A reply is decoded without pickle (:func:`decode`).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

from derive.errors import InputError
from derive.sandbox.child import KINDS

__all__ = ["RUNNER", "Crashed", "Worker", "decode"]

RUNNER = Path(__file__).with_name("child.py")
_BOOT = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"


class Crashed(InputError):
    """The child was killed by a signal while it ran the user's code (SIGABRT, SIGSEGV, ...): a
    usage error where nothing else can be said, and a failure of the input it was given where a
    check can name that input (the attention form: :mod:`derive.impl.judge.attention`)."""

    def __init__(self, message: str, signal_name: str):
        super().__init__(message)
        self.signal = signal_name


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _array(spec, data: bytes, pos: int) -> tuple[np.ndarray, int]:
    """The array ``spec`` = [dtype, shape] whose bytes start at ``pos`` in ``data``, and where they end."""
    dt, shape = spec
    if not (isinstance(dt, str) and isinstance(shape, list)
            and all(type(s) is int and s >= 0 for s in shape)):  # noqa: E721 - not a bool
        raise ValueError("not an array")
    dtype = np.dtype(dt)
    if dtype.kind not in KINDS or dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError("not an array of numbers")
    count = math.prod(shape)
    end = pos + count * dtype.itemsize
    if end > len(data):
        raise ValueError("truncated")
    return np.frombuffer(data, dtype=dtype, count=count, offset=pos).reshape(tuple(shape)).copy(), end


def decode(data: bytes) -> tuple:
    """A reply of the child (see :func:`derive.sandbox.child.encode`), without pickle: every array
    rebuilt from its dtype (booleans and numbers only), shape and bytes, which must fill the reply."""
    head, _, rest = data.partition(b"\n")
    header = json.loads(head.decode("utf-8"))
    if not isinstance(header, list) or not header or not isinstance(header[0], str):
        raise ValueError("not a reply")
    out, pos = [], 0
    for v in header:
        if isinstance(v, dict) and list(v) == ["array"]:
            v, pos = _array(v["array"], rest, pos)
        out.append(v)
    if pos != len(rest):
        raise ValueError("bytes after the arrays")
    return tuple(out)


class Worker:
    """One child process serving ``script`` (a service of :mod:`derive.sandbox.child`); every
    request has a timeout. ``name`` is the user's code as messages call it; ``env`` is added to
    the child's environment before it starts."""

    def __init__(self, name: str, timeout: float, env: dict | None, script: Path):
        self.name, self.timeout = name, timeout
        self.stdout = tempfile.TemporaryFile()
        self.stderr = tempfile.TemporaryFile()
        self._relayed = 0
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        env = {**os.environ, **(env or {})}  # the hook for e.g. TRITON_INTERPRET=1, set before any import
        env.setdefault("PYTHONHASHSEED", "0")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(RUNNER), str(script), str(req_r), str(rep_w)],
                stdin=subprocess.DEVNULL, stdout=self.stdout, stderr=self.stderr, pass_fds=(req_r, rep_w),
                start_new_session=True, env=env, close_fds=True)
        finally:
            os.close(req_r)
            os.close(rep_w)
        self.to_child = Connection(req_w, readable=False)
        self.from_child = Connection(rep_r, writable=False)

    def relay(self) -> None:
        """Copy what the child wrote to standard error since the last time to ours."""
        self.stderr.flush()
        size = os.fstat(self.stderr.fileno()).st_size
        if size > self._relayed:
            self.stderr.seek(self._relayed)
            data = self.stderr.read(size - self._relayed)
            self._relayed = size
            sys.stderr.write(data.decode("utf-8", "replace"))
            sys.stderr.flush()

    def request(self, msg: tuple, doing: str):
        try:
            self.to_child.send(msg)
        except (BrokenPipeError, OSError):
            self._died(doing)
        if not self.from_child.poll(self.timeout):
            self.close()
            raise InputError(f"{self.name} did not finish within the timeout of {self.timeout:g} s while "
                             f"{doing}; it was stopped (set --timeout SECONDS); no verdict")
        try:
            data = self.from_child.recv_bytes()
        except (EOFError, OSError):
            self._died(doing)
        try:
            reply = decode(data)
        except Exception:  # noqa: BLE001 - whatever the child sent, it is not a reply
            self.close()
            raise InputError(f"the process running {self.name} sent a malformed reply while {doing} (something "
                             f"wrote to derive's private pipe); no verdict") from None
        self.relay()
        self._check_stdout(doing)
        if reply[0] == "exit":
            self.close()
            code = reply[1]
            raise InputError(f"{self.name} called sys.exit({code!r}) while {doing}: the check was stopped; "
                             f"no verdict")
        return reply

    def _check_stdout(self, doing: str) -> None:
        if os.fstat(self.stdout.fileno()).st_size:
            self.close()
            raise InputError(f"{self.name} wrote to standard output (file descriptor 1) while {doing}: "
                             f"the report owns standard output; write to stderr instead; no verdict")

    def _died(self, doing: str):
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self.relay()
        self.close()
        if code is not None and code < 0:
            raise Crashed(f"the process running {self.name} was killed by {_signal_name(-code)} while "
                             f"{doing}; no verdict", _signal_name(-code))
        raise InputError(f"the process running {self.name} ended with exit status {code} while {doing} "
                         f"(os._exit or a crash); no verdict")

    def close(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is None:
            return
        self.proc = None
        for conn in (self.to_child, self.from_child):
            try:
                conn.close()
            except OSError:
                pass
        if proc.poll() is None:
            try:
                proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        try:  # and anything the user's code started in the worker's session
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.relay()
        self.stdout.close()
        self.stderr.close()
