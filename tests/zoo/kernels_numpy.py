"""Kernel-shaped implementations in numpy for ``derive impl --form``: online (tiled), split-KV
and backward, for softmax (no extra logit), softmax₁ (an implicit zero logit) and a learned
sink s, correct and with each known kernel fault (derive/kernels/faults.py).

Shapes: scores x (..., n) with −inf for a masked key, values v (..., n, dv).
"""

import math

import numpy as np

LOG2E = 1.0 / math.log(2.0)
NEG = -math.inf


def _rows(x, v):
    n, dv = x.shape[-1], v.shape[-1]
    rows = int(np.prod(x.shape[:-1], dtype=int))
    return x.reshape(rows, n).astype(np.float64), v.reshape(rows, n, dv).astype(np.float64), x.shape[:-1], dv


def _online_row(x, v, block, sigma, fault=None, base2=False, scale=1.0, finalize=False):
    """(out, natural lse) of one row streamed in tiles of ``block`` keys; the extra logit seeds
    the state (tile 0), or with ``finalize`` enters once after the last tile."""
    dv = v.shape[1]
    if finalize and sigma is not None:
        out, lse = _online_row(x, v, block, None, fault, base2, scale)
        top = max(lse, sigma)
        if top == NEG:
            return out, NEG
        a, b = math.exp(lse - top), math.exp(sigma - top)  # ℓ·e^{m − m'} and e^{σ − m'}, as acc/ℓ and lse
        return out * a / (a + b), top + math.log(a + b)
    ex, c = (np.exp2, LOG2E) if base2 else (np.exp, 1.0)
    m, ell, acc = NEG, 0.0, np.zeros(dv)
    e = None
    if sigma is not None:
        e = sigma * (scale if fault == "scale_on_extra" else 1.0) * (1.0 if fault == "missing_log2e" else c)
        if fault not in ("extra_per_tile", "softmax1_unshifted_one"):
            m, ell = e, 1.0  # the extra logit as tile 0
    for lo in range(0, len(x), block):
        u, vals = (x[lo:lo + block] / scale) * scale * c, v[lo:lo + block]
        if fault == "extra_per_tile" and e is not None:
            u, vals = np.append(u, e), np.vstack([vals, np.zeros(dv)])
        m_new = max(m, float(np.max(u)))
        if m_new == NEG:
            continue  # a fully masked tile
        alpha = float(ex(m - m_new))
        p = ex(u - m_new)
        ell = (1.0 if fault == "sum_not_rescaled" and m > NEG else alpha) * ell + p.sum()
        acc = (1.0 if fault == "acc_not_rescaled" and m > NEG else alpha) * acc + p @ vals
        m = m_new
    if fault == "softmax1_unshifted_one":
        ell += 1.0
    if ell == 0:
        return np.zeros(dv), NEG
    return acc / ell, m / c + math.log(ell)


def _online(x, v, block, sigma, **kw):
    X, V, lead, dv = _rows(x, v)
    res = [_online_row(X[r], V[r], block, sigma, **kw) for r in range(X.shape[0])]
    out = np.array([o for o, _ in res]).reshape(lead + (dv,))
    lse = np.array([part_lse for _, part_lse in res]).reshape(lead)
    return out.astype(x.dtype), lse.astype(x.dtype)


def _split_row(x, v, splits, sigma, fault=None):
    dv = v.shape[1]
    parts = []
    for idx in np.array_split(np.arange(len(x)), splits):
        if len(idx) == 0:
            if fault == "seeded_twice_empty_split" and sigma is not None:
                parts.append((np.zeros(dv), sigma))  # BUG: the seeded state
            elif fault == "nan_empty_split":
                parts.append((np.full(dv, np.nan), NEG))  # BUG: 0/0
            else:
                parts.append((np.zeros(dv), NEG))
            continue
        o, part_lse = _online_row(x[idx], v[idx], len(idx), sigma if fault == "extra_per_tile" else None)
        if fault == "nan_empty_split" and part_lse == NEG:
            o = np.full(dv, np.nan)
        parts.append((o, part_lse))
    if sigma is not None and fault != "extra_per_tile":
        parts.append((np.zeros(dv), sigma))
    lses = np.array([part_lse for _, part_lse in parts])
    top = lses.max()
    if top == NEG:
        return np.zeros(dv), NEG
    lse = top + math.log(np.exp(lses - top).sum())
    out = np.zeros(dv)
    for o, part_lse in parts:
        wgt = math.exp(part_lse - lse)
        if wgt > 0 or fault == "nan_empty_split":
            out = out + wgt * o
    return out, lse


