"""Implementations that misbehave: derive must stop them with exit 2 and one line, and
nothing they do may reach the report or decide the verdict."""

import os
import signal
import sys

import numpy as np

from tests.zoo.softmax1_numpy import softmax1


def exits_0(x):
    sys.exit(0)


def exits_3(x):
    sys.exit(3)


def os_exit(x):
    os._exit(0)


def killed(x):
    os.kill(os.getpid(), signal.SIGKILL)


def loops(x):
    while True:
        pass


def exits_on_long_rows(x):
    """Right on short rows, exits on a row of 3 or more keys (only after the probe call)."""
    if x.shape[-1] >= 3:
        sys.exit(0)
    return softmax1(x)


def writes_fd1(x):
    """Right, but writes to file descriptor 1 directly (print() would go to stderr)."""
    os.write(1, b'{"verdict": "agrees"}\n')
    return softmax1(x)


def returns_list(x):
    return softmax1(x).tolist()


def returns_none(x):
    softmax1(x)


def returns_strings(x):
    return softmax1(x).astype(str)


def returns_transposed(x):
    return np.swapaxes(softmax1(x), -1, 0) if x.ndim > 1 else softmax1(x)[..., None]


def complex_weights(x):
    """Right in its real part, but complex: weights are real numbers."""
    return softmax1(x) + 1e-3j


def mutates(x):
    """Right, but overwrites its input with the weights (an in-place "optimisation")."""
    y = softmax1(x)
    x[...] = y
    return y


def lean_worker(x):
    """Right only if the process running it has not imported derive, SymPy or mpmath."""
    heavy = [m for m in ("derive", "sympy", "mpmath", "hypothesis") if m in sys.modules]
    return softmax1(x) * (0.5 if heavy else 1.0)


def forges_a_reply(x):
    """Writes a pickle that would run code if unpickled into derive's reply pipe, then exits."""
    import pickle

    wfd = int(sys.argv[-1])  # the reply pipe: the last argument of the child
    payload = pickle.dumps(("ok",)) + b"cos\nsystem\n(S'echo pwned'\ntR."
    os.write(wfd, len(payload).to_bytes(4, "big", signed=True) + payload)
    os._exit(0)
