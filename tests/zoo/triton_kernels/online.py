"""A tiled (online, flash-style) attention forward with a sink, as a Triton kernel.

``fn(x, v, block, *, s) -> (out, lse)``: scores ``x`` (..., n) with −inf for a masked key,
values ``v`` (..., n, dv), the sink logit ``s`` (a float or a tensor broadcasting against
the leading dimensions). One program per row streams the keys in tiles of ``block`` keys
(any ``block`` ≥ 1: the tile is padded to a power of two for ``tl.arange`` and the padding
masked), keeping the running maximum m, the running sum l = Σ e^{x_j − m} and the running
accumulator acc = Σ e^{x_j − m} v_j, each rescaled by e^{m_old − m_new} when m grows.

The sink enters once: the state starts at (m, l, acc) = (s, 1, 0), i.e. as if the sink were
a key of score s and value 0 seen before the first tile. So a row with n = 0 or every key
masked ends with out = 0 and lse = s, which is the definition's value there.

The bug, :func:`sink_online_sink_per_tile`, adds e^{s − m} to l inside the tile loop, as
when the sink term is put next to the tile's own sum: right on rows of one tile, the sink
counted once per tile on longer rows (and never on a row of no tile: 0/0 at n = 0).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tests.zoo.triton_kernels._host import p2, rows


@triton.jit
def _sink_forward(X, V, S, OUT, LSE, n, dv,
                  BLOCK: tl.constexpr, BLOCK_P2: tl.constexpr, DV_P2: tl.constexpr,
                  SINK_PER_TILE: tl.constexpr, LATE: tl.constexpr):
    row = tl.program_id(0)
    s = tl.load(S + row)
    lane = tl.arange(0, BLOCK_P2)
    d = tl.arange(0, DV_P2)
    if SINK_PER_TILE:
        m = -float("inf")
        lsum = 0.0
    else:
        m = s  # the sink is the first "key": score s, value 0
        lsum = 1.0
    acc = tl.zeros([DV_P2], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        keys = start + lane
        live = (lane < BLOCK) & (keys < n)
        x = tl.load(X + row * n + keys, mask=live, other=-float("inf"))
        v = tl.load(V + (row * n + keys[:, None]) * dv + d[None, :],
                    mask=live[:, None] & (d[None, :] < dv), other=0.0)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        if SINK_PER_TILE:
            m_new = tl.maximum(m_new, s)
        m_ref = tl.where(m_new == -float("inf"), 0.0, m_new)  # only without a sink yet
        alpha = tl.exp(m - m_ref)
        if LATE > 0:  # BUG: from tile LATE on, a larger max replaces m without rescaling the state
            alpha = tl.where((start >= LATE * BLOCK) & (m > -float("inf")), 1.0, alpha)
        p = tl.exp(x - m_ref)
        lsum = lsum * alpha + tl.sum(p, axis=0)
        if SINK_PER_TILE:
            lsum = lsum + tl.exp(s - m_ref)  # BUG: the sink joins every tile's sum
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(OUT + row * dv + d, acc / lsum, mask=d < dv)
    tl.store(LSE + row, m + tl.log(lsum))


def _forward(x, v, block, s, sink_per_tile, late=0):
    block = int(block)
    if block < 1:
        raise ValueError(f"block must be at least 1, got {block}")
    xr, vr, sr, lead = rows(x, v, s)
    r, n = xr.shape
    dv = vr.shape[-1]
    out = torch.empty(r, dv, dtype=torch.float32)
    lse = torch.empty(r, dtype=torch.float32)
    if r:
        _sink_forward[(r,)](xr, vr, sr, out, lse, n, dv, BLOCK=block, BLOCK_P2=p2(block), DV_P2=p2(dv),
                            SINK_PER_TILE=sink_per_tile, LATE=late)
    return out.reshape(*lead, dv), lse.reshape(lead)


def sink_online(x, v, block, *, s):
    """Correct: the sink enters the running state once, before the first tile."""
    return _forward(x, v, block, s, False)


def sink_online_sink_per_tile(x, v, block, *, s):
    """Faulty: e^{s − m} is added to the running sum in every tile."""
    return _forward(x, v, block, s, True)


def sink_online_no_rescale_past_20_tiles(x, v, block, *, s):
    """Faulty from the 21st tile on: the running state is not rescaled when the max grows."""
    return _forward(x, v, block, s, False, late=20)
