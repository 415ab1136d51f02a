"""Attention kernels in numpy for the one call model (``--form attention``), written for this
project: each correct one beside the faulty twin of a production fault that shows only on one
feature of the call: long rows, large tiles, grouped kv heads, padding, the causal alignment, a
(left, right) window. Every one is checked through its own signature, with no adapter.

Correct:

* ``gqa`` (B, H, M, d) queries, k and v with Hkv heads: query head h reads kv head h // (H / Hkv)
  (``repeat_interleave``, as PyTorch's ``enable_gqa`` and Hugging Face's ``repeat_kv``); sinks per head;
* ``flash_fixed`` an online forward in key tiles of 128 (its own block, hard-coded);
* ``flash_block`` an online forward in tiles of ``block`` keys, and an additive mask;
* ``flash_guarded`` an online forward in tiles of 64 with an additive mask and the −∞ guard;
* ``bottom_right`` causal (a flag) aligned bottom-right (query i at position N − M + i), in the
  FlashAttention layout (B, N, H, d) with GQA, ``softmax_scale`` and ``window_size=(left, right)``;
* ``top_left`` causal aligned top-left (query i at position i), as PyTorch's ``is_causal``;
* ``keep_mask`` / ``drop_mask``: a boolean mask, True where a key is kept / dropped;
* ``flat_heads``: (B, n, H, d) in, the heads merged in an (B, n, H·d) out (``--out-layout bn(hd)``);
* ``grouped_axis``: q as (n, Hkv, G, d) beside k and v as (n, Hkv, d) (``--layout nhgd``), a sink per
  query head, the out flattened to (n, H·d) (``--out-layout n(hgd)``).

Faulty (one production fault each):

* ``gqa_tiled_heads``: kv head h % Hkv (``tile`` for ``repeat_interleave``): right when Hkv = 1 or H;
* ``flash_fixed_1024``: its key loop stops at 1024 keys (the block of 128 hard-coded, the loop bound
  too): right up to 1024 keys;
* ``flash_from_key_1024``: from the 1024th key on, reads the values of the key before;
* ``flash_fixed_tile4``: the 4th tile of 128 keys (keys 384 to 511) reads its values one key late;
* ``flash_key_4096``: the 4096th key (index 4095) is left out (a loop bound of 4095): right up to 4095 keys;
* ``flash_block_256``: a tile buffer of 128 keys: with block = 256 the second half of each tile is
  never read;
* ``flash_unguarded``: no −∞ guard: a tile of 64 keys masked before any visible key makes
  e^(−∞ − (−∞)) = NaN;
* ``bottom_right_window_off_by_one``: keeps key p − left − 1 too (the left edge of the window one key
  wide);
* ``grouped_axis_wrong_group``: reads the sinks as (G, Hkv), the other order of the query heads;
* ``top_left`` is the other alignment's kernel: checked as bottom-right it fails, and the report
  says its output matches top-left.
"""

from __future__ import annotations

import numpy as np


def _softmax_v(x, v, sinks=None):
    """softmax over the last axis of the scores x (B, H, M, N) (sinks as an extra column), times v."""
    if sinks is not None:
        col = np.broadcast_to(np.asarray(sinks, dtype=x.dtype).reshape(1, -1, 1, 1), x.shape[:-1] + (1,))
        x = np.concatenate([x, col], axis=-1)
    top = np.max(x, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    e = np.exp(x - top)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = e / e.sum(axis=-1, keepdims=True)
    if sinks is not None:
        w = w[..., :-1]
    return w @ v


def gqa(q, k, v, *, scale, sinks=None):
    """Grouped-query attention: k, v (B, Hkv, N, d), query head h reads kv head h // (H / Hkv)."""
    groups = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, groups, axis=1), np.repeat(v, groups, axis=1)
    return _softmax_v(q @ np.swapaxes(k, -1, -2) * scale, v, sinks)


def gqa_tiled_heads(q, k, v, *, scale, sinks=None):
    """Faulty: query head h reads kv head h % Hkv."""
    groups = q.shape[1] // k.shape[1]
    k, v = np.tile(k, (1, groups, 1, 1)), np.tile(v, (1, groups, 1, 1))
    return _softmax_v(q @ np.swapaxes(k, -1, -2) * scale, v, sinks)


