"""The exact reference of every form of ``derive impl``: the definition on the inputs as passed, in
python-flint ``arb`` balls, rounded to the nearest float64 once at the end.

* **A row of weights** (the row form, any normalizer): :func:`exact_row` takes the weights from
  ``Normalizer.reference`` — the formula evaluated in arb balls at an adaptive precision (for the
  softmax family, its weights are the softmax-family row of :mod:`derive.normalizers.exact_softmax`)
  — and :func:`gradient` forms cᵀJ in arb from the forward-mode Jacobian
  (:mod:`derive.normalizers.exact_jacobian`). A masked entry (score −∞) is a mask entry False. On a
  fully masked row the rule of :mod:`derive.impl.exact.masked` says whether the definition has a
  value; where it has none the row is *undefined* (NaN) and the conventions are accepted. Where no
  precision up to the cap encloses a weight (or an entry of J) tightly, the row is *undecided* and
  is not judged.
* **A row with values** (the kernel forms, and each query of the attention form): :func:`kernel_row`
  gives, for scores x_t, values v (n, dv), an extra logit σ (a sink; 0 for softmax₁ and the zero
  token; none for softmax) and a cotangent g,

      out = Σ_t P_t v_t,   lse = log(e^σ + Σ_t e^{x_t}),   P = e^{· − lse},
      dx_t = P_t (⟨g, v_t⟩ − D),  dv_t = P_t g,  ds = −P_σ D  (D = ⟨g, out⟩),

  with the magnitudes the tolerance scales by. Keys whose value rows are equal are summed first
  (``out = Σ_g (Σ_{t ∈ g} P_t) u_g`` over the distinct value rows u_g): the fixed inputs repeat
  their value rows with a short period, so a row of 4096 keys costs n exponentials and a few
  hundred products.
* **Attention** (:func:`exact_attention`): the scores x_ij = scale·⟨q_i, k_j⟩ + bias_ij of each
  query, the dot products exact (integer sums: in float64 where every partial sum is an integer
  below 2^53, else in FLINT's integers), each row then a :func:`kernel_row` of the values of its
  kv head (h // groups), and dq_i = scale Σ_j dS_ij k_j, dk_j = scale Σ_i dS_ij q_i,
  dv_j = Σ_i P_ij g_i, dσ_h = −Σ_{b,i} P_iσ D_i summed with ``math.fsum`` over the exact rows' terms.

Every ball starts at ``4·dps`` bits (at least 128) and is raised by
:func:`~derive.normalizers.exact_softmax.enclosed` until the row is tight, so a row of scores of
1e300 is as exact as one of small scores.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from flint import arb, arb_mat, arf, ctx, fmpz_mat

from derive.impl.cases.kernel import DV
from derive.impl.exact.tolerance import kappas
from derive.normalizers.exact import Undecided
from derive.normalizers.exact_softmax import enclosed, exps, extra_of, softmax_row

__all__ = ["Attention", "Exact", "ExactRow", "NoJacobian", "digest", "exact_attention", "exact_dots", "exact_row",
           "gradient", "jacobian", "kernel_row", "kink_distance"]

INF = math.inf


def _prec(dps: int) -> int:
    return max(128, 4 * int(dps))


def _f(a) -> float:
    return float(a.mid())


def _arb(v) -> arb:
    """An mpmath number or a float as an exact ball (an mpf is a binary number: no rounding)."""
    if isinstance(v, (int, float)):
        return arb(float(v))
    sign, man, exp, _ = v._mpf_  # (−1)^sign · man · 2^exp
    return arb(arf((-int(man) if sign else int(man), int(exp))))


# ---- the row form: a normalizer's weights, any formula -------------------------------------------------


class Exact:
    """One row's exact weights (floats, correctly rounded) and whether the definition gives them a
    value; ``scales``: per weight the magnitude its tolerance is relative to; ``undecided``: why they
    could not be enclosed (the row is then not judged), or ''."""

    def __init__(self, values: list, defined: bool, scales: list | None = None, undecided: str = ""):
        self.values = [float(v) for v in values]
        self.defined, self.undecided = defined, undecided
        self.scales = [abs(v) if defined else 0.0 for v in self.values] if scales is None else scales

    def floats(self) -> list[float]:
        return list(self.values)


def _split(row: list[float]) -> tuple[list[float], list[bool]]:
    allowed = [v != -math.inf for v in row]
    return [v if ok else 0.0 for v, ok in zip(row, allowed)], allowed


def _params(norm, params: dict) -> dict | None:
    """The formula's parameter values, or None when one is not given."""
    f = norm.definition_of
    if f is None or any(p not in params for p in f.params):
        return None
    return {p: params[p] for p in f.params}


