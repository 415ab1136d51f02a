"""Correct kernels written as plainly as real ones, each self-contained (one function, no fault
switches), as the originals of the mutation benchmark (``benchmarks/bench_mutants.py``):

* ``sink_online``: the online (flash-style) forward with a learned sink s, tiles of ``block`` keys,
  returning (out, natural lse);
* ``sink_split``: the split-KV forward with a sink: ``splits`` parts of the keys, each an
  (out, lse) partial, merged with the sink's partial;
* ``sink_backward``: the backward with a sink, the keys in tiles of 64: (dx, dv, {"s": ds}),
  ds the sum over rows;
* ``attention_gqa_sinks``: an attention kernel as written (``--form attention --gqa``): q (B, H, M, d),
  k and v (B, Hkv, N, d) read by query head h at kv head h // (H / Hkv), one sink logit per head
  seeding the running state, an additive mask (B, 1, M, N), the keys in tiles of 64.

Scores x (..., n) with −inf for a masked key, values v (..., n, dv); s a scalar (or one per row).
"""

import numpy as np


def sink_online(x, v, block, *, s):
    lead, n, dv = x.shape[:-1], x.shape[-1], v.shape[-1]
    R = int(np.prod(lead, dtype=int))
    X = x.reshape(R, n).astype(np.float64)
    V = v.reshape(R, n, dv).astype(np.float64)
    S = np.broadcast_to(np.asarray(s, dtype=np.float64), lead).reshape(-1)
    out = np.zeros((X.shape[0], dv))
    lse = np.zeros(X.shape[0])
    for r in range(X.shape[0]):
        m, ell, acc = S[r], 1.0, np.zeros(dv)
        for lo in range(0, n, block):
            u = X[r, lo:lo + block]
            m_new = max(m, np.max(u))
            if m_new == -np.inf:
                continue
            alpha = np.exp(m - m_new)
            p = np.exp(u - m_new)
            ell = alpha * ell + p.sum()
            acc = alpha * acc + p @ V[r, lo:lo + block]
            m = m_new
        if m == -np.inf:
            lse[r] = -np.inf
        else:
            out[r] = acc / ell
            lse[r] = m + np.log(ell)
    return out.reshape(lead + (dv,)), lse.reshape(lead)


def sink_split(x, v, splits, *, s):
    lead, n, dv = x.shape[:-1], x.shape[-1], v.shape[-1]
    R = int(np.prod(lead, dtype=int))
    X = x.reshape(R, n).astype(np.float64)
    V = v.reshape(R, n, dv).astype(np.float64)
    S = np.broadcast_to(np.asarray(s, dtype=np.float64), lead).reshape(-1)
    out = np.zeros((X.shape[0], dv))
    lse = np.zeros(X.shape[0])
    for r in range(X.shape[0]):
        lses, outs = [S[r]], [np.zeros(dv)]
        for idx in np.array_split(np.arange(n), splits):
            if len(idx) == 0:
                continue
            u = X[r, idx]
            m = np.max(u)
            if m == -np.inf:
                continue
            p = np.exp(u - m)
            ell = p.sum()
            outs.append(p @ V[r, idx] / ell)
            lses.append(m + np.log(ell))
        top = max(lses)
        if top == -np.inf:
            lse[r] = -np.inf
            continue
        w = np.exp(np.array(lses) - top)
        total = w.sum()
        out[r] = sum(wi * oi for wi, oi in zip(w, outs)) / total
        lse[r] = top + np.log(total)
    return out.reshape(lead + (dv,)), lse.reshape(lead)


def sink_backward(x, v, dout, *, s):
    block = 64
    lead, n, dv = x.shape[:-1], x.shape[-1], v.shape[-1]
    R = int(np.prod(lead, dtype=int))
    X = x.reshape(R, n).astype(np.float64)
    V = v.reshape(R, n, dv).astype(np.float64)
    G = dout.reshape(R, dv).astype(np.float64)
    S = np.broadcast_to(np.asarray(s, dtype=np.float64), lead).reshape(-1)
    dx, dV, ds = np.zeros_like(X), np.zeros_like(V), 0.0
    for r in range(X.shape[0]):
        m, ell, acc = S[r], 1.0, np.zeros(dv)
        for lo in range(0, n, block):
            u = X[r, lo:lo + block]
            m_new = max(m, np.max(u))
            if m_new == -np.inf:
                continue
            alpha = np.exp(m - m_new)
            p = np.exp(u - m_new)
            ell = alpha * ell + p.sum()
            acc = alpha * acc + p @ V[r, lo:lo + block]
            m = m_new
        if m == -np.inf:
            continue
        lse = m + np.log(ell)
        D = G[r] @ (acc / ell)
        for lo in range(0, n, block):
            p = np.exp(X[r, lo:lo + block] - lse)
            dx[r, lo:lo + block] = p * (V[r, lo:lo + block] @ G[r] - D)
            dV[r, lo:lo + block] = p[:, None] * G[r][None, :]
        ds = ds - np.exp(S[r] - lse) * D
    return dx.reshape(x.shape), dV.reshape(v.shape), {"s": ds}


def attention_gqa_sinks(q, k, v, *, scale, sinks, mask=None):
    B, H, M, D = q.shape
    Hkv, N, Dv = k.shape[1], k.shape[2], v.shape[3]
    groups = H // Hkv
    block = 64
    out = np.zeros((B, H, M, Dv))
    for b in range(B):
        for h in range(H):
            kv = h // groups
            m = np.full(M, float(sinks[h]))
            ell = np.where(m > -np.inf, 1.0, 0.0)
            acc = np.zeros((M, Dv))
            for lo in range(0, N, block):
                x = q[b, h].astype(np.float64) @ k[b, kv, lo:lo + block].astype(np.float64).T * scale
                if mask is not None:
                    x = x + mask[b, 0, :, lo:lo + block]
                m_new = np.maximum(m, x.max(axis=1))
                ref = np.where(m_new > -np.inf, m_new, 0.0)
                alpha = np.exp(m - ref)
                p = np.exp(x - ref[:, None])
                ell = alpha * ell + p.sum(axis=1)
                acc = alpha[:, None] * acc + p @ v[b, kv, lo:lo + block].astype(np.float64)
                m = m_new
            out[b, h] = np.where(ell[:, None] > 0, acc / np.where(ell > 0, ell, 1.0)[:, None], 0.0)
    return out