def _split(x, v, splits, sigma, **kw):
    X, V, lead, dv = _rows(x, v)
    res = [_split_row(X[r], V[r], splits, sigma, **kw) for r in range(X.shape[0])]
    return (np.array([o for o, _ in res]).reshape(lead + (dv,)).astype(x.dtype),
            np.array([part_lse for _, part_lse in res]).reshape(lead).astype(x.dtype))


def _backward(x, v, dout, sigma, fault=None):
    X, V, lead, dv = _rows(x, v)
    G = dout.reshape(X.shape[0], dv).astype(np.float64)
    dx, dvv, ds = np.zeros_like(X), np.zeros_like(V), 0.0
    for r in range(X.shape[0]):
        out, lse = _online_row(X[r], V[r], max(1, X.shape[1]), sigma)
        if fault == "kv_only_lse_backward":
            _, lse = _online_row(X[r], V[r], max(1, X.shape[1]), None)
        if lse == NEG:
            continue
        p = np.exp(X[r] - lse)
        D = float(G[r] @ out)
        dx[r] = p * (V[r] @ G[r] - D)
        dvv[r] = p[:, None] * G[r][None, :]
        if sigma is not None:
            ds += math.exp(sigma - lse) * (0.0 - D)
    ds = {"sink_grad_missing": 0.0, "sink_grad_sign": -ds}.get(fault, ds)
    return dx.reshape(x.shape).astype(x.dtype), dvv.reshape(v.shape).astype(x.dtype), ds


# --- correct -----------------------------------------------------------------------------------

def softmax_online(x, v, block):
    return _online(x, v, block, None)


def softmax_online_out_only(x, v, block):
    return _online(x, v, block, None)[0]


def softmax1_online(x, v, block):
    return _online(x, v, block, 0.0)


def softmax1_online_base2(x, v, block):
    return _online(x, v, block, 0.0, base2=True)


def sink_online(x, v, block, *, s):
    return _online(x, v, block, s)


def sink_online_base2_lse(x, v, block, *, s):
    out, lse = _online(x, v, block, s)
    return out, lse * LOG2E


def sink_online_kv_lse(x, v, block, *, s):
    out, _ = _online(x, v, block, s)
    _, lse = _online(x, v, block, None)
    return out, lse


def softmax_split(x, v, splits):
    return _split(x, v, splits, None)


def softmax1_split(x, v, splits):
    return _split(x, v, splits, 0.0)


def sink_split(x, v, splits, *, s):
    return _split(x, v, splits, s)


def softmax_backward(x, v, dout):
    dx, dv, _ = _backward(x, v, dout, None)
    return dx, dv


def softmax1_backward(x, v, dout):
    dx, dv, _ = _backward(x, v, dout, 0.0)
    return dx, dv


def sink_backward(x, v, dout, *, s):
    dx, dv, ds = _backward(x, v, dout, s)
    return dx, dv, {"s": ds}


def sink_backward_no_dparams(x, v, dout, *, s):
    return _backward(x, v, dout, s)[:2]


# --- faulty: one known kernel fault each ----------------------------------------------------------

def sink_online_extra_per_tile(x, v, block, *, s):
    return _online(x, v, block, s, fault="extra_per_tile")


def sink_online_extra_per_tile_unguarded(x, v, block, *, s):
    """As the Triton twin does it: the sink joins every tile's sum and the row ends with acc/ℓ
    unguarded, so a row of no key (no tile: ℓ = 0) is 0/0 = NaN."""
    out, lse = _online(x, v, block, s, fault="extra_per_tile")
    if x.shape[-1] == 0:
        out = np.full(out.shape, np.nan, dtype=out.dtype)
    return out, lse


def sink_online_missing_log2e(x, v, block, *, s):
    return _online(x, v, block, s, fault="missing_log2e", base2=True)


def sink_online_scale_on_extra(x, v, block, *, s):
    return _online(x, v, block, s, fault="scale_on_extra", scale=1.0 / 8.0)  # head dim 64


def softmax1_online_unshifted_one(x, v, block):
    return _online(x, v, block, 0.0, fault="softmax1_unshifted_one")


def softmax1_online_unshifted_one_out(x, v, block):
    return _online(x, v, block, 0.0, fault="softmax1_unshifted_one")[0]


def softmax1_online_finalized(x, v, block):
    return _online(x, v, block, 0.0, finalize=True)


def softmax1_online_finalized_sum_not_rescaled(x, v, block):
    return _online(x, v, block, 0.0, fault="sum_not_rescaled", finalize=True)


