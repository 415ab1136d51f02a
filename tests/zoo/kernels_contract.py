"""Kernels that are right inside a stated contract and wrong (or refusing) outside it.

* ``sink_online_finite_only``: a tiled forward with a sink that takes m = max(s, max x) as its
  running maximum from the start: right for every finite sink, NaN for s = −∞ on a row with no
  visible key (e^{−∞ − (−∞)}). ``--assume finite-sinks=-20:20`` is its contract.
* ``sink_online_pow2_tiles``: the same kernel with the −∞ guard, refusing a tile size that is not a
  power of two (a real kernel's ``tl.arange`` needs one). ``--assume block=pow2`` is its contract.
* ``sink_online_late_rows``: right on the first 8 rows of a call, its rows from the 9th on get
  their sink twice (only reached with per-head calls, 2 heads × 6 rows).
* ``sink_online_long_masked``: right except on rows of 17 keys or more with some (not all) keys
  masked, whose output it halves: every such row is a masked row and a long one, so both classes fail.
"""

from __future__ import annotations

import math

import numpy as np


def _row(x, v, block, s, guard):
    m, l, acc = s, 1.0, np.zeros(v.shape[-1])
    for start in range(0, len(x), block):
        xt, vt = x[start:start + block], v[start:start + block]
        m_new = max(m, float(np.max(xt)))
        ref = 0.0 if guard and m_new == -math.inf else m_new
        alpha = math.exp(m - ref)
        p = np.exp(xt - ref)
        l, acc, m = l * alpha + p.sum(), acc * alpha + p @ vt, m_new
    if guard and m == -math.inf:
        return np.zeros(v.shape[-1]), -math.inf
    return acc / l, m + math.log(l)


def _rows(x, v, block, s, guard=True, late=False):
    lead = x.shape[:-1]
    R = int(np.prod(lead))
    xr, vr = x.reshape(R, x.shape[-1]), v.reshape(R, *v.shape[-2:])
    sr = np.broadcast_to(np.asarray(s, dtype=np.float64), lead).reshape(-1)
    out, lse = np.zeros((xr.shape[0], v.shape[-1])), np.zeros(xr.shape[0])
    for r in range(xr.shape[0]):
        out[r], lse[r] = _row(xr[r].astype(np.float64), vr[r].astype(np.float64), block, float(sr[r]), guard)
        if late and r >= 8:
            lse[r] = np.logaddexp(lse[r], sr[r])
            out[r] *= 0.5
    return out.reshape(*lead, v.shape[-1]), lse.reshape(lead)


def sink_online_finite_only(x, v, block, *, s):
    if x.shape[-1] == 0:
        return np.zeros(x.shape[:-1] + v.shape[-1:]), np.broadcast_to(np.asarray(s, dtype=np.float64), x.shape[:-1])
    return _rows(x, v, block, s, guard=False)


def sink_online_pow2_tiles(x, v, block, *, s):
    if block & (block - 1):
        raise ValueError(f"block must be a power of two, got {block}")
    return _rows(x, v, block, s)


def sink_online_late_rows(x, v, block, *, s):
    return _rows(x, v, block, s, late=True)


def sink_online_long_masked(x, v, block, *, s):
    out, lse = _rows(x, v, block, s)
    masked = np.isinf(x) & (x < 0)
    hit = masked.any(axis=-1) & ~masked.all(axis=-1) & (x.shape[-1] >= 17)
    return np.where(hit[..., None], 0.5 * out, out), lse
