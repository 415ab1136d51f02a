"""Flash-style attention kernels with a fixed internal tile of 128 keys, FlashAttention's signature
``fn(q, k, v, causal=False, softmax_scale=None)`` returning ``(out, lse)``, for the soundness review
of ``derive impl --form attention``: faults that live only past the second tile of keys (a causal row
reaches them only for a query at position 256 or later) or past the first tile of queries.

* ``flash``: correct (online rescaling, a fully masked tile skipped).
* ``flash_two_tiles``: faulty, never reads keys past the second tile (256 and later).
* ``flash_rescale_first``: faulty, rescales by the first tile's maximum instead of the running one
  (right with one or two tiles).
* ``flash_window`` (``sliding_window=0`` keyword): correct; ``flash_window_local``: faulty, the window
  compares the query's position with the key's index inside its tile (right in the first tile only).
* ``flash_query_tiles`` (no causal flag): correct, the queries in tiles of 128;
  ``flash_query_tiles_scaled``: faulty, the scores of queries 128 and later are scaled by 1.001 too much.
"""

import math

import numpy as np

BLOCK_N = 128


def _flash(q, k, v, causal, softmax_scale, fault=None, window=0):
    B, H, M, D = q.shape
    N = k.shape[2]
    scale = 1.0 / math.sqrt(D) if softmax_scale is None else softmax_scale
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    m = np.full((B, H, M), -np.inf)
    m_first = None
    ell = np.zeros((B, H, M))
    acc = np.zeros((B, H, M, v.shape[-1]))
    rows = np.arange(M)[:, None]
    for t, lo in enumerate(range(0, N, BLOCK_N)):
        if fault == "two_tiles" and t >= 2:
            break
        hi = min(N, lo + BLOCK_N)
        s = (q @ np.swapaxes(k[:, :, lo:hi], -1, -2)) * scale
        if causal:
            s = np.where(np.arange(lo, hi)[None, :] <= rows, s, -np.inf)
        if window:
            j = np.arange(hi - lo) if fault == "local" else np.arange(lo, hi)
            s = np.where(j[None, :] > rows - window, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1))
        ref = np.where(np.isfinite(m_new), m_new, 0.0)
        old = m_first if fault == "rescale_first" and m_first is not None else m
        alpha = np.exp(old - ref)
        p = np.exp(s - ref[..., None])
        ell = alpha * ell + p.sum(axis=-1)
        acc = alpha[..., None] * acc + p @ v[:, :, lo:hi]
        m_first = m_new if m_first is None else m_first
        m = m_new
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(ell[..., None] > 0, acc / np.where(ell > 0, ell, 1.0)[..., None], 0.0)
        lse = m + np.log(ell)
    return out.astype(q.dtype), lse


def flash(q, k, v, causal=False, softmax_scale=None):
    dt = q.dtype
    out, lse = _flash(q, k, v, causal, softmax_scale)
    return out.astype(dt), lse.astype(dt)


def flash_two_tiles(q, k, v, causal=False, softmax_scale=None):
    dt = q.dtype
    out, lse = _flash(q, k, v, causal, softmax_scale, "two_tiles")
    return out.astype(dt), lse.astype(dt)


def flash_rescale_first(q, k, v, causal=False, softmax_scale=None):
    dt = q.dtype
    out, lse = _flash(q, k, v, causal, softmax_scale, "rescale_first")
    return out.astype(dt), lse.astype(dt)


def flash_window(q, k, v, causal=False, softmax_scale=None, sliding_window=0):
    dt = q.dtype
    out, lse = _flash(q, k, v, causal, softmax_scale, window=sliding_window)
    return out.astype(dt), lse.astype(dt)


def flash_window_local(q, k, v, causal=False, softmax_scale=None, sliding_window=0):
    dt = q.dtype
    out, lse = _flash(q, k, v, causal, softmax_scale, "local", window=sliding_window)
    return out.astype(dt), lse.astype(dt)



def _query_tiles(q, k, v, softmax_scale, fault):
    scale = 1.0 / math.sqrt(q.shape[-1]) if softmax_scale is None else softmax_scale
    outs, lses = [], []
    for t, lo in enumerate(range(0, q.shape[2], BLOCK_N)):
        s = scale * (1.0 + 1e-3) if fault and t >= 1 else scale
        out, lse = _flash(q[:, :, lo:lo + BLOCK_N], k, v, False, s)
        outs.append(out)
        lses.append(lse)
    return np.concatenate(outs, axis=2).astype(q.dtype), np.concatenate(lses, axis=2).astype(q.dtype)


def flash_query_tiles(q, k, v, softmax_scale=None):
    """Correct: the queries in tiles of 128, each streamed over the keys."""
    return _query_tiles(q, k, v, softmax_scale, False)


def flash_query_tiles_scaled(q, k, v, softmax_scale=None):
    """Faulty: every query tile after the first scales its scores by 1.001 too much (queries 128 and later)."""
    return _query_tiles(q, k, v, softmax_scale, True)
