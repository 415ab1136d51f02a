"""Exact arithmetic for the attention reference: the scores scale·⟨q_i, k_j⟩ (+ a finite bias) of the
inputs as passed, and sums of products rounded once.

Every float is an integer times a power of two, so a dot product is an integer sum: in float64 when
every product and partial sum is an integer below 2^53 (:func:`float_scores`, the fast path: the
whole score matrix in one product), else in FLINT's integers (:func:`exact_dots`) and as exact
``arb`` balls (:func:`score`). :func:`dot` sums products as if in twice the working precision
(Ogita, Rump and Oishi's Dot2), in key order, so the same on every machine.
"""

from __future__ import annotations

import math

import numpy as np
from flint import arb, arf, ctx, fmpz_mat

__all__ = ["binary", "dot", "exact_dots", "float_scores", "score"]


def _as_ints(a: np.ndarray) -> tuple[np.ndarray, int]:
    """(an object array of Python ints, e): a == ints · 2^e exactly (a finite)."""
    a = np.asarray(a, dtype=np.float64)
    mant, exp = np.frexp(a)
    m = (mant * 2.0**53).astype(np.int64)  # exact: a 53-bit mantissa
    e = exp.astype(np.int64) - 53
    nz = m != 0
    base = int(e[nz].min()) if nz.any() else 0
    ints = np.empty(a.shape, dtype=object)
    for idx in np.ndindex(a.shape):
        ints[idx] = int(m[idx]) << int(e[idx] - base) if m[idx] else 0
    return ints, base


def exact_dots(q: np.ndarray, k: np.ndarray) -> tuple[list, int]:
    """⟨q_i, k_j⟩ for q (M, d), k (N, d) exactly: (M rows of N integers (flint fmpz), e), value ints · 2^e
    (one integer matrix product in FLINT)."""
    qi, eq = _as_ints(q)
    ki, ek = _as_ints(k)
    (M, d), N = qi.shape, ki.shape[0]
    return (fmpz_mat(M, d, qi.ravel().tolist()) * fmpz_mat(d, N, ki.T.ravel().tolist())).tolist(), eq + ek


def _low_bit(a: np.ndarray) -> int | None:
    """The exponent of the lowest set bit over the nonzero entries of ``a`` (a == ints · 2^e, e that
    exponent), None when every entry is 0."""
    mant, exp = np.frexp(a)
    nz = mant != 0
    if not nz.any():
        return None
    m = (np.abs(mant[nz]) * 2.0**53).astype(np.int64)
    tz = np.zeros(m.shape, dtype=np.int64)
    for shift in (32, 16, 8, 4, 2, 1):  # trailing zeros, by halving
        low = (m & ((1 << shift) - 1)) == 0
        tz += np.where(low, shift, 0)
        m = np.where(low, m >> shift, m)
    return int((exp[nz].astype(np.int64) - 53 + tz).min())


def float_scores(q: np.ndarray, k: np.ndarray, scale: float) -> np.ndarray | None:
    """scale·q·kᵀ for q (M, d), k (N, d) when float64 holds every score and every partial sum exactly
    (the entries integers times a common power of two, the sums below 2^53, the scaled scores normal
    or 0): the fast path of :func:`exact_attention`; else None."""
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(k)) and math.isfinite(scale) and scale != 0):
        return None
    eq, ek = _low_bit(q), _low_bit(k)
    if eq is None or ek is None:
        return np.zeros((q.shape[0], k.shape[0]))
    with np.errstate(over="ignore"):  # an entry 2^53 times its array's lowest bit or more: not the fast path
        qi, ki = np.ldexp(q, -eq), np.ldexp(k, -ek)
    if float(np.abs(qi).max()) * float(np.abs(ki).max()) * max(1, q.shape[1]) >= 2.0**53:
        return None
    dots = qi @ ki.T  # integers: every product and partial sum exact
    num, den = float(scale).as_integer_ratio()
    if den & (den - 1) or float(np.abs(dots).max()) * abs(num) >= 2.0**53:
        return None
    e = eq + ek - (den.bit_length() - 1)
    out = np.ldexp(dots * num, e)
    if np.any((out != 0) & (np.abs(out) < 2.0**-1022)) or not np.all(np.isfinite(out)):
        return None
    return out


def binary(value: float):
    """A finite float as (m, e) with value == m · 2^e exactly; anything else as it is."""
    if not math.isfinite(float(value)):
        return value
    num, den = float(value).as_integer_ratio()  # den is a power of two
    return num, -(den.bit_length() - 1)


def score(dot: int, e: int, scale, bias) -> arb:
    """scale · dot · 2^e (+ bias), exact: an arb of the exact binary product (``scale`` given as (m, e),
    :func:`binary`), the sum with a float bias at a precision that spans both."""
    m, se = scale if isinstance(scale, tuple) else binary(scale)
    prod = int(dot) * m
    x = arb(arf((prod, e + se)))
    if not bias:
        return x
    bm, be = binary(float(bias))
    top = max(e + se + abs(prod).bit_length(), be + abs(bm).bit_length())
    saved = ctx.prec
    ctx.prec = max(saved, top - min(e + se, be) + 8)
    try:
        return x + arb(arf((bm, be)))
    finally:
        ctx.prec = saved


_SPLIT = 134217729.0  # 2^27 + 1: Dekker's split of a float64 into two halves of 26 bits


def _two_prod(a, b):
    """(p, e): p = fl(a·b) and p + e = a·b exactly (Dekker; no overflow for the inputs here)."""
    p = a * b
    ca, cb = _SPLIT * a, _SPLIT * b
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def dot(w: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Σ_j w_ij a_jc, Σ_j |w_ij a_jc|) for w (R, n), a (n, C): the first as if summed in twice the
    working precision and rounded once (Ogita, Rump and Oishi's Dot2: every product and partial sum
    split exactly into a float and its error), the second in plain float64; both in key order, so the
    same on every machine."""
    R, C = w.shape[0], a.shape[1]
    s, c, m = np.zeros((R, C)), np.zeros((R, C)), np.zeros((R, C))
    for j in range(w.shape[1]):
        p, e = _two_prod(w[:, j:j + 1], a[j:j + 1, :])
        t = s + p
        z = t - s
        c += ((s - (t - z)) + (p - z)) + e
        s = t
        m += np.abs(p)
    return s + c, m