def exact_row(norm, row: list[float], params: dict, dps: int) -> Exact:
    """The weights of ``norm`` on ``row`` (−∞ masked), each correct to ``dps`` digits before rounding."""
    import mpmath

    from derive.impl.exact.masked import is_fully_masked, rule
    from derive.normalizers.sensitivity import scales

    if is_fully_masked(row) and not rule(norm).defined:
        return Exact([math.nan] * len(row), False)
    xs, allowed = _split(row)
    with mpmath.workdps(dps):
        try:
            values = norm.reference(xs, mask=allowed, **params)
        except Undecided as e:
            return Exact([math.nan] * len(row), False, undecided=str(e))
        defined = all(not mpmath.isnan(v) for v in values)
        # The tolerance of a weight is relative to its magnitude |p_k| (the condition of the
        # softmax family and of sigmoid, with κ), except where the definition's last step
        # cancels: then to the magnitude of that step's terms (see derive.normalizers.sensitivity).
        own = _params(norm, params)
        terms = scales(norm.definition_of, xs, allowed, **own) if defined and own is not None else None
    return Exact(list(values), defined, terms)


class NoJacobian(Exception):
    """The Jacobian at this row is not judged: why; ``kink``: because the weights are not
    differentiable there (else it could not be evaluated: undecided)."""

    def __init__(self, reason: str, kink: bool = False):
        super().__init__(reason)
        self.kink = kink


def jacobian(norm, row: list[float], params: dict, dps: int) -> list[list]:
    """J[j][k] = ∂p_j/∂x_k at ``row`` (masked entries: derivative 0), each entry correct to
    ``dps`` digits: forward-mode differentiation of the normalizer's formula in arb balls at
    an adaptive precision (:mod:`derive.normalizers.exact_jacobian`). Raises
    :class:`NoJacobian` (with the reason) where the weights are not differentiable or no
    precision up to the cap encloses an entry tightly: the gradient is then not judged."""
    import mpmath

    from derive.normalizers.exact import Undefined
    from derive.normalizers.exact_jacobian import NotDifferentiable, jacobian as forward

    if norm.definition_of is None:
        raise NoJacobian(f"the normalizer {norm.name} has no formula to differentiate")
    own = _params(norm, params)
    if own is None:
        missing = [p for p in norm.definition_of.params if p not in params]
        raise NoJacobian(f"no value for the parameter(s) {', '.join(missing)}")
    xs, allowed = _split(row)
    with mpmath.workdps(dps):
        try:
            return forward(norm.definition_of, xs, allowed, **own)
        except NotDifferentiable as e:
            raise NoJacobian(f"the weights are not differentiable at this row ({e})", kink=True) from None
        except Undefined:
            raise NoJacobian("a weight has no value at this row") from None
        except Undecided as e:
            raise NoJacobian(f"their derivatives (the Jacobian the gradient is compared with): {e}") from None


def gradient(jac: list[list], c, values: list[float], dps: int) -> tuple[list[float], list[float]]:
    """(cᵀJ, the magnitudes of its terms plus |p_k| max|c|): the sums in arb balls from the exact
    entries of J (:func:`jacobian`) and of c, each rounded once."""
    saved = ctx.prec
    ctx.prec = _prec(dps)
    try:
        n = len(values)
        cs = [float(v) for v in c]
        cmax = max((abs(v) for v in cs), default=0.0)
        J = [[_arb(e) for e in line] for line in jac]
        exact = [_f(sum((arb(cs[j]) * J[j][k] for j in range(n)), arb(0))) for k in range(n)]
        scale = [_f(sum((abs(arb(cs[j]) * J[j][k]) for j in range(n)), arb(0))) + abs(values[k]) * cmax
                 for k in range(n)]
    finally:
        ctx.prec = saved
    return exact, scale


