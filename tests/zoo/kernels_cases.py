"""Kernel-shaped numpy code for the cases a kernel check must judge right at real sizes: faults
that appear only past key 64, past the 8th row, past tile 20, with blocks over 32, head
dimensions of 64 and more, a batch of two; correct kernels written the way real ones are (a
sink gradient as −Σ dS returned as a numpy scalar, (B, H, n) with ``s[h]``, ``**params``,
finfo.min masking, an lse of +∞ for a fully masked row); and faults the diagnosis must name
(the stored −∞ guard, a split combine in base 2 without log₂e, an unshifted +1 in the combine,
an lse-only fault, a sink kernel called without a sink, the KV-only lse in the backward).

Shapes: scores x (..., n) with −inf for a masked key, values v (..., n, dv).
"""

import math

import numpy as np

from tests.zoo.kernels_numpy import NEG, _online_row, _rows, _split_row

LOG2E = 1.0 / math.log(2.0)


def _each_row(fn, x, v, third, s):
    X, V, lead, dv = _rows(x, v)
    S = np.broadcast_to(np.asarray(s, np.float64), lead).reshape(-1) if s is not None else [None] * X.shape[0]
    res = [fn(r, X[r], V[r], third, None if S[r] is None else float(S[r])) for r in range(X.shape[0])]
    return (np.array([o for o, _ in res]).reshape(lead + (dv,)).astype(x.dtype),
            np.array([lse for _, lse in res]).reshape(lead).astype(x.dtype))


def _row(x, v, block, sigma, late_tile=None, rescale_big=True):
    """One row in tiles of ``block`` keys, the extra logit seeded; from tile ``late_tile`` on (or,
    without ``rescale_big``, once the block exceeds 32) a larger max replaces m without rescaling."""
    dv = v.shape[1]
    m, ell, acc = (sigma, 1.0, np.zeros(dv)) if sigma is not None and sigma > NEG else (NEG, 0.0, np.zeros(dv))
    for tile, lo in enumerate(range(0, len(x), block)):
        u, vals = x[lo:lo + block], v[lo:lo + block]
        m_new = max(m, float(np.max(u)))
        if m_new == NEG:
            continue
        stale = (late_tile is not None and tile >= late_tile) or (not rescale_big and block > 32)
        alpha = 1.0 if stale and m > NEG else math.exp(m - m_new)
        p = np.exp(u - m_new)
        ell, acc, m = alpha * ell + p.sum(), alpha * acc + p @ vals, m_new
    if ell == 0:
        return np.zeros(dv), NEG
    return acc / ell, m + math.log(ell)


# --- correct, written as real kernels are ---------------------------------------------------------

def sink_online_bhn(x, v, block, *, s):
    """Written for (B, H, n) with one sink per head, s[h]: refuses anything else."""
    B, H, n = x.shape
    assert s.shape == (H,), "one sink per head"
    out, lse = np.zeros((B, H, v.shape[-1])), np.zeros((B, H))
    for b in range(B):
        for h in range(H):
            out[b, h], lse[b, h] = _online_row(x[b, h].astype(np.float64), v[b, h].astype(np.float64), block,
                                               float(s[h]))
    return out.astype(x.dtype), lse.astype(x.dtype)


def sink_online_kwargs(x, v, block, **params):
    """The normalizer's parameters taken as ``**params``, as the docs' table writes them."""
    return _each_row(lambda r, xr, vr, b, s: _online_row(xr, vr, b, s), x, v, block, params["s"])


def sink_backward_ds_from_dS(x, v, dout, *, s):
    """ds = −Σ_t dS_t (docs/kernels.md §5), returned as ``dS.sum()`` gives it: a numpy scalar of
    the dtype (np.float32 in float32)."""
    X, V, lead, dv = _rows(x, v)
    G = dout.reshape(X.shape[0], dv).astype(np.float64)
    dx, dvv = np.zeros_like(X), np.zeros_like(V)
    for r in range(X.shape[0]):
        out, lse = _online_row(X[r], V[r], max(1, X.shape[1]), float(s))
        if lse == NEG:
            continue
        p = np.exp(X[r] - lse)
        dx[r] = p * (V[r] @ G[r] - float(G[r] @ out))
        dvv[r] = p[:, None] * G[r][None, :]
    dS = dx.astype(x.dtype)
    return dx.reshape(x.shape).astype(x.dtype), dvv.reshape(v.shape).astype(x.dtype), {"s": -dS.sum()}


