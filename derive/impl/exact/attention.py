"""The exact definition of attention on the inputs actually passed to a kernel.

For batch b, head h and query i (at position p = start_q + i) the scores are

    x_ij = scale · ⟨q_i, k_j⟩ + mask_ij      (−∞ where causality or the window excludes key j)

with ⟨q_i, k_j⟩ computed exactly (every float is an integer times a power of two: the dot
product is an integer sum, :func:`exact_dots`), and with an extra logit σ_h (a sink, 0 for
softmax₁, none for softmax):

    P_ij = e^{x_ij − lse_i},  lse_i = log(e^{σ_h} + Σ_j e^{x_ij}),  out_i = Σ_j P_ij v_j,

the softmax-family row of :mod:`derive.normalizers.exact_softmax` in arb balls at ``4·dps``
bits (at least 128): the exponentials and logarithms are the only roundings, each far below
10^−dps relative; the sums of products with v (and the gradients) are
``math.fsum`` of products of those correctly rounded weights with the exact inputs, so the
reference is within 2^−52 of the magnitude of its terms, far inside every tolerance. The
gradients of ⟨out, g⟩ (g the cotangent):

    D_i = ⟨g_i, out_i⟩,  dS_ij = P_ij (⟨g_i, v_j⟩ − D_i),  dq_i = scale Σ_j dS_ij k_j,
    dk_j = scale Σ_i dS_ij q_i,  dv_j = Σ_i P_ij g_i,  dσ_h = −Σ_{b,i} P_iσ D_i.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
from flint import arb, arf, ctx, fmpz_mat

from derive.normalizers.exact_softmax import enclosed, extra_of, softmax_row
from derive.impl.exact.tolerance import kappas

__all__ = ["Exact", "exact", "exact_dots"]

INF = math.inf


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


@dataclass
class Exact:
    out: np.ndarray  # (B, H, M, Dv), NaN where undefined
    out_scale: np.ndarray  # Σ_j P_ij |v_jc|
    lse: np.ndarray  # (B, H, M)
    defined: np.ndarray  # (B, H, M) bool
    kappa: np.ndarray  # (B, H, M): the condition of the row
    rows: np.ndarray  # (B, H, M, N) the scores as floats (−inf masked), for the report
    P: np.ndarray  # (B, H, M, N) weights (float64, correctly rounded)
    Psig: np.ndarray  # (B, H, M) the extra logit's weight
    grads: dict | None = None  # name → (value, scale)


def _fsum_dot(w: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Σ_j w_ij a_jc for each i, c with math.fsum (one rounding per entry)."""
    out = np.empty((w.shape[0], a.shape[1]))
    for i in range(w.shape[0]):
        out[i] = [math.fsum(terms) for terms in (w[i][:, None] * a).T.tolist()]  # row c: w_ij a_jc over j
    return out


def _f(a: arb) -> float:
    return float(a.mid())


def _score(dot: int, e: int, scale, mask) -> arb:
    """scale · dot · 2^e (+ mask), exact (an arb of the exact binary product when ``scale`` is
    given as (m, e), :func:`_binary`; else at a precision raised to hold it) unless the mask's
    addition needs more than 64 bits beyond the product's."""
    if mask is None and isinstance(scale, tuple):
        return arb(arf((dot * scale[0], e + scale[1])))  # exact at any precision
    saved = ctx.prec
    ctx.prec = max(saved, max(int(dot).bit_length(), 1) + 64)
    try:
        if isinstance(scale, tuple):
            x = arb(arf((dot * scale[0], e + scale[1])))
        else:
            x = arb(int(dot)) * arb(2) ** e * arb(float(scale))
        return x if mask is None else x + arb(float(mask))
    finally:
        ctx.prec = saved


def _binary(value: float):
    """A finite float as (m, e) with value == m · 2^e exactly; anything else as it is."""
    if not math.isfinite(float(value)):
        return value
    num, den = float(value).as_integer_ratio()  # den is a power of two
    return num, -(den.bit_length() - 1)


def _softmax(xs: list, sigma):
    """The row and its weights (the shares :func:`enclosed` checks are tight, kept for the result)."""
    row = softmax_row(xs, extra_of(sigma))
    return row, row.weights()


_ROWS: dict = {}  # a row's exact inputs (and the precision) → its floats: cases and dtypes meet the same rows


