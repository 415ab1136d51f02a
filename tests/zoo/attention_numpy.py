"""Attention kernels in numpy with their real signatures (``--form attention``), written for
this project after the shape of common eager implementations: q, k, v in the layout (B, H, n, d),
an optional additive mask of shape (B, 1, M, N), optional learned sinks, one logit per head,
appended to the scores as an extra column and dropped after the softmax.

``eager`` is correct. Each faulty twin breaks on one class of input only:

* ``eager_batch0``: every batch reads the queries, keys and values of batch 0 (right for B = 1);
* ``eager_v_at_k``: reads v at the offsets of k, i.e. with k's head dimension as v's row stride
  (right when dv = d);
* ``eager_first_rows``: computes the first 16 queries of a call and repeats the 16th for the
  rest (a kernel launched for one query tile);
* ``eager_no_max``: exponentiates the scores without subtracting the row maximum (right on
  moderate scores, inf/inf = NaN from scores of about 89 in float32);
* ``tiled`` (correct) and ``tiled_no_rescale``: an online forward over key tiles of ``block``
  keys (default 64), the second without rescaling when the maximum grows (right in one tile);
* ``eager_chunked`` (correct) and ``eager_chunked_half``: the keys streamed in chunks of 128, each
  in two halves of 64 (online rescaling between them); the second forgets the second half of a
  final partial chunk, so it is right for N ≤ 64, N = 160 and every length whose last chunk has
  at most 64 keys, and wrong for N = 65 to 128 or 193 to 256 (the fixed list's 200 keys);
* ``eager_chunked_short_tail``: forgets that second half only when it has fewer than 8 keys (a
  remainder loop left out): wrong for N mod 128 in 65 to 71, a length the fixed list has not (200
  keys leave 8): only the search reaches it;
* ``eager_with_weights`` (correct) returns ``(out, weights)``, the weights (B, H, M, N) as an eager
  attention returns them, the sinks' column dropped; its twin ``eager_weights_renormalized``
  renormalizes the weights it returns to sum to 1 after dropping that column (out is right, the
  weights are right without sinks only);
* ``eager_sink_shift``: shifts by the sink instead of the maximum (right for finite sinks in a
  moderate range: ``--assume finite-sinks=-20:20`` is its contract).
"""

from __future__ import annotations

import numpy as np


def _softmax_attend(scores, v, sinks):
    if sinks is not None:
        col = np.broadcast_to(np.asarray(sinks, dtype=scores.dtype).reshape(1, -1, 1, 1),
                              scores.shape[:-1] + (1,))
        scores = np.concatenate([scores, col], axis=-1)
    top = np.max(scores, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    e = np.exp(scores - top)
    w = e / e.sum(axis=-1, keepdims=True)
    if sinks is not None:
        w = w[..., :-1]
    return w @ v


def eager(q, k, v, *, scale, mask=None, sinks=None):
    """softmax(scale·q·kᵀ + mask) v, with the sinks as an extra column when given."""
    scores = (q @ np.swapaxes(k, -1, -2)) * scale
    if mask is not None:
        scores = scores + mask
    return _softmax_attend(scores, v, sinks)


def eager_batch0(q, k, v, *, scale, mask=None, sinks=None):
    """Faulty: batch 0's q, k, v for every batch."""
    B = q.shape[0]
    out = eager(q[:1], k[:1], v[:1], scale=scale, mask=None if mask is None else mask[:1], sinks=sinks)
    return np.repeat(out, B, axis=0)


def eager_v_at_k(q, k, v, *, scale, mask=None, sinks=None):
    """Faulty: v[b, h, j, c] read at k's offset ((b·H + h)·N + j)·d + c."""
    B, H, N, D = k.shape
    Dv = v.shape[-1]
    b, h, j, c = np.ix_(range(B), range(H), range(N), range(Dv))
    flat = np.ascontiguousarray(v).reshape(-1)
    wrong = np.take(flat, ((b * H + h) * N + j) * D + c, mode="wrap")
    return eager(q, k, wrong, scale=scale, mask=mask, sinks=sinks)


def eager_first_rows(q, k, v, *, scale, mask=None, sinks=None):
    """Faulty: the queries after the 16th get the 16th's output."""
    out = eager(q, k, v, scale=scale, mask=mask, sinks=sinks)
    if out.shape[-2] > 16:
        out[..., 16:, :] = out[..., 15:16, :]
    return out


def eager_no_max(q, k, v, *, scale, mask=None, sinks=None):
    """Faulty: no max subtraction (overflows on large scores)."""
    scores = (q @ np.swapaxes(k, -1, -2)) * scale
    if mask is not None:
        scores = scores + mask
    e = np.exp(scores)
    den = e.sum(axis=-1, keepdims=True)
    if sinks is not None:
        den = den + np.exp(np.asarray(sinks, dtype=scores.dtype)).reshape(1, -1, 1, 1)
    return (e / den) @ v


def _logits(q, k, scale, mask, sinks):
    """scale·q·kᵀ + mask, with the sinks as a last column when given."""
    scores = (q @ np.swapaxes(k, -1, -2)) * scale
    if mask is not None:
        scores = scores + mask
    if sinks is not None:
        col = np.broadcast_to(np.asarray(sinks, dtype=scores.dtype).reshape(1, -1, 1, 1), scores.shape[:-1] + (1,))
        scores = np.concatenate([scores, col], axis=-1)
    return scores


def _weights(q, k, scale, mask, sinks):
    scores = _logits(q, k, scale, mask, sinks)
    top = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0))
    w = e / e.sum(axis=-1, keepdims=True)
    return w[..., :-1] if sinks is not None else w