def kink_distance(norm, row: list[float], params: dict, dps: int):
    """The smallest relative distance of the row from a point where ``norm``'s weights are not
    differentiable (a kink of relu, abs, max or min in its formula), or None (smooth there)."""
    import mpmath

    from derive.normalizers.sensitivity import kink_distances, kinked

    own = _params(norm, params)
    if own is None or not kinked(norm.definition_of):
        return None
    xs, allowed = _split(row)
    with mpmath.workdps(dps):
        dists = kink_distances(norm.definition_of, xs, allowed, **own)
        return float(min(dists)) if dists else None


# ---- one row with values: the kernel forms, and each query of the attention form -----------------------


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
_KEYS: dict = {}  # (scores, values) → the keys' exponentials and their sums: the same rows meet many sinks


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


def kernel_row(row, v, sigma, g, dps: int, dv: int | None = None, vkey: bytes | None = None,
               key=None) -> ExactRow:
    """The definition for one row (scores ``row``: floats, −∞ masked, or exact balls; values ``v``
    (n, dv), extra logit ``sigma``, cotangent ``g`` or None), from ``4·dps`` bits. ``vkey``:
    ``digest(v)``, when the caller has it; ``key``: what the row's scores are known by in the cache
    (their tuple when they are floats)."""
    old = ctx.prec
    ctx.prec = _prec(dps)
    v = np.asarray(v, dtype=np.float64)
    try:
        return _exact(list(row), v, sigma, g, dv, digest(v) if vkey is None else vkey, key)
    finally:
        ctx.prec = old


def _keys(row, v, vkey, key):
    """(e^{x_t} per key, Σ_t e^{x_t}, Σ e^{x_t} per distinct value row, :func:`_groups` of v)."""
    key = (tuple(row) if key is None else key, vkey, ctx.prec)
    if key not in _KEYS:
        if len(_KEYS) > 2048:
            _KEYS.clear()
        e = exps([x if isinstance(x, arb) else float(x) for x in row])
        groups = _groups(v, vkey) if len(row) else (np.zeros((0, v.shape[-1] if v.ndim == 2 else 0)), [], None, None)
        sums = [arb(0)] * len(groups[0])
        for t, q in enumerate(e):
            sums[groups[1][t]] += q
        _KEYS[key] = (e, sum(e, arb(0)), sums, groups)
    return _KEYS[key]


def _softmax(row, v, vkey, key, sigma):
    """The softmax row and its shares by distinct value row (Σ_{t ∈ g} P_t), at ``ctx.prec``."""
    e, kv, esums, _ = _keys(row, v, vkey, key)
    sm = softmax_row(terms=e, keys=kv, extra=extra_of(sigma))
    return sm, [sm.share(q) for q in esums]


def _exact(row, v, sigma, g, dv, vkey, key) -> ExactRow:
    n = len(row)
    dv = v.shape[1] if v.ndim == 2 and n else (DV if dv is None else dv)
    sm, sums = enclosed(partial(_softmax, row, v, vkey, key, sigma))
    kv, es, (rows, group, rows_m, abs_m) = sm.keys, sm.extra, _keys(row, v, vkey, key)[3]
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


# ---- attention: the scores from q and k, exactly ------------------------------------------------------


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


def _binary(value: float):
    """A finite float as (m, e) with value == m · 2^e exactly; anything else as it is."""
    if not math.isfinite(float(value)):
        return value
    num, den = float(value).as_integer_ratio()  # den is a power of two
    return num, -(den.bit_length() - 1)


