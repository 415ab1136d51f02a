"""The exact definition of one kernel row, in ball arithmetic: out, lse in each convention and
the backward's gradients, with the magnitudes the tolerance scales by (see :mod:`derive.impl.forms.kernel`).

Every quantity is a python-flint ``arb`` ball at ``4·dps`` bits (at least 128), rounded to the
nearest float64 at the end; the exponentials, lse and weights are the softmax-family row of
:mod:`derive.normalizers.exact_softmax`; only the magnitudes of the tolerance are formed in float64. Keys
whose value rows are equal are summed first (``out = Σ_g (Σ_{t ∈ g} P_t) u_g`` over the distinct
value rows u_g): the fixed inputs repeat their value rows with a short period, so a row of 1024
keys and head dimension 128 costs n exponentials and a few hundred products, not n·dv.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from flint import arb, arb_mat, ctx

from derive.impl.cases.kernel import DV
from derive.normalizers.exact_softmax import enclosed, exps, extra_of, softmax_row

__all__ = ["ExactRow", "digest", "exact_row"]

INF = math.inf


@dataclass
class ExactRow:
    defined: bool
    out: list[float]
    out_scale: list[float]
    lse: dict  # convention → float (−inf for log 0)
    dx: list[float] = field(default_factory=list)
    dx_scale: list[float] = field(default_factory=list)
    dv: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (n, dv)
    dv_scale: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    ds: float = 0.0
    ds_scale: float = 0.0  # the magnitude of the terms of ds: of −P_σ·D and of −Σ_t dS_t alike


_GROUPS: dict = {}  # digest of a value matrix → its distinct rows and each key's row (the fixed inputs repeat)
_MATS: dict = {}  # distinct value rows → (their arb matrix, that of their magnitudes): rows shifted share them


def digest(v: np.ndarray) -> bytes:
    """The key a value matrix is known by in the caches below (its shape and its bytes' digest)."""
    v = np.ascontiguousarray(v, dtype=np.float64)
    return repr(v.shape).encode() + hashlib.blake2b(v.reshape(-1).view(np.uint8), digest_size=16).digest()


def _groups(v: np.ndarray, vkey: bytes):
    """(distinct value rows in the order of ``np.unique(v, axis=0)``, each key's row index, the
    rows as an arb matrix, their magnitudes as one). Rows are told apart by their bytes first
    (−0.0 made 0.0, so rows equal as numbers are one), then the few distinct ones are sorted."""
    if vkey not in _GROUPS:
        if len(_GROUPS) > 512:
            _GROUPS.clear()
        c = np.ascontiguousarray(v + 0.0)
        if c.ndim == 2 and c.shape[0] and c.shape[1]:
            raw = c.view(np.dtype((np.void, c.itemsize * c.shape[1]))).ravel()
            _, first, inv = np.unique(raw, return_index=True, return_inverse=True)
            rows, small = np.unique(c[first], axis=0, return_inverse=True)
            group = np.ravel(small)[np.ravel(inv)]
        else:
            rows, group = np.unique(c, axis=0, return_inverse=True)
            group = np.ravel(group)
        mkey = (rows.shape, rows.tobytes())
        if mkey not in _MATS:
            if len(_MATS) > 512:
                _MATS.clear()
            _MATS[mkey] = (arb_mat(rows.tolist()), arb_mat(np.abs(rows).tolist()))
        _GROUPS[vkey] = (rows, group, *_MATS[mkey])
    return _GROUPS[vkey]


def _f(a) -> float:
    return float(a.mid())


def exact_row(row, v, sigma, g, dps: int, dv: int | None = None, vkey: bytes | None = None) -> ExactRow:
    """The definition for one row (scores ``row``, values ``v`` (n, dv), extra logit ``sigma``,
    cotangent ``g`` or None), at ``4·dps`` bits. ``vkey``: ``digest(v)``, when the caller has it."""
    old = ctx.prec
    ctx.prec = max(128, 4 * int(dps))
    v = np.asarray(v, dtype=np.float64)
    try:
        return _exact(list(row), v, sigma, g, dv, digest(v) if vkey is None else vkey)
    finally:
        ctx.prec = old


_KEYS: dict = {}  # (scores, values) → the keys' exponentials and their sums: the same rows meet many sinks


def _keys(row, v, vkey):
    """(e^{x_t} per key, Σ_t e^{x_t}, Σ e^{x_t} per distinct value row, :func:`_groups` of v)."""
    key = (tuple(row), vkey, ctx.prec)
    if key not in _KEYS:
        if len(_KEYS) > 2048:
            _KEYS.clear()
        e = exps([float(x) for x in row])
        groups = _groups(v, vkey) if len(row) else (np.zeros((0, v.shape[-1] if v.ndim == 2 else 0)), [], None, None)
        sums = [arb(0)] * len(groups[0])
        for t, q in enumerate(e):
            sums[groups[1][t]] += q
        _KEYS[key] = (e, sum(e, arb(0)), sums, groups)
    return _KEYS[key]


def _softmax(row, v, vkey, sigma):
    """The softmax row and its shares by distinct value row (Σ_{t ∈ g} P_t), at ``ctx.prec``."""
    e, kv, esums, _ = _keys(row, v, vkey)
    sm = softmax_row(terms=e, keys=kv, extra=extra_of(sigma))
    return sm, [sm.share(q) for q in esums]


def _exact(row, v, sigma, g, dv, vkey) -> ExactRow:
    n = len(row)
    dv = v.shape[1] if v.ndim == 2 and n else (DV if dv is None else dv)
    sm, sums = enclosed(partial(_softmax, row, v, vkey, sigma))
    kv, es, (rows, group, rows_m, abs_m) = sm.keys, sm.extra, _keys(row, v, vkey)[3]
    natural = sm.lse()
    lse = {"natural": -INF if natural is None else _f(natural), "kv-only": _f(kv.log()) if kv > 0 else -INF}
    lse["base2"] = -INF if natural is None else _f(natural / arb(2).log())
    if natural is None:
        return ExactRow(False, [math.nan] * dv, [0.0] * dv, lse)
    if n == 0:
        res = ExactRow(True, [0.0] * dv, [0.0] * dv, lse)
        if g is not None:
            res.ds, res.ds_scale = 0.0, 0.0
        return res
    S = arb_mat([sums])
    out_m = S * rows_m
    scale_m = S * abs_m
    out = [out_m[0, k] for k in range(dv)]
    scale = [scale_m[0, k] for k in range(dv)]
    res = ExactRow(True, [_f(o) for o in out], [_f(s) for s in scale], lse)
    if g is None:
        return res
    g = np.asarray(g, dtype=np.float64)
    gm = [arb(float(a)) for a in g]
    D = sum((gm[k] * out[k] for k in range(dv)), arb(0))
    gs = sum((abs(gm[k]) * scale[k] for k in range(dv)), arb(0))
    gv = rows_m * arb_mat([[a] for a in gm])  # ⟨g, u_g⟩ per distinct value row
    gabs = np.abs(rows) @ np.abs(g)  # Σ_k |g_k u_gk| (a magnitude: float64 is enough)
    gs_f = _f(gs)
    p = sm.weights()
    gvd = [gv[j, 0] - D for j in range(len(rows))]  # ⟨g, u_g⟩ − D per distinct value row
    res.dx = [_f(p[t] * gvd[j]) for t, j in enumerate(group.tolist())]
    pf = np.array([_f(q) for q in p])
    res.dx_scale = (pf * (gabs[group] + gs_f)).tolist()
    res.dv = np.outer(pf, g)  # P_t g_k: one rounding of the product of two rounded numbers
    res.dv_scale = np.abs(res.dv)
    ps = sm.share(es)
    res.ds = _f(-ps * D)
    # ds = −P_σ D, which a kernel may compute as −Σ_t dS_t (docs/kernels.md §5): the terms of both
    res.ds_scale = _f(ps) * gs_f + float(np.sum(res.dx_scale))
    return res
