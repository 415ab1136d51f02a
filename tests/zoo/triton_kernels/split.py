"""Split-KV attention with a sink (flash-decoding style): partial and combine Triton kernels.

``fn(x, v, splits, *, s) -> (out, lse)``, shapes and sink as in :mod:`.online`. The keys of
a row are cut into ``splits`` contiguous chunks in ``numpy.array_split`` order (the first
n mod splits chunks have ⌈n/splits⌉ keys, the others ⌊n/splits⌋; some are empty when
splits > n, some fully masked). The partial kernel, one program per (row, split), streams
its chunk in tiles and writes (m_k, l_k, acc_k): the chunk's maximum (−inf for an empty or
fully masked chunk), l_k = Σ e^{x_j − m_k} and acc_k = Σ e^{x_j − m_k} v_j (0 and 0 there).
The combine kernel, one program per row, merges them with the sink, which enters exactly
once: m = max(s, max_k m_k), l = e^{s − m} + Σ_k e^{m_k − m} l_k, out = Σ_k e^{m_k − m} acc_k / l,
lse = m + log l.

Two bugs, both in how often the sink is counted:

* :func:`sink_split_sink_per_split` — every partial starts from the sink's state (s, 1, 0),
  as when the single-pass kernel is reused per split, and the combine adds nothing: the
  sink is counted ``splits`` times (right only with one split);
* :func:`sink_split_empty_as_sink` — a partial that saw no live key reports the sink's
  state (s, 1, 0) instead of (−inf, 0, 0) "so that the merge never meets −inf", and the
  combine adds the sink as well: the sink is counted once more per empty or fully masked
  chunk (right whenever every chunk has a live key).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tests.zoo.triton_kernels._host import p2, rows

TILE = 4  # keys per tile inside a chunk; small so that chunks span several tiles


@triton.jit
def _sink_partial(X, V, S, M, L, ACC, n, dv, splits,
                  TILE_: tl.constexpr, DV_P2: tl.constexpr,
                  SINK_IN_PARTIAL: tl.constexpr, EMPTY_AS_SINK: tl.constexpr):
    row = tl.program_id(0)
    k = tl.program_id(1)
    q = n // splits
    extra = n % splits
    begin = k * q + tl.minimum(k, extra)  # numpy.array_split's chunk k
    size = q + (k < extra).to(tl.int32)
    s = tl.load(S + row)
    lane = tl.arange(0, TILE_)
    d = tl.arange(0, DV_P2)
    if SINK_IN_PARTIAL:
        m = s  # BUG: every split starts from the sink
        lsum = 1.0
    else:
        m = -float("inf")
        lsum = 0.0
    acc = tl.zeros([DV_P2], dtype=tl.float32)
    for start in range(0, size, TILE_):
        keys = begin + start + lane
        live = start + lane < size
        x = tl.load(X + row * n + keys, mask=live, other=-float("inf"))
        v = tl.load(V + (row * n + keys[:, None]) * dv + d[None, :],
                    mask=live[:, None] & (d[None, :] < dv), other=0.0)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        m_ref = tl.where(m_new == -float("inf"), 0.0, m_new)  # a chunk masked so far
        alpha = tl.exp(m - m_ref)
        p = tl.exp(x - m_ref)
        lsum = lsum * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    if EMPTY_AS_SINK:
        if m == -float("inf"):  # BUG: an empty chunk reports the sink's state
            m = s
            lsum = 1.0
    slot = row * splits + k
    tl.store(M + slot, m)
    tl.store(L + slot, lsum)
    tl.store(ACC + slot * dv + d, acc, mask=d < dv)


@triton.jit
def _sink_combine(M, L, ACC, S, OUT, LSE, dv, splits,
                  SPLITS_P2: tl.constexpr, DV_P2: tl.constexpr, SINK_IN_COMBINE: tl.constexpr):
    row = tl.program_id(0)
    k = tl.arange(0, SPLITS_P2)
    d = tl.arange(0, DV_P2)
    have = k < splits
    s = tl.load(S + row)
    mk = tl.load(M + row * splits + k, mask=have, other=-float("inf"))
    lk = tl.load(L + row * splits + k, mask=have, other=0.0)
    acck = tl.load(ACC + (row * splits + k[:, None]) * dv + d[None, :],
                   mask=have[:, None] & (d[None, :] < dv), other=0.0)
    m = tl.max(mk, axis=0)
    if SINK_IN_COMBINE:
        m = tl.maximum(m, s)
    m_ref = tl.where(m == -float("inf"), 0.0, m)
    w = tl.exp(mk - m_ref)  # 0 for an empty or fully masked chunk
    lsum = tl.sum(w * lk, axis=0)
    if SINK_IN_COMBINE:
        lsum = lsum + tl.exp(s - m_ref)  # the sink, once
    acc = tl.sum(w[:, None] * acck, axis=0)
    tl.store(OUT + row * dv + d, acc / lsum, mask=d < dv)
    tl.store(LSE + row, m + tl.log(lsum))


def _split(x, v, splits, s, sink_in_partial, empty_as_sink):
    splits = int(splits)
    if splits < 1:
        raise ValueError(f"splits must be at least 1, got {splits}")
    xr, vr, sr, lead = rows(x, v, s)
    r, n = xr.shape
    dv = vr.shape[-1]
    m = torch.empty(r, splits, dtype=torch.float32)
    lsum = torch.empty(r, splits, dtype=torch.float32)
    acc = torch.empty(r, splits, dv, dtype=torch.float32)
    out = torch.empty(r, dv, dtype=torch.float32)
    lse = torch.empty(r, dtype=torch.float32)
    if r:
        _sink_partial[(r, splits)](xr, vr, sr, m, lsum, acc, n, dv, splits, TILE_=TILE, DV_P2=p2(dv),
                                   SINK_IN_PARTIAL=sink_in_partial, EMPTY_AS_SINK=empty_as_sink)
        _sink_combine[(r,)](m, lsum, acc, sr, out, lse, dv, splits, SPLITS_P2=p2(splits), DV_P2=p2(dv),
                            SINK_IN_COMBINE=not sink_in_partial)
    return out.reshape(*lead, dv), lse.reshape(lead)


def sink_split(x, v, splits, *, s):
    """Correct: partials without the sink, the sink once in the combine."""
    return _split(x, v, splits, s, False, False)


def sink_split_sink_per_split(x, v, splits, *, s):
    """Faulty: every partial includes the sink; counted ``splits`` times."""
    return _split(x, v, splits, s, True, False)


def sink_split_empty_as_sink(x, v, splits, *, s):
    """Faulty: an empty or fully masked chunk reports the sink's state; the sink is counted
    once more per such chunk."""
    return _split(x, v, splits, s, False, True)