def _score(dot: int, e: int, scale, bias) -> arb:
    """scale · dot · 2^e (+ bias), exact: an arb of the exact binary product (``scale`` given as (m, e),
    :func:`_binary`), the sum with a float bias at a precision that spans both."""
    m, se = scale if isinstance(scale, tuple) else _binary(scale)
    prod = int(dot) * m
    x = arb(arf((prod, e + se)))
    if not bias:
        return x
    bm, be = _binary(float(bias))
    top = max(e + se + abs(prod).bit_length(), be + abs(bm).bit_length())
    saved = ctx.prec
    ctx.prec = max(saved, top - min(e + se, be) + 8)
    try:
        return x + arb(arf((bm, be)))
    finally:
        ctx.prec = saved


@dataclass
class Attention:
    out: np.ndarray  # (B, H, M, Dv), NaN where undefined
    out_scale: np.ndarray  # Σ_j P_ij |v_jc|
    lse: np.ndarray  # (B, H, M)
    defined: np.ndarray  # (B, H, M) bool
    kappa: np.ndarray  # (B, H, M): the condition of the row
    rows: np.ndarray  # (B, H, M, N) the scores as floats (−inf masked), for the report
    grads: dict | None = None  # name → (value, scale)


_ROWS: dict = {}  # (a row's scores, its values, extra logit, cotangent, precision) → its ExactRow


def _row_of(key, xs, v, vkey, sig, g, dps):
    full = (key, vkey, sig, None if g is None else g.tobytes(), _prec(dps))
    if full not in _ROWS:
        if len(_ROWS) > 8192:
            _ROWS.clear()
        _ROWS[full] = kernel_row(xs, v, sig, g, dps, v.shape[-1], vkey, key)
    return _ROWS[full]


def exact_attention(q, k, v, scale: float, keep, bias, sigma, dps: int, g=None) -> Attention:
    """The definition on q (B, H, M, D), k (B, Hkv, N, D), v (B, Hkv, N, Dv) (the values as passed, in
    float64; query head h reads kv head h // (H / Hkv)): ``keep`` (B, M, N) bool, the keys each query
    may see (causality, a window, a boolean or −∞ mask: everything the case masks), ``bias`` (B, M, N)
    or None, the finite additive mask added to the scores of the visible keys (finfo.min, −1e6), the
    extra logit per head (a tuple of H floats, or None); with ``g`` (B, H, M, Dv) the gradients too."""
    B, H, M, _ = q.shape
    Hkv, N, Dv = k.shape[1], k.shape[2], v.shape[3]
    groups = H // Hkv
    out = np.full((B, H, M, Dv), np.nan)
    out_scale = np.zeros((B, H, M, Dv))
    lse = np.full((B, H, M), -INF)
    defined = np.zeros((B, H, M), dtype=bool)
    kap = np.zeros((B, H, M))
    rows = np.full((B, H, M, N), -INF)
    done: dict = {}  # (b, h, i) → ExactRow
    saved = ctx.prec
    ctx.prec = _prec(dps)
    try:
        sc = _binary(scale)
        for b in range(B):
            vis = keep[b]
            add = None if bias is None else bias[b]
            for h in range(H):
                kv = h // groups
                vv = v[b, kv]
                vkey = digest(vv)
                fast = float_scores(q[b, h], k[b, kv], scale)
                dots = None
                sig = None if sigma is None else sigma[h]
                for i in range(M):
                    biased = add is not None and bool(np.any((add[i] != 0) & vis[i]))
                    if fast is not None and not biased:
                        xs = np.where(vis[i], fast[i], -INF).tolist()
                        key = tuple(xs)
                        rows[b, h, i] = xs
                    else:
                        if dots is None:
                            dots, e = exact_dots(q[b, h], k[b, kv])
                        xs = [_score(dots[i][j], e, sc, None if add is None else add[i, j]) if vis[i, j] else -INF
                              for j in range(N)]
                        key = ("arb", tuple(int(d) for d in dots[i]), e, sc, tuple(vis[i].tolist()),
                               None if add is None else tuple(add[i].tolist()))
                        rows[b, h, i] = [x if isinstance(x, float) else _f(x) for x in xs]
                    row = _row_of(key, xs, vv, vkey, sig, None if g is None else g[b, h, i], dps)
                    done[b, h, i] = row
                    lse[b, h, i] = row.lse["natural"]
                    if row.defined:
                        defined[b, h, i] = True
                        out[b, h, i] = row.out
                        out_scale[b, h, i] = row.out_scale
                params = {} if sig in (None, -INF) else {"sigma": sig}
                kap[b, h] = kappas(rows[b, h], [params] * M)
    finally:
        ctx.prec = saved
    res = Attention(out, out_scale, lse, defined, kap, rows)
    if g is not None:
        res.grads = _grads(done, q, k, defined, scale, groups)
    return res


