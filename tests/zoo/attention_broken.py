"""Attention kernels (``--form attention``) that raise or crash on some inputs, written for this
project: a raise or a crash is the failure of the input it happened on, and the rest of the check
still runs and is reported.

* ``raises_past_1024``: correct, but raises on calls of more than 1024 keys (a kernel with a
  fixed key buffer), so only the very long rows fail;
* ``aborts_in_float32``: correct in float64, and the process dies by SIGABRT on any float32 call
  (a native extension's failed check), so float64 agrees and float32 fails in every class;

``tests/zoo/attention_torch.py:needs_two_keys`` is the torch twin of a raise: its first call raises
with numpy arrays and with torch tensors alike, and the report shows the kernel's own error.
"""

from __future__ import annotations

import os

import numpy as np


def _attend(q, k, v, scale):
    s = (q @ np.swapaxes(k, -1, -2)) * scale
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def raises_past_1024(q, k, v, *, scale):
    if k.shape[-2] > 1024:
        raise RuntimeError(f"at most 1024 keys, got {k.shape[-2]}")
    return _attend(q, k, v, scale)


def aborts_in_float32(q, k, v, *, scale):
    if q.dtype == np.float32:
        os.abort()
    return _attend(q, k, v, scale)