def _online(q, k, v, scale, block, mask=None, guard=True, stop=None, late=None, half=False):
    """An online (flash-style) forward over key tiles; the faults as switches of the loop."""
    B, H, M, _ = q.shape
    N = k.shape[2]
    m = np.full((B, H, M, 1), -np.inf)
    ell = np.zeros((B, H, M, 1))
    acc = np.zeros((B, H, M, v.shape[-1]))
    end = N if stop is None else min(N, stop)
    for lo in range(0, end, block):
        hi = min(lo + (128 if half and block > 128 else block), N)
        x = q @ np.swapaxes(k[:, :, lo:hi], -1, -2) * scale
        if mask is not None:
            x = x + mask[..., lo:hi]
        vals = v[:, :, lo:hi]
        if late is not None:  # the keys from `late` on read the values of the key before
            idx = np.arange(lo, hi)
            vals = v[:, :, np.where(idx >= late, idx - 1, idx)]
        m_new = np.maximum(m, x.max(axis=-1, keepdims=True))
        ref = np.where(np.isfinite(m_new), m_new, 0.0) if guard else m_new
        with np.errstate(invalid="ignore", over="ignore"):
            p = np.exp(x - ref)
            alpha = np.exp(m - ref)
        ell = ell * alpha + p.sum(axis=-1, keepdims=True)
        acc = acc * alpha + p @ vals
        m = m_new
    with np.errstate(invalid="ignore", divide="ignore"):
        return acc / ell


def flash_fixed(q, k, v, *, scale):
    """Key tiles of 128, hard-coded."""
    return _online(q, k, v, scale, 128)


def flash_fixed_1024(q, k, v, *, scale):
    """Faulty: the key loop stops at 1024 keys."""
    return _online(q, k, v, scale, 128, stop=1024)


def flash_from_key_1024(q, k, v, *, scale):
    """Faulty: from the 1024th key (index 1023) on, the values of the key before."""
    return _online(q, k, v, scale, 128, late=1023)


def flash_key_4096(q, k, v, *, scale):
    """Faulty: the key at index 4095 is never read."""
    N = k.shape[2]
    if N < 4096:
        return _online(q, k, v, scale, 128)
    keep = np.arange(N) != 4095
    return _online(q, k[:, :, keep], v[:, :, keep], scale, 128)


def flash_fixed_tile4(q, k, v, *, scale):
    """Faulty: the 4th tile of 128 keys (keys 384 to 511) reads its values one key late."""
    B, H, M, _ = q.shape
    N = k.shape[2]
    m = np.full((B, H, M, 1), -np.inf)
    ell = np.zeros((B, H, M, 1))
    acc = np.zeros((B, H, M, v.shape[-1]))
    for t, lo in enumerate(range(0, N, 128)):
        hi = min(lo + 128, N)
        x = q @ np.swapaxes(k[:, :, lo:hi], -1, -2) * scale
        vals = v[:, :, lo + 1:hi + 1] if t == 3 and hi < N else v[:, :, lo:hi]
        m_new = np.maximum(m, x.max(axis=-1, keepdims=True))
        p = np.exp(x - m_new)
        alpha = np.exp(m - m_new)
        ell = ell * alpha + p.sum(axis=-1, keepdims=True)
        acc = acc * alpha + p @ vals
        m = m_new
    return acc / ell


def flash_block(q, k, v, *, scale, block=64, mask=None):
    """Key tiles of ``block`` keys, an additive mask."""
    return _online(q, k, v, scale, block, mask)


def flash_block_256(q, k, v, *, scale, block=64, mask=None):
    """Faulty: a tile buffer of 128 keys: past 128, only the first 128 keys of a tile are read."""
    return _online(q, k, v, scale, block, mask, half=True)


def flash_guarded(q, k, v, *, scale, mask=None):
    """Key tiles of 64 with an additive mask; a tile with every key masked leaves the state alone."""
    return _online(q, k, v, scale, 64, mask)


def flash_unguarded(q, k, v, *, scale, mask=None):
    """Faulty: no −∞ guard: a fully masked tile before any visible key gives NaN."""
    return _online(q, k, v, scale, 64, mask, guard=False)