def softmax_online_finfo_min(x, v, block):
    """Masks with finfo(dtype).min instead of −inf (Hugging Face style): a fully masked row is a
    row of equal scores, its output the mean of the values (the uniform convention)."""
    low = np.finfo(x.dtype).min
    y = np.where(x == NEG, low, x).astype(np.float64)
    return _each_row(lambda r, xr, vr, b, s: _online_row(xr, vr, b, None), y, v, block, None)


def softmax_online_lse_plus_inf(x, v, block):
    """FlashAttention's convention: a fully masked row stores lse = +∞."""
    out, lse = _each_row(lambda r, xr, vr, b, s: _online_row(xr, vr, b, None), x, v, block, None)
    return out, np.where(lse == NEG, np.inf, lse).astype(x.dtype)


# --- faults that only real sizes show ------------------------------------------------------------

def sink_online_drops_keys_past_64(x, v, block, *, s):
    """A fixed buffer of 64 keys: keys from the 65th on are never read."""
    return _each_row(lambda r, xr, vr, b, sg: _online_row(xr[:64], vr[:64], b, sg), x, v, block, s)


def sink_online_late_rows(x, v, block, *, s):
    """Rows after the 8th of a call forget the sink (a per-row offset table of 8 entries)."""
    return _each_row(lambda r, xr, vr, b, sg: _online_row(xr, vr, b, sg if r < 8 else None), x, v, block, s)


def sink_online_no_rescale_past_20_tiles(x, v, block, *, s):
    """The running state is not rescaled from the 21st tile on."""
    return _each_row(lambda r, xr, vr, b, sg: _row(xr, vr, b, sg, late_tile=20), x, v, block, s)


def sink_online_big_blocks(x, v, block, *, s):
    """Correct for tiles of up to 32 keys; with larger tiles (64, 128) the state is not rescaled."""
    return _each_row(lambda r, xr, vr, b, sg: _row(xr, vr, b, sg, rescale_big=False), x, v, block, s)


def sink_online_head_dim_chunks(x, v, block, *, s):
    """A head dimension that is a multiple of 8 and above 32 is processed in chunks of 32 columns,
    and the last chunk is written from the first one's columns."""
    out, lse = _each_row(lambda r, xr, vr, b, sg: _online_row(xr, vr, b, sg), x, v, block, s)
    dv = out.shape[-1]
    if dv % 8 == 0 and dv > 32:
        out = out.copy()
        out[..., dv - 32:] = out[..., :32]
    return out, lse


def sink_online_batch0(x, v, block, *, s):
    """Every batch of a (B, H, n) call reads batch 0's scores and values."""
    if x.ndim == 3 and x.shape[0] > 1:
        x = np.broadcast_to(x[:1], x.shape)
        v = np.broadcast_to(v[:1], v.shape)
    return _each_row(lambda r, xr, vr, b, sg: _online_row(xr, vr, b, sg), x, v, block, s)


# --- faults the diagnosis must name --------------------------------------------------------------

def _guard_stored_row(x, v, block, sigma):
    dv = v.shape[1]
    m, ell, acc = NEG, 0.0, np.zeros(dv)
    for lo in range(0, len(x), block):
        u, vals = x[lo:lo + block], v[lo:lo + block]
        m_new = max(m, float(np.max(u)))
        shift = m_new if m_new > NEG else 0.0  # the guard ...
        alpha = math.exp(m - shift) if m > NEG else 0.0
        p = np.exp(u - shift)
        ell, acc, m = alpha * ell + p.sum(), alpha * acc + p @ vals, shift  # ... kept as the running max
    if ell == 0:
        return np.zeros(dv), NEG
    return acc / ell, m + math.log(ell)


def softmax_online_guard_stored(x, v, block):
    """The −∞ guard 0 stored as the running max after a fully masked tile."""
    return _each_row(lambda r, xr, vr, b, s: _guard_stored_row(xr, vr, b, None), x, v, block, None)


