"""Row-wise softmax and softmax₁ as Triton kernels: ``fn(x)``, weights along the last axis.

One program per row loads the whole row (padded to a power of two, the padding −inf) and
writes the weights. For ``derive impl FILE:FN --as softmax|softmax1 --dtype float32``.

* :func:`softmax` — right: e^{x_j − m} / Σ_k e^{x_k − m}, m the row maximum;
* :func:`softmax_unshifted` — faulty: e^{x_j} / Σ_k e^{x_k} without subtracting the maximum,
  which overflows float32 once a score passes ≈ 88.7 (inf / inf = NaN);
* :func:`softmax1` — right softmax₁: e^{x_j − m} / (e^{−m} + Σ_k e^{x_k − m}), m = max(0, max x),
  which is *not* softmax (checked as softmax it must be refuted).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tests.zoo.triton_kernels._host import p2


@triton.jit
def _row_softmax(X, Y, n, N_P2: tl.constexpr, SHIFT: tl.constexpr, ONE: tl.constexpr):
    row = tl.program_id(0)
    j = tl.arange(0, N_P2)
    live = j < n
    x = tl.load(X + row * n + j, mask=live, other=-float("inf"))
    if SHIFT:
        m = tl.max(x, axis=0)
        if ONE:
            m = tl.maximum(m, 0.0)
    else:
        m = 0.0  # BUG (softmax_unshifted): e^x overflows for large scores
    e = tl.exp(x - m)
    den = tl.sum(e, axis=0)
    if ONE:
        den = den + tl.exp(-m)
    tl.store(Y + row * n + j, e / den, mask=live)


def _launch(x, shift, one):
    x = torch.as_tensor(x)
    xr = x.to(torch.float32).reshape(-1, x.shape[-1]).contiguous() if x.numel() else None
    if xr is None:
        return torch.empty(x.shape, dtype=torch.float32)
    r, n = xr.shape
    y = torch.empty_like(xr)
    _row_softmax[(r,)](xr, y, n, N_P2=p2(n), SHIFT=shift, ONE=one)
    return y.reshape(x.shape)


def softmax(x):
    return _launch(x, True, False)


def softmax_unshifted(x):
    return _launch(x, False, False)


def softmax1(x):
    return _launch(x, True, True)