def _positions(M, N, causal, window_size, start):
    pos = start + np.arange(M)[:, None]
    j = np.arange(N)[None, :]
    keep = np.ones((M, N), dtype=bool)
    if causal:
        keep &= j <= pos
    left, right = window_size
    if left >= 0:
        keep &= j >= pos - left
    if right >= 0:
        keep &= j <= pos + right
    return keep


def _flash_layout(q, k, v, softmax_scale, causal, window_size, start, widen=0):
    """q (B, M, H, d), k and v (B, N, Hkv, d): FlashAttention's layout and its GQA."""
    B, M, H, D = q.shape
    N, Hkv = k.shape[1], k.shape[2]
    scale = D ** -0.5 if softmax_scale is None else softmax_scale
    qh, kh, vh = (np.swapaxes(a, 1, 2) for a in (q, k, v))
    kh, vh = np.repeat(kh, H // Hkv, axis=1), np.repeat(vh, H // Hkv, axis=1)
    left = window_size[0] + widen if window_size[0] >= 0 else -1
    keep = _positions(M, N, causal, (left, window_size[1]), start(M, N))
    x = np.where(keep, qh @ np.swapaxes(kh, -1, -2) * scale, -np.inf)
    out = _softmax_v(x, vh)
    out = np.where(keep.any(axis=-1)[None, None, :, None], out, 0.0)  # a query with no key: 0
    return np.swapaxes(out, 1, 2)


def bottom_right(q, k, v, softmax_scale=None, causal=False, window_size=(-1, -1)):
    """FlashAttention-style: (B, N, H, d), GQA, causal aligned bottom-right, window (left, right)."""
    return _flash_layout(q, k, v, softmax_scale, causal, window_size, lambda M, N: N - M)


def bottom_right_window_off_by_one(q, k, v, softmax_scale=None, causal=False, window_size=(-1, -1)):
    """Faulty: the window keeps one key more on its left."""
    return _flash_layout(q, k, v, softmax_scale, causal, window_size, lambda M, N: N - M, widen=1)


def top_left(q, k, v, softmax_scale=None, causal=False, window_size=(-1, -1)):
    """The same, causal aligned top-left (query i at position i), as torch's is_causal."""
    return _flash_layout(q, k, v, softmax_scale, causal, window_size, lambda M, N: 0)


def keep_mask(q, k, v, *, scale, attn_mask=None):
    """A boolean mask, True where a key is kept (PyTorch's convention)."""
    x = q @ np.swapaxes(k, -1, -2) * scale
    if attn_mask is not None:
        x = np.where(attn_mask, x, -np.inf)
    out = _softmax_v(x, v)
    return np.nan_to_num(out) if attn_mask is None else np.where(np.isnan(out), 0.0, out)


def drop_mask(q, k, v, *, scale, mask=None):
    """A boolean mask, True where a key is dropped (``masked_fill(mask, -inf)``)."""
    x = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        x = np.where(mask, -np.inf, x)
    return np.nan_to_num(_softmax_v(x, v))


# ---- faults of the extra logit, named from the one catalogue (derive.kernels.faults) -------------------------


def _sink_softmax(q, k, v, scale, sinks, logit):
    """Attention with the extra logit logit(σ_h, m) per head, m the row's largest score: the faulty twins."""
    x = q @ np.swapaxes(k, -1, -2) * scale
    m = np.max(x, axis=-1, keepdims=True)
    s = logit(np.asarray(sinks, dtype=np.float64).reshape(1, -1, 1, 1), m)
    top = np.maximum(m, s)
    e = np.exp(x - top)
    return (e @ v) / (e.sum(axis=-1, keepdims=True) + np.exp(s - top))


def sink_scaled(q, k, v, *, scale, sinks):
    """Faulty: the score scale 1/√d applied to the sinks with the raw scores q·k."""
    return _sink_softmax(q, k, v, scale, sinks, lambda s, m: s * scale)


def sink_log2e_missing(q, k, v, *, scale, sinks):
    """Faulty: exp2 of the scores times log₂e, but of the sink as it is (σ ln 2 in natural units)."""
    return _sink_softmax(q, k, v, scale, sinks, lambda s, m: s * np.log(2.0))


def sink_unshifted(q, k, v, *, scale, sinks):
    """Faulty: e^σ added to ℓ = Σ e^(x − m) at finalization, unshifted (the logit σ + m)."""
    return _sink_softmax(q, k, v, scale, sinks, lambda s, m: s + m)


def sink_per_tile(q, k, v, *, scale, sinks, block=64):
    """Faulty: an online kernel in tiles of ``block`` keys that adds the sink in every tile (K times)."""
    tiles = max(1, -(-k.shape[-2] // block))
    return _sink_softmax(q, k, v, scale, sinks, lambda s, m: s + np.log(tiles))


def sink_right(q, k, v, *, scale, sinks, block=64):
    """Correct: the same code with the logit as it is."""
    return _sink_softmax(q, k, v, scale, sinks, lambda s, m: s + 0.0 * m)


def sink_values_late(q, k, v, *, scale, sinks):
    """Faulty, but no fault of the extra logit: the last key's value read from the key before."""
    v = v.copy()
    v[..., -1, :] = v[..., -2, :] if v.shape[-2] > 1 else v[..., -1, :]
    return _sink_softmax(q, k, v, scale, sinks, lambda s, m: s + 0.0 * m)


def flash_lse_bhm(q, k, v, softmax_scale=None):
    """Correct, FlashAttention's layouts: q, k, v and out (B, M, H, d), the lse (B, H, M) beside them
    (checked with ``--layout bnhd --lse-layout bhn``)."""
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    x = np.einsum("bmhd,bnhd->bhmn", q, k) * scale
    top = x.max(axis=-1, keepdims=True)
    e = np.exp(x - top)
    ell = e.sum(axis=-1, keepdims=True)
    out = np.einsum("bhmn,bnhd->bmhd", e / ell, v)
    return out, (np.log(ell) + top)[..., 0]


def flash_lse_bhm_base2(q, k, v, softmax_scale=None):
    """Faulty: the lse (B, H, M) in base 2, as a kernel computing exp2 returns it unconverted."""
    out, lse = flash_lse_bhm(q, k, v, softmax_scale)
    return out, lse / np.log(2.0)


def softmax1_unshifted(q, k, v, *, scale):
    """Faulty softmax₁: the 1 of the denominator added beside Σ e^(x − m), unshifted (e^0, not e^(−m))."""
    x = q @ np.swapaxes(k, -1, -2) * scale
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return (e @ v) / (e.sum(axis=-1, keepdims=True) + 1.0)


def flat_heads(q, k, v, *, scale):
    """(B, n, H, d) inputs and an (B, n, H·d) output: the heads concatenated for an output projection."""
    s = np.einsum("bqhd,bkhd->bhqk", q, k) * scale
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    out = np.einsum("bhqk,bkhd->bqhd", w, v)
    return out.reshape(out.shape[0], out.shape[1], -1)


def grouped_axis(Q, K, V, S, sm_scale):
    """Causal; q as (n, Hkv, G, d) and k, v as (n, Hkv, d), one sink per query head as (Hkv·G,), the out
    flattened to (n, Hkv·G·d): the group-axis layout of a reference attention with learned sinks."""
    n, Hkv, G, d = Q.shape
    s = np.einsum("qhgd,khd->hgqk", Q, K) * sm_scale
    s = np.where(np.tri(n, K.shape[0], dtype=bool), s, -np.inf)  # causal over n queries and n keys
    sink = np.broadcast_to(S.reshape(Hkv, G, 1, 1), (Hkv, G, n, 1))
    x = np.concatenate([s, sink], axis=-1)
    w = np.exp(x - x.max(axis=-1, keepdims=True))
    w = (w / w.sum(axis=-1, keepdims=True))[..., :-1]
    out = np.einsum("hgqk,khd->qhgd", w, V)
    return out.reshape(n, -1)


def grouped_axis_wrong_group(Q, K, V, S, sm_scale):
    """Faulty: the sinks indexed as (G, Hkv), the other order of the query heads."""
    n, Hkv, G, d = Q.shape
    return grouped_axis(Q, K, V, np.ascontiguousarray(S.reshape(G, Hkv).T).reshape(-1), sm_scale)
