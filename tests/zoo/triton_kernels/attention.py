"""A tiled attention forward with learned sinks and a decode offset, as a Triton kernel.

Written for this project after the shape of public tiled kernels with sinks: q (B, H, M, d),
k (B, H, N, d), v (B, H, N, dv) (layout ``bhnd``), one sink logit per head, the queries at
positions ``start_q + i`` (``start_q`` > 0 when decoding: the keys before it are the cache),
causal by default. One program per tile of ``BLOCK_M`` queries and (batch, head) streams the
keys in tiles of ``BLOCK_N``, in base 2 (the scale times log₂e), with the running state seeded
by the sink: (m, l, acc) = (s·log₂e, 1, 0). Returns (out, lse), lse natural.

``attention`` is correct. Its faulty twin ``attention_skip_before_start`` starts the key loop at
``start_q`` instead of 0, as if the keys before the first query were not visible: right for
prefill (start_q = 0), wrong for every decode call. ``attention_d64`` is ``attention`` behind the
assertion of a kernel written for head dimensions of 64 and up, multiples of 64 (checked with
``--assume min-head-dim=64 --assume head-dim-multiple=64``, no padding adapter).

Checked with ``derive impl tests/zoo/triton_kernels/attention.py:attention --as sink --form
attention --causal --dtype float32 --assume block=pow2`` (no adapter: the sinks, ``sm_scale``
and ``start_q`` are keywords derive knows).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
BLOCK_M = 16
BLOCK_N = 16


@triton.jit
def _attn_fwd(Q, K, V, S, O, L, qk_scale, start_q, M, N, H, DV,
              HEAD_DIM: tl.constexpr, DV_P2: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              CAUSAL: tl.constexpr, SKIP_BEFORE_START: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    h = bh % H
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    vdims = tl.arange(0, DV_P2)
    cols0 = tl.arange(0, BLOCK_N)
    q = tl.load(Q + (bh * M + rows[:, None]) * HEAD_DIM + dims[None, :], mask=rows[:, None] < M, other=0.0)
    s = tl.load(S + h).to(tl.float32) * 1.4426950408889634
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) + s
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, DV_P2], dtype=tl.float32)
    hi = N
    if CAUSAL:
        hi = tl.minimum(N, start_q + (pid_m + 1) * BLOCK_M)
    lo = 0
    if SKIP_BEFORE_START:
        lo = start_q  # BUG: the keys before the first query are visible to it
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + cols0
        k = tl.load(K + (bh * N + cols[None, :]) * HEAD_DIM + dims[:, None], mask=cols[None, :] < N, other=0.0)
        qk = tl.dot(q, k, input_precision="ieee") * qk_scale
        ok = cols[None, :] < N
        if CAUSAL:
            ok = ok & (cols[None, :] <= start_q + rows[:, None])
        qk = tl.where(ok, qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        m_ref = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.math.exp2(qk - m_ref[:, None])
        alpha = tl.math.exp2(m_i - m_ref)
        v = tl.load(V + (bh * N + cols[:, None]) * DV + vdims[None, :],
                    mask=(cols[:, None] < N) & (vdims[None, :] < DV), other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(O + (bh * M + rows[:, None]) * DV + vdims[None, :], out, mask=(rows[:, None] < M) & (vdims[None, :] < DV))
    tl.store(L + bh * M + rows, (m_i + tl.math.log2(l_i)) / 1.4426950408889634, mask=rows < M)


def _forward(q, k, v, sinks, sm_scale, start_q, causal, skip):
    B, H, M, D = q.shape
    N, DV = k.shape[2], v.shape[3]
    if D & (D - 1) or D < 16:
        raise ValueError(f"the head dimension must be a power of two >= 16, got {D}")
    q, k, v = (t.to(torch.float32).contiguous() for t in (q, k, v))
    sinks = torch.as_tensor(sinks, dtype=torch.float32).reshape(H).contiguous()
    out = torch.zeros(B, H, M, DV, dtype=torch.float32)
    lse = torch.zeros(B, H, M, dtype=torch.float32)
    if B * H * M:
        grid = (triton.cdiv(M, BLOCK_M), B * H)
        _attn_fwd[grid](q, k, v, sinks, out, lse, float(sm_scale) * LOG2E, int(start_q), M, N, H, DV,
                        HEAD_DIM=D, DV_P2=triton.next_power_of_2(DV), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                        CAUSAL=bool(causal), SKIP_BEFORE_START=skip)
    return out, lse


def attention(q, k, v, sinks, sm_scale, start_q=0, causal=True):
    """Correct: every key up to the query's position is visible."""
    return _forward(q, k, v, sinks, sm_scale, start_q, causal, False)


def attention_skip_before_start(q, k, v, sinks, sm_scale, start_q=0, causal=True):
    """Faulty: the key loop starts at start_q."""
    return _forward(q, k, v, sinks, sm_scale, start_q, causal, True)


def attention_d64(q, k, v, sinks, sm_scale, start_q=0, causal=True):
    """Correct, for head dimensions of 64 and its multiples only."""
    assert q.shape[-1] >= 64 and q.shape[-1] % 64 == 0 and v.shape[-1] % 64 == 0, "head dimension"
    return attention(q, k, v, sinks, sm_scale, start_q, causal)
