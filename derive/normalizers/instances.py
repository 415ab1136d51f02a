"""Abstention decided by one instance: a parameter value and a row of k keys.

``can_abstain`` states that for every value of the parameters and every row, the scores can
make every weight tend to 0. One parameter value in the domain and one row length at which the
weights of the row sum to a nonzero constant for every score (proved: the row written out with
k keys, x_1 … x_k, reduces to a number) refute it: along any path the weights keep that sum, so
they cannot all tend to 0. So does a key whose weight is a nonzero constant. The values tried
are few and fixed: the entry's sample value, then 0, 1/2, 1, −1, 2, each kept only where the
parameter's declared domain allows it (a = 0 for a scalar of unknown sign; λ = 1/2 for a positive
one); the rows have 1, 2 or 3 keys, all allowed, the query at the last.

The other direction is proved, not found: when a second score row y exists and every weight is
exactly 0 with y = x (``softmax(x) − softmax(y)``), the scores make every weight 0 in every row.
"""

from __future__ import annotations

import sympy as sp

from derive.model.attention import M, i, n
from derive.model.reductions import RowExtremum
from derive.normalizers.algebra import X, assignments, weight
from derive.prove.memo import simplify

__all__ = ["abstention_by_bound", "abstention_by_instance", "abstention_rules", "explicit_row", "vanishes_with_equal_rows"]

KEYS = (1, 2, 3)


def explicit_row(W_of_key, k: int, xs, ys=None) -> list:
    """The weights of keys 1..k of a row of k allowed keys (the query at the last), every
    reduction written out: ``W_of_key(key)`` is the symbolic weight of ``key``."""
    from derive.normalizers.formula import Y

    out = []
    for key in range(1, k + 1):
        W = W_of_key(key).xreplace({n: sp.Integer(k), i: sp.Integer(k)})
        W = W.replace(lambda e: isinstance(e, (sp.Sum, sp.Product)), lambda e: e.doit())
        W = W.replace(lambda e: isinstance(e, RowExtremum), _written_out)
        put = {M[k, a]: sp.S.One for a in range(1, k + 1)} | {X[k, a]: xs[a - 1] for a in range(1, k + 1)}
        if ys is not None:
            put |= {Y[k, a]: ys[a - 1] for a in range(1, k + 1)}
        out.append(W.xreplace(put))
    return out


def _written_out(e: RowExtremum):
    body, var, lo, hi, skip = e.args
    if not (lo.is_Integer and hi.is_Integer and skip.is_Integer):
        return e
    terms = [body.xreplace({var: sp.Integer(t)}) for t in range(int(lo), int(hi) + 1) if t != int(skip)]
    if not terms:
        return e
    return (sp.Max if e.largest else sp.Min)(*terms, evaluate=False) if len(terms) > 1 else terms[0]


def abstention_by_instance(entry, params: dict) -> tuple[str, dict, int, sp.Expr] | None:
    """(why, parameter values, row length, the constant) of a refutation of can_abstain by one
    instance, or None."""
    uses_y = getattr(entry.definition_of, "score2", False)
    for k in KEYS:
        xs = sp.symbols(f"x1:{k + 1}", real=True)
        ys = sp.symbols(f"y1:{k + 1}", real=True) if uses_y else None
        for at in assignments(entry, params):
            ws = explicit_row(lambda key, _at=at: weight(entry, params, key=key).xreplace(_at), k, xs, ys)
            if any(w.has(sp.Sum, sp.Product, RowExtremum, X) for w in ws):
                continue
            where = ", ".join(f"{s} = {v}" for s, v in at.items())
            head = f"with {where}, " if where else ""
            mass = _constant(sp.Add(*ws))
            if mass is not None:
                return (f"{head}the weights of a row of {k} allowed key{'s' * (k > 1)} sum to {mass} for every "
                        "score (proved), so they cannot all tend to 0", at, k, mass)
            for key, w in enumerate(ws, 1):
                c = _constant(w)
                if c is not None:
                    return (f"{head}key {key} of a row of {k} allowed key{'s' * (k > 1)} has weight {c} for every "
                            "score (proved), so the weights cannot all tend to 0", at, k, c)
    return None


def _constant(e: sp.Expr):
    """``e`` as a nonzero number when it reduces to one whatever the scores, else None."""
    for rewrite in (lambda z: z, sp.cancel, simplify):
        try:
            r = rewrite(e)
        except (sp.PolynomialError, TypeError, ValueError):
            continue
        if not r.free_symbols:
            return r if r.is_nonzero else None
    return None


