"""Kernel-shaped implementations in torch for ``derive impl --form``, vectorized over the rows
the way a fused kernel's program instances are: online (tiled), split-KV and backward, for
softmax, softmax₁ and a learned sink s, correct and with known kernel faults.

Shapes: scores x (..., n) with −inf for a masked key, values v (..., n, dv).
"""

import math

import torch

NEG = -math.inf


def _online(x, v, block, sigma, fault=None):
    lead, n, dv = x.shape[:-1], x.shape[-1], v.shape[-1]
    seeded = sigma is not None and fault != "extra_per_tile"
    m = torch.full(lead, sigma if seeded else NEG, dtype=x.dtype)
    ell = torch.full(lead, 1.0 if seeded else 0.0, dtype=x.dtype)
    acc = torch.zeros(lead + (dv,), dtype=x.dtype)
    for lo in range(0, n, block):
        u, vals = x[..., lo:lo + block], v[..., lo:lo + block, :]
        if fault == "extra_per_tile" and sigma is not None:
            u = torch.cat([u, torch.full(lead + (1,), sigma, dtype=x.dtype)], -1)
            vals = torch.cat([vals, torch.zeros(lead + (1, dv), dtype=x.dtype)], -2)
        m_new = torch.maximum(m, u.amax(-1))
        shift = m_new if fault == "missing_neg_inf_guard" else \
            torch.where(m_new == NEG, torch.zeros_like(m_new), m_new)  # a fully masked tile
        alpha = torch.exp(m - shift)
        p = torch.exp(u - shift[..., None])
        ell = alpha * ell + p.sum(-1)
        a = torch.where(m > NEG, torch.ones_like(alpha), alpha) if fault == "acc_not_rescaled" else alpha
        acc = a[..., None] * acc + (p[..., None] * vals).sum(-2)
        m = m_new
    if fault == "missing_neg_inf_guard":  # unguarded throughout: acc/ℓ as it comes
        return acc / ell[..., None], m + torch.log(ell)
    ok = ell > 0
    out = torch.where(ok[..., None], acc / torch.where(ok, ell, 1.0)[..., None], torch.zeros_like(acc))
    lse = torch.where(ok, m + torch.log(torch.where(ok, ell, 1.0)), torch.full_like(m, NEG))
    return out, lse


def _split(x, v, splits, sigma, fault=None):
    n = x.shape[-1]
    bounds = [0]
    for k in range(splits):  # numpy.array_split: the first n % splits chunks get one key more
        bounds.append(bounds[-1] + n // splits + (1 if k < n % splits else 0))
    outs, lses = [], []
    for lo, hi in zip(bounds, bounds[1:]):
        o, part_lse = _online(x[..., lo:hi], v[..., lo:hi, :], max(1, hi - lo), None)
        if fault == "nan_empty_split":
            o = torch.where((part_lse == NEG)[..., None], torch.full_like(o, float("nan")), o)  # BUG: 0/0 kept
        outs.append(o)
        lses.append(part_lse)
    if sigma is not None:
        outs.append(torch.zeros_like(outs[0]))
        lses.append(torch.full_like(lses[0], sigma))
    o, part_lse = torch.stack(outs, -2), torch.stack(lses, -1)
    top = part_lse.amax(-1)
    safe = torch.where(top == NEG, torch.zeros_like(top), top)
    w = torch.exp(part_lse - safe[..., None])
    total = w.sum(-1)
    lse = torch.where(total > 0, safe + torch.log(torch.where(total > 0, total, 1.0)), torch.full_like(top, NEG))
    wn = w / torch.where(total > 0, total, 1.0)[..., None]
    if fault == "nan_empty_split":
        out = (wn[..., None] * o).sum(-2)
    else:
        out = (wn[..., None] * torch.where(wn[..., None] > 0, o, torch.zeros_like(o))).sum(-2)
    return out, lse


def _backward(x, v, dout, sigma, fault=None):
    out, lse = _online(x, v, max(1, x.shape[-1]), sigma)
    D = (dout * out).sum(-1)
    safe = torch.where(lse == NEG, torch.full_like(lse, math.inf), lse)  # FlashAttention: P = 0 there
    p = torch.exp(x - safe[..., None])
    dx = p * (torch.einsum("...td,...d->...t", v, dout) - D[..., None])
    dv = p[..., None] * dout[..., None, :]
    ds = None
    if sigma is not None:
        ds = (-torch.exp(sigma - safe) * D).sum()
        if fault == "sink_grad_sign":
            ds = -ds
    return dx, dv, ds


def softmax_online(x, v, block):
    return _online(x, v, block, None)


def softmax1_online(x, v, block):
    return _online(x, v, block, 0.0)


def sink_online(x, v, block, *, s):
    return _online(x, v, block, s)


def softmax_split(x, v, splits):
    return _split(x, v, splits, None)


def sink_split(x, v, splits, *, s):
    return _split(x, v, splits, s)


def softmax1_split(x, v, splits):
    return _split(x, v, splits, 0.0)


def softmax1_backward(x, v, dout):
    return _backward(x, v, dout, 0.0)[:2]


def sink_backward(x, v, dout, *, s):
    dx, dv, ds = _backward(x, v, dout, s)
    return dx, dv, {"s": ds}


def sink_online_extra_per_tile(x, v, block, *, s):
    return _online(x, v, block, s, fault="extra_per_tile")


def softmax_online_unguarded(x, v, block):
    """No −∞ guard: a fully masked tile before any visible key exponentiates against m = −∞."""
    return _online(x, v, block, None, fault="missing_neg_inf_guard")


def softmax_online_acc_not_rescaled(x, v, block):
    return _online(x, v, block, None, fault="acc_not_rescaled")


def sink_split_nan_empty(x, v, splits, *, s):
    return _split(x, v, splits, s, fault="nan_empty_split")


def sink_backward_grad_sign(x, v, dout, *, s):
    dx, dv, ds = _backward(x, v, dout, s, fault="sink_grad_sign")
    return dx, dv, {"s": ds}


def sink_backward_autograd(x, v, dout, *, s):
    """Every gradient by torch autograd through the definition, the sink a float or a tensor that
    broadcasts against the leading dimensions (one per head): autograd sums the sink's gradient
    over the rows that share each entry, which is what --per-head checks."""
    x = x.detach().clone().requires_grad_(True)
    v = v.detach().clone().requires_grad_(True)
    s = torch.as_tensor(s, dtype=x.dtype).detach().clone().requires_grad_(True)
    lse = torch.logsumexp(torch.cat([x, s.expand(x.shape[:-1])[..., None]], -1), -1)
    out = (torch.exp(x - lse[..., None])[..., None] * v).sum(-2)
    (out * dout).sum().backward()
    ds = s.grad if s.grad is not None else torch.zeros_like(s)  # no key anywhere: out does not depend on s
    return x.grad, v.grad, {"s": ds}
