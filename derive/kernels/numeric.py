"""Reference kernels in numpy, one row at a time, with a switch for each known fault.

These run the forms of :mod:`derive.kernels.forms` the way a fused kernel does (tiles of
keys, a running max, per-split partial results merged by their log-sum-exp, a backward
pass from the saved lse) so that the document can show a fault on concrete numbers and a
checker can compare an implementation with the same forms. ``fault`` is a key of
:data:`derive.kernels.faults.FAULTS` or ``None``.

Scores ``x`` are raw (the kernel multiplies them by ``scale``); −inf marks a masked key.
``extra`` is the extra logit in score units (a sink s; 0 for softmax₁), ``extra_value``
its value (default 0). Results: ``out`` and the natural, sink-inclusive ``lse``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["backward", "online", "split"]

LOG2E = 1.0 / math.log(2.0)
NEG = -math.inf


def _extra_units(extra, scale, c, fault):
    """The extra logit in the kernel's exponent units (base 2: times log₂e)."""
    e = float(extra)
    if fault == "scale_on_extra":
        e *= scale
    return e if fault == "missing_log2e" else e * c


def online(x, v, block, extra=None, extra_value=None, scale=1.0, base2=True, fault=None, no_tile_nan=False):
    """One row streamed in tiles of ``block`` keys; returns (out, lse).

    With ``base2`` the kernel works in base-2 units like FlashAttention: exponents
    u = x·scale·log₂e and exp2; lse is returned in natural units either way.
    ``no_tile_nan`` is how a real kernel with the extra logit added per tile finalizes a row
    of no key (n = 0, no tile, so ℓ = 0 and acc = 0): out = acc/ℓ = 0/0 = NaN, lse = −∞.
    """
    x, v = np.asarray(x, float), np.asarray(v, float)
    n, dv = v.shape
    ex, c = (np.exp2, LOG2E) if base2 else (np.exp, 1.0)
    wv = np.zeros(dv) if extra_value is None else np.asarray(extra_value, float)
    m, ell, acc = NEG, 0.0, np.zeros(dv)
    e = None if extra is None else _extra_units(extra, scale, c, fault)
    if e is not None and fault not in ("extra_per_tile", "softmax1_unshifted_one"):
        m, ell, acc = e, 1.0, wv.copy()  # the extra key as tile 0
    for lo in range(0, n, block):
        u, vals = scale * x[lo:lo + block] * c, v[lo:lo + block]
        if fault == "extra_per_tile" and e is not None:
            u, vals = np.append(u, e), np.vstack([vals, wv])
        m_new = max(m, float(np.max(u)))
        shift = m_new if m_new > NEG else 0.0  # the guard: a fully masked tile leaves the state as it is
        alpha = float(ex(m - shift)) if m > NEG else 0.0
        p = ex(u - shift)
        ell = (1.0 if fault == "sum_not_rescaled" and m > NEG else alpha) * ell + p.sum()
        acc = (1.0 if fault == "acc_not_rescaled" and m > NEG else alpha) * acc + p @ vals
        m = shift
    if fault == "softmax1_unshifted_one":
        ell += 1.0
    if ell == 0 and no_tile_nan and fault == "extra_per_tile" and e is not None and n == 0:
        return np.full(dv, np.nan), NEG  # no tile: the extra logit never entered, 0/0
    if ell == 0:
        return np.zeros(dv), NEG  # a fully masked row without an extra logit: out = 0, lse = −∞
    return acc / ell, m / c + math.log(ell)


def split(x, v, splits, extra=None, extra_value=None, fault=None, empty_too=False, masked_too=False):
    """The keys cut into ``splits`` contiguous chunks (numpy.array_split order), each reduced to
    (o, lse) by an online pass without the extra logit, then merged; returns (out, lse).

    Two ways kernels realize the split faults: ``empty_too`` (extra_per_tile) seeds every
    split with the extra logit, an empty one too; ``masked_too`` (seeded_twice_empty_split)
    has a fully masked split return the seeded state as an empty one does."""
    x, v = np.asarray(x, float), np.asarray(v, float)
    dv = v.shape[1]
    wv = np.zeros(dv) if extra_value is None else np.asarray(extra_value, float)
    parts = []
    for idx in np.array_split(np.arange(len(x)), splits):
        per = extra if fault == "extra_per_tile" else None
        dead = len(idx) == 0 or (masked_too and bool(np.all(x[idx] == NEG)))
        if per is not None and empty_too and len(idx) == 0:
            parts.append((wv, float(extra)))  # the seeded state of a split with no key
            continue
        if dead and fault == "seeded_twice_empty_split" and extra is not None:
            parts.append((wv, float(extra)))
            continue
        if fault == "nan_empty_split" and (len(idx) == 0 or np.all(x[idx] == NEG)):
            with np.errstate(invalid="ignore"):
                parts.append((np.zeros(dv) / 0.0, NEG))  # 0/0 without the guard
            continue
        o, lse = online(x[idx], v[idx], max(1, len(idx)), per, wv) if len(idx) else (np.zeros(dv), NEG)
        parts.append((o, lse))
    if extra is not None and fault != "extra_per_tile":
        parts.append((wv, float(extra)))  # the extra logit enters once, in the combine
    lses = np.array([p[1] for p in parts])
    top = np.max(lses) if len(lses) else NEG
    if top == NEG:
        return np.zeros(dv), NEG
    weights = np.exp(lses - top)
    lse = top + math.log(weights.sum())
    out = np.zeros(dv)
    for (o, _), wt in zip(parts, np.exp(lses - lse)):
        out = out + wt * o if fault == "nan_empty_split" or wt > 0 else out
    return out, lse


def backward(x, v, dout, extra=None, extra_value=None, fault=None):
    """Recompute-form gradients of L = ⟨dout, out⟩ for one row: (dx, dv, dextra)."""
    x, v, g = np.asarray(x, float), np.asarray(v, float), np.asarray(dout, float)
    wv = np.zeros(v.shape[1]) if extra_value is None else np.asarray(extra_value, float)
    out, lse = split(x, v, 1, extra, wv)
    if fault == "kv_only_lse_backward":
        _, lse = split(x, v, 1, None)
    with np.errstate(invalid="ignore"):
        p = np.exp(x - lse)
    D = float(g @ out)
    dx = p * (v @ g - D)
    dv = p[:, None] * g[None, :]
    if extra is None:
        return dx, dv, None
    with np.errstate(over="ignore", invalid="ignore"):  # a KV-only lse of −∞ (fault 9, every key masked)
        ds = float(np.exp(extra - lse)) * (float(g @ wv) - D)
    ds = {"sink_grad_missing": 0.0, "sink_grad_sign": -ds}.get(fault, ds)
    return dx, dv, ds