def vanishes_with_equal_rows(entry, params: dict) -> bool:
    """With a second score row y: is every weight exactly 0 when y = x (so the scores make every
    weight 0, in every row and for every parameter value)?"""
    from derive.model.attention import j
    from derive.normalizers.formula import Y

    if not getattr(entry.definition_of, "score2", False):
        return False
    W = weight(entry, params, key=j)
    same = W.replace(lambda e: isinstance(e, sp.Indexed) and e.base == Y, lambda e: X[e.indices])
    try:
        return simplify(same) == 0
    except (TypeError, ValueError):
        return False


def abstention_by_bound(entry, params: dict) -> bool:
    """Is each weight a function F(x_j) of its own score times products over the row whose factors
    lie in [0, 1] (stick-breaking: σ(x_j)·Π_{t>j}(1 − σ(x_t))), with F(x_j) → 0 as x_j → −∞? Then
    |p_j| ≤ |F(x_j)|, and every weight tends to 0 as all scores → −∞ together."""
    from derive.model.attention import j
    from derive.normalizers.limits import limit_of

    W = weight(entry, params, key=j)
    rest = []
    for a in sp.Mul.make_args(W):
        if a == M[i, j]:
            continue
        if isinstance(a, sp.Product):
            var = a.limits[0][0]
            real = {x: sp.Dummy("x", real=True) for x in a.function.atoms(sp.Indexed) if x.base == X}
            for m in (sp.S.Zero, sp.S.One):  # the mask factor M[i, t] of each term is 0 or 1
                b = simplify(a.function.xreplace({M[i, var]: m}).xreplace(real))
                if not (b.is_nonnegative and simplify(1 - b).is_nonnegative):
                    return False
            continue
        rest.append(a)
    F = sp.Mul(*rest)
    if F.has(sp.Sum, sp.Product, RowExtremum, M) or F.atoms(sp.Indexed) - {X[i, j]}:
        return False
    y = sp.Symbol("y", real=True)
    return limit_of(F.xreplace({X[i, j]: y}), y, -sp.oo) == 0


def abstention_rules(entry, params: dict, der) -> bool:
    """The rules of this module for ``can_abstain``, in order; sets ``der``'s verdict and value and
    returns True when one decides (a refutation by an instance records it as ``der.instance``)."""
    from derive.normalizers.algebra import SIDES
    from derive.prove.verdict import PROVED, REFUTED, Verdict

    if abstention_by_bound(entry, params):
        der.verdict = Verdict(PROVED, "each weight is a function of its own score that tends to 0 as it → −∞, times "
                                      "products of factors in [0, 1], so every weight tends to 0 as all scores → −∞",
                              method="bound by the own score's factor, limit")
        der.value = "yes"
        return True
    if vanishes_with_equal_rows(entry, params):
        der.verdict = Verdict(PROVED, "with the second row of scores equal to the first every weight is exactly 0, in "
                                      "every row and for every parameter value", method="second row equal to the first")
        der.value = "yes"
        return True
    found = abstention_by_instance(entry, params)
    if found is None:
        return False
    why, at, k, value = found
    w = {"instance": {"d": 1, "n": k, "M": [[1] * k] * k, "x": [[0] * k] * k}, "indices": {"i": k},
         "lhs": float(value), "rhs": 0.0, "compared": [SIDES["can_abstain_instance"][0], SIDES["can_abstain"][1]],
         "parameters_at": {str(s): str(v) for s, v in at.items()}}
    der.verdict = Verdict(REFUTED, why, method="one instance, proved identity", witness=w)
    der.value, der.instance = "no", (at, k)
    return True


def instance_defined(entry, params: dict, at: dict, k: int) -> bool:
    """Has the weight as written a value on a row of k allowed keys with scores 0, at the parameter
    values ``at`` (symbol → value)?"""
    import mpmath

    from derive.normalizers.exact import Undecided

    f = entry.definition_of
    if f is None:
        return False
    values = {p: (v.xreplace(at) if isinstance(v, sp.Basic) else v) for p, v in params.items()}
    if any(isinstance(v, sp.Basic) and v.free_symbols for v in values.values()):
        return False
    try:
        with mpmath.workdps(30):
            got = f.reference([mpmath.mpf(0)] * k, **{p: mpmath.mpf(sp.Rational(v)) for p, v in values.items()})
    except (Undecided, ZeroDivisionError, ValueError, TypeError):
        return False
    return not any(mpmath.isnan(w) or mpmath.isinf(w) for w in got)