def eager_with_weights(q, k, v, *, scale, mask=None, sinks=None):
    """(out, weights), the weights in (B, H, M, N)."""
    w = _weights(q, k, scale, mask, sinks)
    return w @ v, w


def eager_weights_renormalized(q, k, v, *, scale, mask=None, sinks=None):
    """Faulty weights: renormalized to sum to 1 once the sinks' column is dropped (out is right)."""
    w = _weights(q, k, scale, mask, sinks)
    return w @ v, w / w.sum(axis=-1, keepdims=True)


def eager_sink_shift(q, k, v, *, scale, mask=None, sinks=None):
    """Faulty outside a finite sink range: shifts every row by its sink logit instead of the row
    maximum (NaN at s = −∞, overflow for very negative s), right for moderate finite sinks."""
    scores = (q @ np.swapaxes(k, -1, -2)) * scale
    if mask is not None:
        scores = scores + mask
    s = np.asarray(sinks, dtype=scores.dtype).reshape(1, -1, 1, 1)
    e = np.exp(scores - s)
    return (e / (1 + e.sum(axis=-1, keepdims=True))) @ v


def _tiled(q, k, v, scale, block, sinks, rescale):
    B, H, M, _ = q.shape
    N = k.shape[2]
    s = np.zeros((B, H, M, 1)) - np.inf if sinks is None else np.broadcast_to(
        np.asarray(sinks, dtype=np.float64).reshape(1, -1, 1, 1), (B, H, M, 1))
    m, l, acc = s[..., 0].copy(), np.where(np.isfinite(s[..., 0]), 1.0, 0.0), np.zeros((B, H, M, v.shape[-1]))
    for start in range(0, N, block):
        x = (q @ np.swapaxes(k[:, :, start:start + block], -1, -2)) * scale
        m_new = np.maximum(m, x.max(axis=-1))
        ref = np.where(np.isfinite(m_new), m_new, 0.0)
        alpha = np.exp(m - ref) if rescale else np.ones_like(m)
        p = np.exp(x - ref[..., None])
        l = l * alpha + p.sum(axis=-1)
        acc = acc * alpha[..., None] + p @ v[:, :, start:start + block]
        m = m_new
    return acc / l[..., None]


def tiled(q, k, v, *, scale, block=64, sinks=None):
    """An online (flash-style) forward over key tiles of ``block`` keys, the sinks seeding the state."""
    return _tiled(q, k, v, scale, block, sinks, True)


def tiled_no_rescale(q, k, v, *, scale, block=64, sinks=None):
    """Faulty: the running sum and accumulator are not rescaled when the maximum grows (right in one tile)."""
    return _tiled(q, k, v, scale, block, sinks, False)


def with_params(q, k, v, **params):
    """``fn(q, k, v, **params)``: the scale and the sinks arrive by their first names."""
    return eager(q, k, v, scale=params["scale"], sinks=params.get("sinks"), mask=params.get("mask"))


def needs_temperature(q, k, v, *, scale, temperature):
    """A kernel with a required keyword of no role derive knows."""
    return eager(q, k, v, scale=scale / temperature)


def _chunked(q, k, v, scale, mask, sinks, drop_half, tail=128):
    B, H, M, _ = q.shape
    N = k.shape[2]
    m = np.full((B, H, M, 1), -np.inf)
    l = np.zeros((B, H, M, 1))
    acc = np.zeros((B, H, M, v.shape[-1]))
    if sinks is not None:
        m = np.broadcast_to(np.asarray(sinks, dtype=np.float64).reshape(1, -1, 1, 1), m.shape).copy()
        l = np.ones_like(l)
    for start in range(0, N, 128):
        stop = min(N, start + 128)
        halves = [(start, min(stop, start + 64)), (start + 64, stop)]
        if drop_half and stop == N and stop - start < 128 and stop - start - 64 < tail:
            halves = halves[:1]
        for a, b in halves:
            if a >= b:
                continue
            x = (q @ np.swapaxes(k[:, :, a:b], -1, -2)) * scale
            if mask is not None:
                x = x + mask[..., a:b]
            m_new = np.maximum(m, x.max(axis=-1, keepdims=True))
            ref = np.where(np.isfinite(m_new), m_new, 0.0)
            p = np.exp(x - ref)
            alpha = np.exp(m - ref)
            l = l * alpha + p.sum(axis=-1, keepdims=True)
            acc = acc * alpha + p @ v[:, :, a:b]
            m = m_new
    with np.errstate(invalid="ignore", divide="ignore"):
        return acc / l


def eager_chunked(q, k, v, *, scale, mask=None, sinks=None):
    """Keys in chunks of 128, each in two halves of 64, with online rescaling."""
    return _chunked(q, k, v, scale, mask, sinks, False)


def eager_chunked_half(q, k, v, *, scale, mask=None, sinks=None):
    """Faulty: the second half of a final partial chunk (keys 64 to 127 of it) is never read."""
    return _chunked(q, k, v, scale, mask, sinks, True)


def eager_chunked_short_tail(q, k, v, *, scale, mask=None, sinks=None):
    """Faulty: the second half of a final partial chunk is never read when it has fewer than 8 keys."""
    return _chunked(q, k, v, scale, mask, sinks, True, tail=8)


def eager_lse_base2(q, k, v, *, scale, mask=None, sinks=None):
    """(out, lse₂): the log-sum-exp in base 2 (log₂ Σ, a Triton kernel's units), the sinks included."""
    scores = _logits(q, k, scale, mask, sinks)
    top = np.max(scores, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    total = np.exp(scores - top).sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = (top + np.log(total))[..., 0] / np.log(2.0)
    w = np.exp(scores - top) / np.where(total > 0, total, 1)
    if sinks is not None:
        w = w[..., :-1]
    return w @ v, lse
