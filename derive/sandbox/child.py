"""The child side of :mod:`derive.sandbox`: run as a plain script, standard library only.

``python child.py SERVICE.py RFD WFD`` loads ``SERVICE.py`` by its path (not as part of
derive, which the child never imports) and serves its ``handle(message)`` over the pipes
RFD (requests, pickled by the parent) and WFD (replies, :func:`encode`). ``handle`` returns
the reply, or None to end the child. Standard output is redirected to standard error before
any user code runs: file descriptor 1 is watched by the parent and must stay empty.

A service imports these helpers as ``derive_sandbox_child`` (installed by the runner below),
or, imported in derive's own process, as :mod:`derive.sandbox.child`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types
from multiprocessing.connection import Connection

__all__ = ["INSTALL", "KINDS", "brief", "encode", "install_hint", "serve"]

NAME = "derive_sandbox_child"  # the name a service imports these helpers by, in the child


def brief(exc: BaseException) -> str:
    """An exception in one line: its type and the first line of its message (≤ 160 characters):
    one wording for the parent and every child."""
    first = (str(exc).strip().splitlines() or [""])[0]
    if len(first) > 160:
        first = first[:157] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


# How to install an optional dependency that derive, or the code it runs, may need: one wording
# for every message that names a missing one (the child's, derive's own).
INSTALL = {"torch": "pip install 'derive[torch]' (or pip install torch)", "triton": "pip install triton"}


def install_hint(module: str | None) -> str:
    """``; install it with: pip install …`` for a missing optional dependency (``torch.fx`` counts as
    torch), "" for any other module."""
    top = (module or "").split(".")[0]
    return f"; install it with: {INSTALL[top]}" if top in INSTALL else ""


KINDS = "biufc"  # the dtype kinds a reply's array may have: booleans and numbers, never objects


def encode(reply: tuple) -> bytes:
    """A reply as bytes the parent decodes without pickle: a JSON header line, in which each numpy
    array of the reply is ``{"array": [dtype, shape]}``, then the arrays' bytes in C order, one
    after another (the parent rebuilds them from dtype, shape and bytes: no code, no object)."""
    np = sys.modules.get("numpy")  # an array can only be in the reply if numpy is loaded
    header, arrays = [], []
    for v in reply:
        if np is not None and isinstance(v, np.ndarray):
            if v.dtype.kind not in KINDS or v.dtype.hasobject:
                raise ValueError(f"cannot send an array of dtype {v.dtype}")
            header.append({"array": [v.dtype.str, list(v.shape)]})
            arrays.append(v.tobytes())  # in C order, whatever the array's layout
        else:
            header.append(v)
    return b"".join([json.dumps(header).encode(), b"\n", *arrays])


def serve(rfd: int, wfd: int, handle) -> None:
    """Answer requests until the parent closes the pipe or ``handle`` returns None."""
    conn_in, conn_out = Connection(rfd, writable=False), Connection(wfd, readable=False)
    sys.stdout = sys.stderr  # print() goes to standard error; fd 1 is watched by the parent
    while True:
        try:
            msg = conn_in.recv()
        except EOFError:
            return
        try:
            reply = handle(msg)
            if reply is None:
                return
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, (int, type(None))) else str(exc.code)
            conn_out.send_bytes(encode(("exit", code)))
            sys.stderr.flush()
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 - e.g. KeyboardInterrupt raised by the user's code
            reply = ("raised", brief(exc))
        sys.stderr.flush()
        conn_out.send_bytes(encode(reply))


def _service(path: str):
    spec = importlib.util.spec_from_file_location("derive_sandbox_service", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    helpers = types.ModuleType(NAME)
    helpers.__dict__.update(brief=brief, encode=encode, serve=serve, install_hint=install_hint)
    sys.modules[NAME] = helpers
    serve(int(sys.argv[2]), int(sys.argv[3]), _service(sys.argv[1]).handle)