def sink_online_finalized_acc_not_rescaled(x, v, block, *, s):
    return _online(x, v, block, s, fault="acc_not_rescaled", finalize=True)


def softmax_online_acc_not_rescaled(x, v, block):
    return _online(x, v, block, None, fault="acc_not_rescaled")


def softmax1_online_sum_not_rescaled(x, v, block):
    return _online(x, v, block, 0.0, fault="sum_not_rescaled")


def sink_split_extra_per_split(x, v, splits, *, s):
    return _split(x, v, splits, s, fault="extra_per_tile")


def sink_split_seeded_twice(x, v, splits, *, s):
    return _split(x, v, splits, s, fault="seeded_twice_empty_split")


def softmax1_split_nan_empty(x, v, splits):
    return _split(x, v, splits, 0.0, fault="nan_empty_split")


def softmax1_backward_kv_only_lse(x, v, dout):
    dx, dv, _ = _backward(x, v, dout, 0.0, fault="kv_only_lse_backward")
    return dx, dv


def sink_backward_grad_missing(x, v, dout, *, s):
    dx, dv, ds = _backward(x, v, dout, s, fault="sink_grad_missing")
    return dx, dv, {"s": ds}


def sink_backward_grad_sign(x, v, dout, *, s):
    dx, dv, ds = _backward(x, v, dout, s, fault="sink_grad_sign")
    return dx, dv, {"s": ds}


# --- faulty in ways no known kernel fault describes ------------------------------------------------

def softmax_online_drops_last_tile(x, v, block):
    """Only whole tiles: the keys of a last, partial tile are never seen."""
    n = x.shape[-1]
    whole = n - n % block
    return _online(x[..., :whole], v[..., :whole, :], block, None)


def _unguarded_row(x, v, block):
    dv = v.shape[1]
    m, ell, acc = NEG, 0.0, np.zeros(dv)
    with np.errstate(all="ignore"):
        for lo in range(0, len(x), block):
            u, vals = x[lo:lo + block], v[lo:lo + block]
            m_new = max(m, float(np.max(u)))
            alpha = np.exp(m - m_new)  # BUG: −inf − (−inf) = NaN on a fully masked tile
            p = np.exp(u - m_new)
            ell, acc, m = alpha * ell + p.sum(), alpha * acc + p @ vals, m_new
        return acc / ell, m + np.log(ell)


def softmax_online_unguarded(x, v, block):
    X, V, lead, dv = _rows(x, v)
    res = [_unguarded_row(X[r], V[r], block) for r in range(X.shape[0])]
    return (np.array([o for o, _ in res]).reshape(lead + (dv,)).astype(x.dtype),
            np.array([part_lse for _, part_lse in res]).reshape(lead).astype(x.dtype))


def softmax_online_short_tail(x, v, block):
    """A tail path that returns before storing: when a last tile of exactly 3 keys follows full
    tiles, out is left as allocated (zeros). The fixed list has no such partition; the search
    draws one (tiles of 5 keys, n = 8)."""
    n = x.shape[-1]
    out, lse = _online(x, v, block, None)
    if n > block and n % block == 3:
        out = np.zeros_like(out)
    return out, lse


def _late_no_rescale_row(x, v, block, sigma):
    """A sink kernel whose running state is rescaled for the first 17 tiles only: from the 18th
    tile on a larger maximum replaces m without scaling ℓ and acc by e^{m − m'} (a bug that only
    a row of more than 17 tiles shows)."""
    dv = v.shape[1]
    m, ell, acc = (sigma, 1.0, np.zeros(dv)) if sigma > NEG else (NEG, 0.0, np.zeros(dv))
    for tile, lo in enumerate(range(0, len(x), block)):
        u, vals = x[lo:lo + block], v[lo:lo + block]
        m_new = max(m, float(np.max(u)))
        if m_new == NEG:
            continue
        alpha = 1.0 if tile >= 17 and m > NEG else math.exp(m - m_new)  # BUG from tile 18 on
        p = np.exp(u - m_new)
        ell, acc, m = alpha * ell + p.sum(), alpha * acc + p @ vals, m_new
    if ell == 0:
        return np.zeros(dv), NEG
    return acc / ell, m + math.log(ell)


def sink_online_no_rescale_past_17_tiles(x, v, block, *, s):
    X, V, lead, dv = _rows(x, v)
    res = [_late_no_rescale_row(X[r], V[r], block, float(s)) for r in range(X.shape[0])]
    return (np.array([o for o, _ in res]).reshape(lead + (dv,)).astype(x.dtype),
            np.array([part_lse for _, part_lse in res]).reshape(lead).astype(x.dtype))
