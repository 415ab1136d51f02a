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
  below 2^53, else in FLINT's integers: :mod:`derive.impl.exact.arith`), each row then a :func:`kernel_row` of the values of its
  kv head (h // groups), and dq_i = scale Σ_j dS_ij k_j, dk_j = scale Σ_i dS_ij q_i,
  dv_j = Σ_i P_ij g_i (compensated sums of the rows' exact terms, :func:`derive.impl.exact.arith.dot`), and
  dσ_h = −Σ_{b,i} P_iσ D_i (``math.fsum``).

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
from flint import arb, arb_mat, arf, ctx

from derive.impl.cases.kernel import DV
from derive.impl.exact.arith import binary, dot, exact_dots, float_scores, score
from derive.impl.exact.tolerance import kappas
from derive.normalizers.exact import Undecided
from derive.normalizers.exact_softmax import enclosed, exps, extra_of, softmax_row

__all__ = ["Attention", "Exact", "ExactRow", "NoJacobian", "digest", "exact_attention", "exact_dots", "exact_row",
           "generic_row", "gradient", "jacobian", "kernel_row", "kink_distance", "ratio_row", "row_key"]

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
    p: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the weights P_t, each rounded once
    g: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the cotangent
    ds: float = 0.0
    ds_scale: float = 0.0  # the magnitude of the terms of ds: of −P_σ·D and of −Σ_t dS_t alike
    undecided: str = ""  # why a weight could not be enclosed (the row is not judged), or ""
    w: list = field(default_factory=list)  # the weights P_t themselves, when asked for (a kernel returning them)

    @property
    def dv(self) -> np.ndarray:
        """(n, dv): P_t g_k, one rounding of the product of two rounded numbers (formed when asked: a
        row of 4096 keys and dv = 128 is half a million of them)."""
        return np.outer(self.p, self.g) if self.p.size else np.zeros((0, 0))

    @property
    def dv_scale(self) -> np.ndarray:
        return np.abs(self.dv)


class _Cache(dict):
    """A dict emptied when what it holds passes ``budget`` (in keys of rows: a row of 4096 keys
    weighs 4096), so that rows of thousands of keys cannot fill the memory."""

    def __init__(self, budget: int):
        super().__init__()
        self.budget, self.weight = budget, 0

    def put(self, key, value, weight: int = 1):
        if self.weight + weight > self.budget:
            self.clear()
            self.weight = 0
        self.weight += weight
        self[key] = value


_GROUPS = _Cache(1 << 21)  # digest of a value matrix → its distinct rows and each key's row (the fixed inputs repeat)
_MATS = _Cache(1 << 21)  # distinct value rows → (their arb matrix, that of their magnitudes): rows shifted share them
_KEYS = _Cache(1 << 20)  # (scores, values) → the keys' exponentials and their sums: the same rows meet many sinks


def row_key(row) -> bytes:
    """What a row of float scores is known by in the caches (its length and its bytes' digest)."""
    x = np.ascontiguousarray(row, dtype=np.float64)
    return repr(x.shape).encode() + hashlib.blake2b(x.view(np.uint8), digest_size=16).digest()


def digest(v: np.ndarray) -> bytes:
    """The key a value matrix is known by in the caches below (its shape and its bytes' digest)."""
    v = np.ascontiguousarray(v, dtype=np.float64)
    return repr(v.shape).encode() + hashlib.blake2b(v.reshape(-1).view(np.uint8), digest_size=16).digest()


def _groups(v: np.ndarray, vkey: bytes):
    """(distinct value rows in the order of ``np.unique(v, axis=0)``, each key's row index, the
    rows as an arb matrix, their magnitudes as one). Rows are told apart by their bytes first
    (−0.0 made 0.0, so rows equal as numbers are one), then the few distinct ones are sorted."""
    if vkey not in _GROUPS:
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
            _MATS.put(mkey, (arb_mat(rows.tolist()), arb_mat(np.abs(rows).tolist())), rows.size)
        _GROUPS.put(vkey, (rows, group, *_MATS[mkey]), c.size)
    return _GROUPS[vkey]


def kernel_row(row, v, sigma, g, dps: int, dv: int | None = None, vkey: bytes | None = None,
               key=None, weights: bool = False) -> ExactRow:
    """The definition for one row (scores ``row``: floats, −∞ masked, or exact balls; values ``v``
    (n, dv), extra logit ``sigma``, cotangent ``g`` or None), from ``4·dps`` bits. ``vkey``:
    ``digest(v)``, when the caller has it; ``key``: what the row's scores are known by in the cache
    (their tuple when they are floats)."""
    old = ctx.prec
    ctx.prec = _prec(dps)
    v = np.asarray(v, dtype=np.float64)
    try:
        return _exact(list(row), v, sigma, g, dv, digest(v) if vkey is None else vkey, key, weights)
    finally:
        ctx.prec = old


def _keys(row, v, vkey, key):
    """(e^{x_t} per key, Σ_t e^{x_t}, Σ e^{x_t} per distinct value row, :func:`_groups` of v)."""
    key = (row_key(row) if key is None else key, vkey, ctx.prec)
    if key not in _KEYS:
        e = exps([x if isinstance(x, arb) else float(x) for x in row])
        groups = _groups(v, vkey) if len(row) else (np.zeros((0, v.shape[-1] if v.ndim == 2 else 0)), [], None, None)
        sums = [arb(0)] * len(groups[0])
        for t, q in enumerate(e):
            sums[groups[1][t]] += q
        _KEYS.put(key, (e, sum(e, arb(0)), sums, groups), max(1, len(e)))
    return _KEYS[key]


def _softmax(row, v, vkey, key, sigma):
    """The softmax row and its shares by distinct value row (Σ_{t ∈ g} P_t), at ``ctx.prec``."""
    e, kv, esums, _ = _keys(row, v, vkey, key)
    sm = softmax_row(terms=e, keys=kv, extra=extra_of(sigma))
    return sm, [sm.share(q) for q in esums]


def _exact(row, v, sigma, g, dv, vkey, key, weights=False) -> ExactRow:
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
    if weights:
        res.w = [_f(q) for q in sm.weights()]
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
    res.p, res.g = pf, g
    ps = sm.share(es)
    res.ds = _f(-ps * D)
    # ds = −P_σ D, which a kernel may compute as −Σ_t dS_t (docs/kernels.md §5): the terms of both
    res.ds_scale = _f(ps) * gs_f + float(np.sum(res.dx_scale))
    return res


# ---- attention: each query a row of its scores, exact (derive.impl.exact.arith) ----------------------


@dataclass
class Attention:
    out: np.ndarray  # (B, H, M, Dv), NaN where undefined
    out_scale: np.ndarray  # Σ_j P_ij |v_jc|
    lse: np.ndarray  # (B, H, M)
    defined: np.ndarray  # (B, H, M) bool
    kappa: np.ndarray  # (B, H, M): the condition of the row
    rows: np.ndarray  # (B, H, M, N) the scores as floats (−inf masked), for the report
    grads: dict | None = None  # name → (value, scale)
    weights: np.ndarray | None = None  # (B, H, M, N) the weights P_ij, when asked for


_ROWS = _Cache(1 << 22)  # (a row's scores, its values, extra logit, cotangent, precision) → its ExactRow


def _row_of(key, xs, v, vkey, sig, g, dps, weights=False):
    full = (key, vkey, sig, None if g is None else g.tobytes(), _prec(dps), weights)
    if full not in _ROWS:
        _ROWS.put(full, kernel_row(xs, v, sig, g, dps, v.shape[-1], vkey, key, weights), max(1, len(xs)))
    return _ROWS[full]


def generic_row(norm, row, v, params: dict, dps: int, vkey: bytes | None = None, weights: bool = False,
                position: int | None = None) -> ExactRow:
    """out = Σ_t p_t v_t for any normalizer (one outside the softmax family, whose attention form has no
    extra logit to pass): the weights p from ``norm.reference`` on the scores as given (floats, −∞
    masked, or exact balls), enclosed to ``dps`` digits, summed per distinct value row in arb; the
    magnitudes Σ_t |p_t v_tk|. No value where a weight has none (0/0 on a row with no key); where a
    weight cannot be enclosed the row's ``undecided`` says why (it is not judged). ``position``: the
    query's index i in the formula (1-based: the query at position p is i = p + 1)."""
    import mpmath

    v = np.asarray(v, dtype=np.float64)
    dv = v.shape[1] if v.ndim == 2 else DV
    nan = {c: math.nan for c in ("natural", "base2", "kv-only")}
    allowed = [not (isinstance(x, float) and x == -INF) for x in row]
    xs = [x if ok else 0.0 for x, ok in zip(row, allowed)]
    with mpmath.workdps(dps):
        try:
            p = norm.reference(xs, allowed, balls=True, row=position, **params)
        except Undecided as exc:
            res = ExactRow(True, [math.nan] * dv, [0.0] * dv, nan)
            res.undecided = str(exc)
            return res
        if any(w is None for w in p):
            return ExactRow(False, [math.nan] * dv, [0.0] * dv, nan)
    if not row:
        return ExactRow(True, [0.0] * dv, [0.0] * dv, nan)
    old = ctx.prec
    ctx.prec = _prec(dps)
    try:
        rows, group, rows_m, abs_m = _groups(v, digest(v) if vkey is None else vkey)
        sums, mags = [arb(0)] * len(rows), [arb(0)] * len(rows)
        for t, b in enumerate(p):
            sums[group[t]] += b
            mags[group[t]] += abs(b)
        out_m, scale_m = arb_mat([sums]) * rows_m, arb_mat([mags]) * abs_m
        res = ExactRow(True, [_f(out_m[0, c]) for c in range(dv)], [_f(scale_m[0, c]) for c in range(dv)], nan)
        if weights:
            res.w = [_f(b) for b in p]
        return res
    finally:
        ctx.prec = old


def _generic_of(key, xs, v, vkey, norm, params, dps, weights=False, position=None):
    full = (key, vkey, norm.name, norm.formula, tuple(sorted((params or {}).items())), _prec(dps), weights, position)
    if full not in _ROWS:
        _ROWS.put(full, generic_row(norm, xs, v, dict(params or {}), dps, vkey, weights, position), max(1, len(xs)))
    return _ROWS[full]


def exact_attention(q, k, v, scale: float, keep, bias, sigma, dps: int, g=None, judged=None,
                    norm=None, params=None, weights: bool = False, lse_units: str = "natural",
                    start_q: int = 0, sums: float = 1.0) -> Attention:
    """The definition on q (B, H, M, D), k (B, Hkv, N, D), v (B, Hkv, N, Dv) (the values as passed, in
    float64; query head h reads kv head h // (H / Hkv)): ``keep`` (B, M, N) bool, the keys each query
    may see (causality, a window, a boolean or −∞ mask: everything the case masks), ``bias`` (B, M, N)
    or None, the finite additive mask added to the scores of the visible keys (finfo.min, −1e6), the
    extra logit per head (a tuple of H floats, or None; an array (B, H, M): one per row, as a faulty
    kernel's diagnosis needs); with ``g`` (B, H, M, Dv) the gradients too.
    ``sums``: the weight of a sum's rounding in κ (:attr:`derive.impl.exact.tolerance.Tolerance.sums`).
    ``judged`` (M,) bool: the queries computed (the others are left undefined; every one by default,
    and every one is needed for the gradients of k and v). ``norm`` (with its parameter values
    ``params``): a normalizer outside the softmax family, each row then a :func:`generic_row` (no
    extra logit, no lse, no gradients); a row it cannot enclose gets κ = ∞, so it is not judged. With
    ``weights``, the weights P (B, H, M, N) too (NaN on a row without a value). ``lse_units``: the
    convention of ``lse`` (natural, base2, kv-only: :class:`ExactRow`'s). ``start_q``: the position of the
    first query (a formula's i is the query's position plus 1)."""
    B, H, M, _ = q.shape
    Hkv, N, Dv = k.shape[1], k.shape[2], v.shape[3]
    groups = H // Hkv
    out = np.full((B, H, M, Dv), np.nan)
    out_scale = np.zeros((B, H, M, Dv))
    lse = np.full((B, H, M), -INF)
    defined = np.zeros((B, H, M), dtype=bool)
    kap = np.zeros((B, H, M))
    rows = np.full((B, H, M, N), -INF)
    per_row = isinstance(sigma, np.ndarray)
    P = np.full((B, H, M, N), np.nan) if weights else None
    undecided = np.zeros((B, H, M), dtype=bool)
    done: dict = {}  # (b, h, i) → ExactRow
    saved = ctx.prec
    ctx.prec = _prec(dps)
    try:
        sc = binary(scale)
        for b in range(B):
            vis = keep[b]
            add = None if bias is None else bias[b]
            for h in range(H):
                kv = h // groups
                vv = v[b, kv]
                vkey = digest(vv)
                fast = float_scores(q[b, h], k[b, kv], scale)
                dots = None
                sig = None if sigma is None or per_row else sigma[h]
                sigs = [sig] * M
                for i in range(M):
                    if judged is not None and not judged[i]:
                        continue
                    if per_row:
                        sig = sigs[i] = float(sigma[b, h, i])
                    biased = add is not None and bool(np.any((add[i] != 0) & vis[i]))
                    if fast is not None and not biased:
                        row = np.where(vis[i], fast[i], -INF)
                        key, xs = row_key(row), row.tolist()
                        rows[b, h, i] = row
                    else:
                        if dots is None:
                            dots, e = exact_dots(q[b, h], k[b, kv])
                        xs = [score(dots[i][j], e, sc, None if add is None else add[i, j]) if vis[i, j] else -INF
                              for j in range(N)]
                        key = b"arb" + hashlib.blake2b(repr((dots[i], e, sc, vis[i].tobytes(),
                                                             None if add is None else add[i].tobytes())).encode(),
                                                       digest_size=16).digest()
                        rows[b, h, i] = [x if isinstance(x, float) else _f(x) for x in xs]
                    if norm is None:
                        row = _row_of(key, xs, vv, vkey, sig, None if g is None else g[b, h, i], dps, weights)
                    else:
                        row = _generic_of(key, xs, vv, vkey, norm, params, dps, weights, start_q + i + 1)
                        if row.undecided:
                            undecided[b, h, i] = True
                    done[b, h, i] = row
                    lse[b, h, i] = row.lse[lse_units]
                    if row.defined:
                        defined[b, h, i] = True
                        out[b, h, i] = row.out
                        out_scale[b, h, i] = row.out_scale
                        if weights and row.w:
                            P[b, h, i] = row.w
                kap[b, h] = kappas(rows[b, h], [dict(params or {}) if norm is not None else {} if s in (None, -INF)
                                                 else {"sigma": s} for s in sigs], sums)
        kap[undecided] = INF
    finally:
        ctx.prec = saved
    res = Attention(out, out_scale, lse, defined, kap, rows, weights=P)
    if g is not None:
        res.grads = _grads(done, q, k, defined, scale, groups, Dv)
    return res


def _grads(done: dict, q, k, defined, scale: float, groups: int, Dv: int) -> dict:
    """The gradients of q, k, v and the sinks from the rows' own (``Dv``: v's head dimension, which a
    call whose every row is undefined, and so carries no cotangent, still has)."""
    B, H, M, _ = q.shape
    Hkv, N = k.shape[1], k.shape[2]
    dS = np.zeros((B, H, M, N))
    dSm = np.zeros((B, H, M, N))
    P = np.zeros((B, H, M, N))
    G = np.zeros((B, H, M, Dv))
    dsig = [[] for _ in range(H)]
    dsig_m = [[] for _ in range(H)]
    for (b, h, i), r in done.items():
        if not defined[b, h, i] or not N:
            continue
        dS[b, h, i], dSm[b, h, i] = r.dx, r.dx_scale
        P[b, h, i], G[b, h, i] = r.p, r.g
        dsig[h].append(r.ds)
        dsig_m[h].append(r.ds_scale)
    out = {"dq": (np.zeros(q.shape), np.zeros(q.shape)), "dk": (np.zeros(k.shape), np.zeros(k.shape)),
           "dv": (np.zeros(k.shape[:3] + (Dv,)), np.zeros(k.shape[:3] + (Dv,))), "dsinks": (np.zeros(H), np.zeros(H))}
    for b in range(B):
        for h in range(H):
            kv = h // groups
            out["dq"][0][b, h] = scale * dot(dS[b, h], k[b, kv])[0]
            out["dq"][1][b, h] = abs(scale) * dot(dSm[b, h], np.abs(k[b, kv]))[1]
        for kv in range(Hkv):
            heads = range(kv * groups, (kv + 1) * groups)
            # dk_j = scale Σ_{h in the group, i} dS_hij q_hi; dv_j = Σ_{h, i} P_hij g_hi
            S = np.concatenate([dS[b, h] for h in heads], axis=0)  # (groups·M, N)
            Sm = np.concatenate([dSm[b, h] for h in heads], axis=0)
            Q = np.concatenate([q[b, h] for h in heads], axis=0)
            W = np.concatenate([P[b, h] for h in heads], axis=0)
            Gs = np.concatenate([G[b, h] for h in heads], axis=0)
            out["dk"][0][b, kv] = scale * dot(S.T, Q)[0]
            out["dk"][1][b, kv] = abs(scale) * dot(Sm.T, np.abs(Q))[1]
            out["dv"][0][b, kv], out["dv"][1][b, kv] = dot(W.T, Gs)
    for h in range(H):
        out["dsinks"][0][h] = math.fsum(dsig[h])
        out["dsinks"][1][h] = math.fsum(dsig_m[h])
    return out


def ratio_row(norm, row, v, params: dict, dps: int) -> ExactRow:
    """out = Σ_t p_t v_t of a ratio of row sums, from the definition's exact weights (the
    normalizer's reference, correct to ``dps`` digits; a key of score −∞ is masked), and the
    magnitudes Σ_t |p_t v_tk|; no value where a weight has none (0/0 on a row with no key)."""
    import mpmath

    with mpmath.workdps(dps):
        p = norm.reference([float(a) for a in row], [a != -INF for a in row], **params)
        v = np.asarray(v, dtype=np.float64)
        dv = v.shape[1] if v.ndim == 2 else DV
        no_key = all(a == -INF for a in row)  # then out = 0 where the weights' formula has a value without keys
        formula = norm.definition_of
        if any(mpmath.isnan(w) for w in p) or (no_key and not (formula is not None and formula.defined_without_keys(
                **{k: mpmath.mpf(val) for k, val in params.items()}))):
            return ExactRow(False, [math.nan] * dv, [0.0] * dv, {c: math.nan for c in ("natural", "base2",
                                                                                        "kv-only")})
        out = [float(mpmath.fsum(w * float(v[t, k]) for t, w in enumerate(p))) for k in range(dv)]
        scale = [float(mpmath.fsum(abs(w * float(v[t, k])) for t, w in enumerate(p))) for k in range(dv)]
    return ExactRow(True, out, scale, {c: math.nan for c in ("natural", "base2", "kv-only")})