def _fsum_dot(w: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Σ_j w_ij a_jc for each i, c with math.fsum (one rounding per entry)."""
    out = np.empty((w.shape[0], a.shape[1]))
    for i in range(w.shape[0]):
        out[i] = [math.fsum(terms) for terms in (w[i][:, None] * a).T.tolist()]  # row c: w_ij a_jc over j
    return out


def _grads(done: dict, q, k, defined, scale: float, groups: int) -> dict:
    B, H, M, _ = q.shape
    Hkv, N = k.shape[1], k.shape[2]
    Dv = next(iter(done.values())).dv.shape[-1] if done and N else 0
    dS = np.zeros((B, H, M, N))
    dSm = np.zeros((B, H, M, N))
    dvp = np.zeros((B, H, M, N, Dv))  # P_ij g_i, per query
    dvm = np.zeros((B, H, M, N, Dv))
    dsig = [[] for _ in range(H)]
    dsig_m = [[] for _ in range(H)]
    for (b, h, i), row in done.items():
        if not defined[b, h, i] or not N:
            continue
        dS[b, h, i], dSm[b, h, i] = row.dx, row.dx_scale
        dvp[b, h, i], dvm[b, h, i] = row.dv, row.dv_scale
        dsig[h].append(row.ds)
        dsig_m[h].append(row.ds_scale)
    out = {"dq": (np.zeros(q.shape), np.zeros(q.shape)), "dk": (np.zeros(k.shape), np.zeros(k.shape)),
           "dv": (np.zeros(k.shape[:3] + (Dv,)), np.zeros(k.shape[:3] + (Dv,))), "dsinks": (np.zeros(H), np.zeros(H))}
    for b in range(B):
        for h in range(H):
            kv = h // groups
            out["dq"][0][b, h] = scale * _fsum_dot(dS[b, h], k[b, kv])
            out["dq"][1][b, h] = abs(scale) * _fsum_dot(dSm[b, h], np.abs(k[b, kv]))
        for kv in range(Hkv):
            heads = range(kv * groups, (kv + 1) * groups)
            # dk_j = scale Σ_{h in the group, i} dS_hij q_hi; dv_j = Σ_{h, i} P_hij g_hi
            S = np.concatenate([dS[b, h] for h in heads], axis=0)  # (groups·M, N)
            Sm = np.concatenate([dSm[b, h] for h in heads], axis=0)
            Q = np.concatenate([q[b, h] for h in heads], axis=0)
            out["dk"][0][b, kv] = scale * _fsum_dot(S.T, Q)
            out["dk"][1][b, kv] = abs(scale) * _fsum_dot(Sm.T, np.abs(Q))
            for j in range(N):
                terms = np.concatenate([dvp[b, h, :, j] for h in heads], axis=0)  # (groups·M, Dv)
                mags = np.concatenate([dvm[b, h, :, j] for h in heads], axis=0)
                out["dv"][0][b, kv, j] = [math.fsum(c) for c in terms.T.tolist()]
                out["dv"][1][b, kv, j] = [math.fsum(c) for c in mags.T.tolist()]
    for h in range(H):
        out["dsinks"][0][h] = math.fsum(dsig[h])
        out["dsinks"][1][h] = math.fsum(dsig_m[h])
    return out
