"""Kernel-shaped numpy code with a sink per head: ``s`` of shape (H,) broadcast against the
scores x (..., H, n) (a scalar ``s`` works too: one sink shared by every row).

The gradient of the sink has the shape of ``s`` as passed: entry h is the sum of the per-row
gradients −P_s·D over the rows of head h. The faulty ones return it as zero, with the wrong
sign, per row (not summed) or summed over every row into each head.
"""

from __future__ import annotations

import math

import numpy as np

from tests.zoo.kernels_numpy import NEG, _online_row, _rows, _split_row


def _sinks(s, lead):
    return np.broadcast_to(np.asarray(s, np.float64), lead).reshape(-1)


def _sum_to(a, shape):
    """The per-row array ``a`` summed over the axes that ``shape`` broadcasts along."""
    while a.ndim > len(shape):
        a = a.sum(axis=0)
    for ax, k in enumerate(shape):
        if k == 1 and a.shape[ax] != 1:
            a = a.sum(axis=ax, keepdims=True)
    return a


def _forward(row_fn, x, v, third, s):
    X, V, lead, dv = _rows(x, v)
    S = _sinks(s, lead)
    res = [row_fn(X[r], V[r], third, float(S[r])) for r in range(X.shape[0])]
    return (np.array([o for o, _ in res]).reshape(lead + (dv,)).astype(x.dtype),
            np.array([lse for _, lse in res]).reshape(lead).astype(x.dtype))


def sink_online(x, v, block, *, s):
    return _forward(_online_row, x, v, block, s)


def sink_split(x, v, splits, *, s):
    return _forward(_split_row, x, v, splits, s)


def _backward(x, v, dout, s):
    """(dx, dv, per-row ds of the leading shape), recomputed from the sink-inclusive lse."""
    X, V, lead, dv = _rows(x, v)
    S = _sinks(s, lead)
    G = dout.reshape(X.shape[0], dv).astype(np.float64)
    dx, dvv, ds = np.zeros_like(X), np.zeros_like(V), np.zeros(X.shape[0])
    for r in range(X.shape[0]):
        out, lse = _online_row(X[r], V[r], max(1, X.shape[1]), float(S[r]))
        if lse == NEG:
            continue
        p = np.exp(X[r] - lse)
        D = float(G[r] @ out)
        dx[r] = p * (V[r] @ G[r] - D)
        dvv[r] = p[:, None] * G[r][None, :]
        ds[r] = math.exp(S[r] - lse) * (0.0 - D)
    return dx.reshape(x.shape).astype(x.dtype), dvv.reshape(v.shape).astype(x.dtype), ds.reshape(lead)


def sink_backward(x, v, dout, *, s):
    dx, dv, ds = _backward(x, v, dout, s)
    return dx, dv, {"s": _sum_to(ds, np.shape(s)).astype(x.dtype)}


def sink_backward_grad_zero(x, v, dout, *, s):
    dx, dv, _ = _backward(x, v, dout, s)
    return dx, dv, {"s": np.zeros(np.shape(s), dtype=x.dtype)}


def sink_backward_grad_sign(x, v, dout, *, s):
    dx, dv, ds = _backward(x, v, dout, s)
    return dx, dv, {"s": -_sum_to(ds, np.shape(s)).astype(x.dtype)}


def sink_backward_not_summed(x, v, dout, *, s):
    """The per-row gradient, shaped like the scores' leading dimensions, not like s."""
    dx, dv, ds = _backward(x, v, dout, s)
    return dx, dv, {"s": ds.astype(x.dtype)}


def sink_backward_summed_over_heads(x, v, dout, *, s):
    """Every head gets the sum over all rows, of every head: right for a scalar sink only."""
    dx, dv, ds = _backward(x, v, dout, s)
    return dx, dv, {"s": np.full(np.shape(s), ds.sum(), dtype=x.dtype)}


def sink_online_first_head_only(x, v, block, *, s):
    """Reads s[0] for every head (a per-head sink indexed as if it were shared)."""
    s = np.asarray(s)
    return sink_online(x, v, block, s=s.reshape(-1)[0] if s.ndim else s)


def _head0(a, axis):
    """``a`` with every head's slice along ``axis`` replaced by head 0's (a head stride of 0)."""
    return np.broadcast_to(np.take(a, [0], axis=axis), a.shape).copy()


def sink_online_head0_scores(x, v, block, *, s):
    """Reads the scores and values of head 0 for every head (its own sink, the wrong rows)."""
    if np.ndim(s) == 0:
        return sink_online(x, v, block, s=s)
    return sink_online(_head0(x, -2), _head0(v, -3), block, s=s)


def sink_backward_head0_scores(x, v, dout, *, s):
    """The backward pass of the same fault: head 0's scores and values for every head."""
    if np.ndim(s) == 0:
        return sink_backward(x, v, dout, s=s)
    return sink_backward(_head0(x, -2), _head0(v, -3), dout, s=s)