def _row(drow, e: int, sc, mrow, vrow, sig, N: int):
    """(the scores as floats, −∞ masked; None where the row has no value, else (lse, the weights,
    the extra logit's weight) correctly rounded) of one row: its exact dot products drow · 2^e, the
    scale, its additive mask and visible keys, the extra logit; computed once per distinct row."""
    key = (tuple(drow), e, sc, None if mrow is None else tuple(mrow), tuple(vrow), sig, ctx.prec)
    if key in _ROWS:
        return _ROWS[key]
    if mrow is None and isinstance(sc, tuple):  # _score's exact product, inline
        xs = [arb(arf((d * sc[0], e + sc[1]))) if ok else None for d, ok in zip(drow, vrow)]
    else:
        xs = [None if not vrow[j] or (mrow is not None and mrow[j] == -INF)
              else _score(drow[j], e, sc, None if mrow is None else mrow[j])
              for j in range(N)]
    floats = [-INF if x is None else _f(x) for x in xs]
    row, weights = enclosed(partial(_softmax, xs, sig))
    lse_i = row.lse()
    done = None if lse_i is None else (_f(lse_i), [_f(w) for w in weights], _f(row.share(row.extra)))
    if len(_ROWS) > 4096:
        _ROWS.clear()
    _ROWS[key] = floats, done
    return _ROWS[key]


def exact(q, k, v, scale: float, add_mask, visible, sigma, dps: int, g=None) -> Exact:
    """The definition on q (B, H, M, D), k (B, H, N, D), v (B, H, N, Dv) (the values as passed,
    in float64), an additive mask (B, 1, M, N) or None, the visible keys (M, N) and the extra logit
    per head (a tuple of H floats, or None); with ``g`` (B, H, M, Dv) the gradients as well."""
    B, H, M, _ = q.shape
    N, Dv = k.shape[2], v.shape[3]
    out = np.full((B, H, M, Dv), np.nan)
    out_scale = np.zeros((B, H, M, Dv))
    lse = np.full((B, H, M), -INF)
    defined = np.zeros((B, H, M), dtype=bool)
    kap = np.zeros((B, H, M))
    rows = np.full((B, H, M, N), -INF)
    P = np.zeros((B, H, M, N))
    Psig = np.zeros((B, H, M))
    saved = ctx.prec
    ctx.prec = max(128, 4 * int(dps))
    try:
        sc = _binary(scale)
        vis = visible.tolist()
        for b in range(B):
            masks = None if add_mask is None else add_mask[b, 0].tolist()
            for h in range(H):
                dots, e = exact_dots(q[b, h], k[b, h])
                sig = None if sigma is None else sigma[h]
                params = {} if sig in (None, -INF) else {"sigma": sig}
                for i, (drow, vrow) in enumerate(zip(dots, vis)):
                    mrow = None if masks is None else masks[i]
                    rows[b, h, i], done = _row(drow, e, sc, mrow, vrow, sig, N)
                    if done is None:
                        continue
                    lse[b, h, i], P[b, h, i], Psig[b, h, i] = done
                    defined[b, h, i] = True
                kap[b, h] = kappas(rows[b, h], [params] * M)
                out[b, h] = np.where(defined[b, h][:, None], _fsum_dot(P[b, h], v[b, h]), np.nan)
                out_scale[b, h] = _fsum_dot(P[b, h], np.abs(v[b, h]))
    finally:
        ctx.prec = saved
    res = Exact(out, out_scale, lse, defined, kap, rows, P, Psig)
    if g is not None:
        res.grads = _grads(res, q, k, v, g, scale)
    return res


def _grads(ex: Exact, q, k, v, g, scale: float) -> dict:
    B, H, M, _ = q.shape
    out = {"dq": (np.zeros(q.shape), np.zeros(q.shape)), "dk": (np.zeros(k.shape), np.zeros(k.shape)),
           "dv": (np.zeros(v.shape), np.zeros(v.shape)), "dsinks": (np.zeros(H), np.zeros(H))}
    for b in range(B):
        for h in range(H):
            P, gg = ex.P[b, h], np.where(ex.defined[b, h][:, None], g[b, h], 0.0)
            o = np.nan_to_num(ex.out[b, h])
            D = np.array([math.fsum((gg[i] * o[i]).tolist()) for i in range(M)])
            Dm = np.array([math.fsum(np.abs(gg[i] * ex.out_scale[b, h, i]).tolist()) for i in range(M)])
            gv = _fsum_dot(gg, v[b, h].T)  # (M, N): ⟨g_i, v_j⟩
            gvm = _fsum_dot(np.abs(gg), np.abs(v[b, h]).T)
            dS = P * (gv - D[:, None])
            dSm = P * (gvm + Dm[:, None])
            out["dq"][0][b, h] = scale * _fsum_dot(dS, k[b, h])
            out["dq"][1][b, h] = abs(scale) * _fsum_dot(dSm, np.abs(k[b, h]))
            out["dk"][0][b, h] = scale * _fsum_dot(dS.T, q[b, h])
            out["dk"][1][b, h] = abs(scale) * _fsum_dot(dSm.T, np.abs(q[b, h]))
            out["dv"][0][b, h] = _fsum_dot(P.T, gg)
            out["dv"][1][b, h] = _fsum_dot(P.T, np.abs(gg))
            out["dsinks"][0][h] += -math.fsum((ex.Psig[b, h] * D).tolist())
            out["dsinks"][1][h] += math.fsum((ex.Psig[b, h] * Dm).tolist())
    return out