def _split_base2_row(x, v, splits, sigma, log2e_on_sink=True, unshifted=False):
    """Split-KV in base 2: each split's (o, lse₂), merged with the extra logit in base 2."""
    dv = v.shape[1]
    parts = []
    for idx in np.array_split(np.arange(len(x)), splits):
        o, lse = _online_row(x[idx], v[idx], max(1, len(idx)), None) if len(idx) else (np.zeros(dv), NEG)
        parts.append((o, lse * LOG2E if lse > NEG else NEG))
    top = max(p[1] for p in parts)
    ell = sum(2.0 ** (p[1] - top) for p in parts if p[1] > NEG) if top > NEG else 0.0
    acc = sum(2.0 ** (p[1] - top) * p[0] for p in parts if p[1] > NEG) if top > NEG else np.zeros(dv)
    if sigma is not None and sigma > NEG:
        if unshifted:
            ell += 2.0 ** (sigma * LOG2E)  # e^σ added to ℓ = Σ 2^{lse₂ − top} without the shift
        else:
            s2 = sigma * LOG2E if log2e_on_sink else sigma
            if top == NEG:
                top, ell, acc = s2, 1.0, np.zeros(dv)
            else:
                new = max(top, s2)
                ell, acc = ell * 2.0 ** (top - new) + 2.0 ** (s2 - new), acc * 2.0 ** (top - new)
                top = new
    if ell == 0:
        return np.zeros(dv), NEG
    return acc / ell, (top + math.log2(ell)) / LOG2E


def sink_split_missing_log2e(x, v, splits, *, s):
    """A base-2 combine that adds the sink as 2^{s − m₂}: log₂e missing on the sink."""
    return _each_row(lambda r, xr, vr, k, sg: _split_base2_row(xr, vr, k, sg, log2e_on_sink=False), x, v, splits, s)


def softmax1_split_unshifted_one(x, v, splits):
    """softmax₁ by split-KV whose combine adds the 1 unshifted to ℓ = Σ_r 2^{lse_r − m}."""
    return _each_row(lambda r, xr, vr, k, sg: _split_base2_row(xr, vr, k, 0.0, unshifted=True), x, v, splits, None)


def sink_online_lse_per_tile(x, v, block, *, s):
    """out is right; the lse adds the sink once per tile."""
    def row(r, xr, vr, b, sg):
        out, _ = _online_row(xr, vr, b, sg)
        _, lse = _online_row(xr, vr, b, sg, fault="extra_per_tile")
        return out, lse
    return _each_row(row, x, v, block, s)


def attention_sink_default_zero(x, v, block, s=0.0):
    """A sink kernel whose sink defaults to 0: called without one (as softmax), it computes softmax₁."""
    return _each_row(lambda r, xr, vr, b, sg: _online_row(xr, vr, b, sg), x, v, block, s)


def _kv_backward(x, v, dout, s, p_only):
    X, V, lead, dv = _rows(x, v)
    G = dout.reshape(X.shape[0], dv).astype(np.float64)
    dx, dvv, ds = np.zeros_like(X), np.zeros_like(V), 0.0
    for r in range(X.shape[0]):
        out, lse = _online_row(X[r], V[r], max(1, X.shape[1]), float(s))
        top = float(np.max(X[r])) if X.shape[1] else NEG
        kv = top + math.log(np.exp(X[r] - top).sum()) if top > NEG else NEG
        with np.errstate(all="ignore"):
            p = np.exp(X[r] - kv)
            D = float(G[r] @ out)
            dx[r] = p * (V[r] @ G[r] - D)
            dvv[r] = p[:, None] * G[r][None, :]
            ds += math.exp(float(s) - (lse if p_only else kv)) * (0.0 - D) if (p_only or kv > NEG) else math.nan
    return dx.reshape(x.shape).astype(x.dtype), dvv.reshape(v.shape).astype(x.dtype), {"s": ds}


def sink_backward_kv_only_lse_nan(x, v, dout, *, s):
    """The KV-only lse in the backward, unguarded: at n = 0 the sink gradient is e^{s + ∞}·0 = NaN."""
    return _kv_backward(x, v, dout, s, p_only=False)


def sink_backward_kv_only_p(x, v, dout, *, s):
    """The KV-only lse rebuilds P only; the sink's gradient uses the right lse."""
    return _kv_backward(x, v, dout, s, p_only=True)


def sink_online_extra_per_tile_odd_empty(x, v, block, *, s):
    """The extra logit per tile, and a row of no key returns 5 (neither 0 nor NaN): no fault model
    gives that row, so none may be named against it."""
    out, lse = _each_row(lambda r, xr, vr, b, sg: _online_row(xr, vr, b, sg, fault="extra_per_tile"), x, v, block, s)
    if x.shape[-1] == 0:
        out = np.full_like(out, 5.0)
    return out, lse


def sink_online_fixed_tiles(x, v, block, *, s):
    """Tiles of 64 keys whatever ``block`` says (a wrapper that fixes the kernel's tile size)."""
    return _each_row(lambda r, xr, vr, b, sg: _online_row(xr, vr, 64, sg), x, v, block, s)
